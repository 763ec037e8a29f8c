"""KerasHub presets of BERT: reading a `BertBackbone` (and a `BertTextClassifier`'s head) into canonical names,
writing a preset directory that `keras_hub.models.BertBackbone.from_preset(dir)` (and
`BertTextClassifier.from_preset(dir)`) loads. keras_hub itself is never imported: the weights files are
Keras 3 `.weights.h5` files, read and written with h5py, in the layout KerasHub 0.32 saves.

    source = read_preset("minilm_preset/")
    write_preset(weights, config, "classifier", "out/", vocab_file, do_lower_case=True, sequence_length=128)

GELU: KerasHub's BertBackbone always computes the tanh approximation of GELU (`gelu_approximate`), while
Google's and HF's BERT use the exact erf form. A preset read here gets `hidden_act="gelu_tanh"`, so bert_tf
computes what KerasHub computed (pass a --bert_config_file with "gelu" to use the exact form); a bert_tf model
written as a preset is computed with the tanh form by KerasHub (the writer logs the difference).
"""

import datetime
import json
import os

import numpy as np
from absl import logging

from bert_tf import atomic_io, model_types
from bert_tf.checkpoint_names import ENCODER_SCOPE, OUTPUT_BIAS, OUTPUT_WEIGHTS
from bert_tf.config import BertConfig
from bert_tf.formats.source import CheckpointSource, read_json

KERAS_HUB = "keras_hub"
PRESET = "KerasHub preset"
CONFIG_FILE, METADATA_FILE, WEIGHTS_FILE = "config.json", "metadata.json", "model.weights.h5"
TASK_FILE, TASK_WEIGHTS_FILE, PREPROCESSOR_FILE = "task.json", "task.weights.h5", "preprocessor.json"
TOKENIZER_FILE, VOCABULARY_FILE = "tokenizer.json", os.path.join("assets", "tokenizer", "vocabulary.txt")
# The registered names of the two KerasHub classes bert_tf reads and writes (the registry's keras_hub_task).
BACKBONE, CLASSIFIER = (f"keras_hub>{model_types.get(name).keras_hub_task}"
                        for name in (model_types.ENCODER, model_types.CLASSIFIER))
KERAS_HUB_VERSION = "0.32.0"  # the KerasHub whose preset layout this module writes (and is tested against)
LAYER_NORM_EPS = 1e-12  # KerasHub's BertBackbone hard-codes it
_CLASSIFIER_KERNEL, _CLASSIFIER_BIAS = "layers/dense/vars/0", "layers/dense/vars/1"

# Embeddings and pooler: h5 dataset path -> canonical name (same layout, [in, out] kernels).
_BACKBONE_TOP = {
    "layers/reversible_embedding/vars/0": "bert/embeddings/word_embeddings",
    "layers/position_embedding/vars/0": "bert/embeddings/position_embeddings",
    "layers/embedding/vars/0": "bert/embeddings/token_type_embeddings",
    "layers/layer_normalization/vars/0": "bert/embeddings/LayerNorm/gamma",
    "layers/layer_normalization/vars/1": "bert/embeddings/LayerNorm/beta",
    "layers/dense/vars/0": "bert/pooler/dense/kernel",
    "layers/dense/vars/1": "bert/pooler/dense/bias",
}
# One transformer layer: path under its `layers/transformer_encoder[_i]` -> (name under
# `bert/encoder/layer_i/`, whether KerasHub splits the [H, H] kernel or [H] bias by attention head).
_LAYER = {
    "_self_attention_layer/query_dense/vars/0": ("attention/self/query/kernel", "in_heads"),
    "_self_attention_layer/query_dense/vars/1": ("attention/self/query/bias", "heads"),
    "_self_attention_layer/key_dense/vars/0": ("attention/self/key/kernel", "in_heads"),
    "_self_attention_layer/key_dense/vars/1": ("attention/self/key/bias", "heads"),
    "_self_attention_layer/value_dense/vars/0": ("attention/self/value/kernel", "in_heads"),
    "_self_attention_layer/value_dense/vars/1": ("attention/self/value/bias", "heads"),
    "_self_attention_layer/output_dense/vars/0": ("attention/output/dense/kernel", "heads_out"),
    "_self_attention_layer/output_dense/vars/1": ("attention/output/dense/bias", None),
    "_self_attention_layer_norm/vars/0": ("attention/output/LayerNorm/gamma", None),
    "_self_attention_layer_norm/vars/1": ("attention/output/LayerNorm/beta", None),
    "_feedforward_intermediate_dense/vars/0": ("intermediate/dense/kernel", None),
    "_feedforward_intermediate_dense/vars/1": ("intermediate/dense/bias", None),
    "_feedforward_output_dense/vars/0": ("output/dense/kernel", None),
    "_feedforward_output_dense/vars/1": ("output/dense/bias", None),
    "_feedforward_layer_norm/vars/0": ("output/LayerNorm/gamma", None),
    "_feedforward_layer_norm/vars/1": ("output/LayerNorm/beta", None),
}


def _layout(num_layers, heads):
    """{h5 dataset path: (canonical name, KerasHub shape of a [H, H] kernel / [H] bias or None)} of a backbone
    with `num_layers` layers and `heads` attention heads (per-head shapes are filled in by _keras_shape)."""
    layout = {path: (name, None) for path, name in _BACKBONE_TOP.items()}
    for i in range(num_layers):
        layer = "layers/transformer_encoder" + (f"_{i}" if i else "")
        for path, (name, split) in _LAYER.items():
            layout[f"{layer}/{path}"] = (f"bert/encoder/layer_{i}/{name}", split)
    return layout


def _canonical_shape(shape, split):
    """The canonical shape of a KerasHub array of `shape` (the inverse of _keras_shape; "transpose": a
    Keras Dense kernel [H, C] read as an output head [C, H])."""
    if split == "transpose":
        return tuple(shape[::-1])
    if split == "in_heads":
        return (shape[0], shape[1] * shape[2])
    if split == "heads":
        return (shape[0] * shape[1],)
    if split == "heads_out":
        return (shape[0] * shape[1], shape[2])
    return tuple(shape)


def _keras_shape(shape, split, heads):
    """The KerasHub shape of a canonical array of `shape` ([H, H] or [H]) split by `split` over `heads`."""
    if split == "in_heads":
        return (shape[0], heads, shape[1] // heads)
    if split == "heads":
        return (heads, shape[0] // heads)
    if split == "heads_out":
        return (heads, shape[0] // heads, shape[1])
    return tuple(shape)


def is_preset(path):
    """Whether `path` is a folder whose config.json was written by KerasHub (any architecture)."""
    config = os.path.join(path, CONFIG_FILE)
    if not (os.path.isdir(path) and os.path.isfile(config)):
        return False
    try:
        with open(config, encoding="utf-8") as f:
            values = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(values, dict) and str(values.get("registered_name", "")).startswith("keras_hub>")


def _open_h5(path):
    import h5py  # Keras' own dependency; imported here: only KerasHub presets need it

    if not os.path.isfile(path):
        raise ValueError(f"{path}: missing from the KerasHub preset (its weights)")
    try:
        return h5py.File(path, "r")
    except OSError as e:
        raise ValueError(f"{path}: not a readable Keras weights file ({e}); a truncated or damaged preset") from None


def read_preset(path):
    """A CheckpointSource of the KerasHub BertBackbone preset folder `path` (and of its BertTextClassifier head,
    `output_weights` / `output_bias`, when the preset has task.json). ValueError naming the file when it is
    another architecture, a file is missing, or a weights file is damaged."""
    config_file = os.path.join(path, CONFIG_FILE)
    config = BertConfig.from_dict(read_json(config_file, PRESET), config_file).to_dict()
    heads = config["num_attention_heads"]
    layout = _layout(config["num_hidden_layers"], heads)
    weights_file = os.path.join(path, WEIGHTS_FILE)
    backbone = _open_h5(weights_file)
    locations = {name: (backbone, weights_file, h5_path, split) for h5_path, (name, split) in layout.items()}
    task_file = os.path.join(path, TASK_FILE)
    if os.path.isfile(task_file):
        task = read_json(task_file, PRESET)
        if task.get("registered_name") != CLASSIFIER:
            raise ValueError(f"{task_file}: a KerasHub {task.get('registered_name')} task; bert_tf reads the "
                             "BertBackbone and a BertTextClassifier's head (delete task.json to read the backbone)")
        task_weights_file = os.path.join(path, TASK_WEIGHTS_FILE)
        task_weights = _open_h5(task_weights_file)
        locations[OUTPUT_WEIGHTS] = (task_weights, task_weights_file, _CLASSIFIER_KERNEL, "transpose")
        locations[OUTPUT_BIAS] = (task_weights, task_weights_file, _CLASSIFIER_BIAS, None)
    shapes = {}
    for name, (h5, file, h5_path, split) in locations.items():
        if h5_path not in h5:
            raise ValueError(f"{file}: no {h5_path} ({name}); a truncated preset, or not a BertBackbone's")
        shapes[name] = _canonical_shape(h5[h5_path].shape, split)

    def read(name):
        h5, file, h5_path, split = locations[name]
        try:
            value = np.asarray(h5[h5_path][()])
        except (OSError, KeyError) as e:
            raise ValueError(f"{file}: cannot read {h5_path} ({e}); a truncated or damaged preset") from None
        return np.ascontiguousarray(value.T) if split == "transpose" else value.reshape(shapes[name])

    logging.info("%s: KerasHub preset read with hidden_act=gelu_tanh (KerasHub's BertBackbone computes the tanh "
                 "approximation of GELU)", path)
    return CheckpointSource(path, KERAS_HUB, shapes, read, {}, config)  # labels.txt: open_checkpoint reads it


def _keras_object(module, class_name, config):
    return {"module": f"keras_hub.src.models.bert.{module}", "class_name": class_name, "config": config,
            "registered_name": f"keras_hub>{class_name}"}


def _dtype(name):
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": name}, "registered_name": None}


def _backbone_config(config):
    return _keras_object("bert_backbone", "BertBackbone", {
        "name": "bert_backbone", "trainable": True, "dtype": _dtype("float32"),
        "vocabulary_size": config.vocab_size, "num_layers": config.num_hidden_layers,
        "num_heads": config.num_attention_heads, "hidden_dim": config.hidden_size,
        "intermediate_dim": config.intermediate_size, "dropout": config.hidden_dropout_prob,
        "max_sequence_length": config.max_position_embeddings, "num_segments": config.type_vocab_size})


def _tokenizer_config(do_lower_case):
    return _keras_object("bert_tokenizer", "BertTokenizer", {
        "name": "bert_tokenizer", "trainable": True, "dtype": _dtype("int32"), "config_file": TOKENIZER_FILE,
        "vocabulary": None, "sequence_length": None, "lowercase": do_lower_case, "strip_accents": do_lower_case,
        "split": True, "suffix_indicator": "##", "oov_token": "[UNK]", "special_tokens": None,
        "special_tokens_in_strings": False})


def _check_representable(config):
    """ValueError for configs that a KerasHub BertBackbone cannot compute; a log line for the GELU form."""
    if config.layer_norm_eps != LAYER_NORM_EPS:
        raise ValueError(f"layer_norm_eps={config.layer_norm_eps}: KerasHub's BertBackbone fixes it at "
                         f"{LAYER_NORM_EPS}; this model has no KerasHub equivalent")
    if config.causal_attention:
        raise ValueError("causal_attention: KerasHub's BertBackbone attends in both directions; this left-to-right "
                         "model has no KerasHub equivalent")
    if config.hidden_act not in ("gelu", "gelu_new", "gelu_tanh"):
        raise ValueError(f"hidden_act={config.hidden_act}: KerasHub's BertBackbone always uses GELU (tanh "
                         "approximation); this model has no KerasHub equivalent")
    if config.hidden_act == "gelu":
        logging.warning("This model uses the exact (erf) GELU; KerasHub's BertBackbone computes the tanh "
                        "approximation, so its outputs differ slightly from bert_tf's (docs/interop.md)")


def _write_h5(path, datasets):
    """A Keras 3 .weights.h5 file at `path` with {dataset path: array}, written atomically."""
    import h5py

    tmp = atomic_io.temporary_path(path)
    try:
        with h5py.File(tmp, "w") as h5:
            for name, value in datasets.items():
                h5.create_dataset(name, data=value)
        atomic_io.publish([tmp], [path])
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_preset(weights, config, model_type, directory, vocab_file, do_lower_case=True):
    """Writes a KerasHub preset of a `model_type` model ("encoder": a BertBackbone; "classifier": a
    BertTextClassifier, its preprocessor of max_position_embeddings tokens) into the existing empty folder `directory`.

    weights: {canonical name: array} (Google layouts). config: the BertConfig. vocab_file: its vocab.txt.
    KerasHub keeps no label names: the caller writes a classifier's labels.txt beside (conversion.py). ValueError
    for the other model types and for configs a BertBackbone cannot compute. Returns the KerasHub class name.
    """
    class_name = model_types.get(model_type).keras_hub_task
    if class_name is None:
        raise ValueError(f"KerasHub has no {model_type} task for BERT (only BertBackbone and BertTextClassifier): "
                         "pass model_type=encoder to write the encoder alone")
    _check_representable(config)
    names = model_types.model_names(model_type, weights)
    heads = config.num_attention_heads
    datasets = {}
    for h5_path, (name, split) in _layout(config.num_hidden_layers, heads).items():
        value = np.asarray(weights[name], np.float32)
        datasets[h5_path] = value.reshape(_keras_shape(value.shape, split, heads))
    now = datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")
    count = sum(int(np.prod(np.shape(weights[n]))) for n in names if n.startswith(ENCODER_SCOPE))
    metadata = {"keras_version": _keras_version(), "keras_hub_version": KERAS_HUB_VERSION, "parameter_count": count,
                "date_saved": now, "tasks": ["MaskedLM", "TextClassifier", "TextEmbedder"]}
    files = {CONFIG_FILE: _backbone_config(config), METADATA_FILE: metadata,
             TOKENIZER_FILE: _tokenizer_config(do_lower_case)}
    if model_type == model_types.CLASSIFIER:
        num_classes = int(np.shape(weights[OUTPUT_WEIGHTS])[0])
        preprocessor = _keras_object("bert_text_classifier_preprocessor", "BertTextClassifierPreprocessor", {
            "name": "bert_text_classifier_preprocessor", "trainable": True, "dtype": _dtype("float32"),
            "tokenizer": _tokenizer_config(do_lower_case), "config_file": PREPROCESSOR_FILE,
            "sequence_length": config.max_position_embeddings, "truncate": "round_robin"})
        files[PREPROCESSOR_FILE] = preprocessor
        files[TASK_FILE] = _keras_object("bert_text_classifier", "BertTextClassifier", {
            "backbone": files[CONFIG_FILE], "preprocessor": preprocessor, "name": "bert_text_classifier",
            "num_classes": num_classes, "activation": "linear", "dropout": config.hidden_dropout_prob})
        _write_h5(os.path.join(directory, TASK_WEIGHTS_FILE), {
            _CLASSIFIER_KERNEL: np.ascontiguousarray(np.asarray(weights[OUTPUT_WEIGHTS], np.float32).T),
            _CLASSIFIER_BIAS: np.asarray(weights[OUTPUT_BIAS], np.float32)})
    _write_h5(os.path.join(directory, WEIGHTS_FILE), datasets)
    for name, values in files.items():
        atomic_io.write_file(os.path.join(directory, name), json.dumps(values, indent=4) + "\n")
    os.makedirs(os.path.dirname(os.path.join(directory, VOCABULARY_FILE)))
    with open(vocab_file, "rb") as f:
        atomic_io.write_file(os.path.join(directory, VOCABULARY_FILE), f.read())
    return class_name


def _keras_version():
    import keras

    return keras.__version__
