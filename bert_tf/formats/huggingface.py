"""HuggingFace BERT directories: tensor names both ways, reading `model.safetensors`, writing a directory that
`transformers` loads with `from_pretrained` (config.json, model.safetensors, the tokenizer's files).

    source = read_huggingface(["dir/model.safetensors"], "dir")
    write_huggingface(weights, config, "classifier", "out/", vocab_file, labels=["neg", "pos"])

Names: `encoder.layer.3.attention.self.query.weight` (a `BertModel`'s; the task classes prefix `bert.`) is
`bert/encoder/layer_3/attention/self/query/kernel`; PyTorch Linear weights are [out, in], Google kernels
[in, out]. Nothing is ever pickled or unpickled.
"""

import json
import os
import re

import numpy as np

from bert_tf import atomic_io, model_types
from bert_tf.checkpoint_names import NEXT_SENTENCE_SCOPE, OUTPUT_BIAS, OUTPUT_WEIGHTS, SQUAD_SCOPE
from bert_tf.checkpoint_paths import checkpoint_folder
from bert_tf.formats.source import CheckpointSource

HUGGINGFACE = "huggingface"
# Names that are not a path rewrite of the canonical name (the pretraining and task heads).
_NAMED = {
    "cls.predictions.bias": "cls/predictions/output_bias",
    "cls.seq_relationship.weight": "cls/seq_relationship/output_weights",
    "cls.seq_relationship.bias": "cls/seq_relationship/output_bias",
    "classifier.weight": OUTPUT_WEIGHTS,
    "classifier.bias": OUTPUT_BIAS,
    "qa_outputs.weight": SQUAD_SCOPE + OUTPUT_WEIGHTS,
    "qa_outputs.bias": SQUAD_SCOPE + OUTPUT_BIAS,
}
_CANONICAL_TO_NAMED = {canonical: name for name, canonical in _NAMED.items()}
_IGNORED = {
    "embeddings.position_ids": "buffer (position ids), not a weight",
    "cls.predictions.decoder.weight": "tied to bert/embeddings/word_embeddings",
    "cls.predictions.decoder.bias": "same tensor as cls.predictions.bias",
}
# Each model type's transformers class is in the registry (`model_types.ModelType.huggingface_class`); a
# pretrainer is written as one of these two instead when it has no next-sentence head or is left-to-right.
MASKED_LM_CLASS = ("BertForMaskedLM", False, "bert.")  # a pretrainer without the next-sentence head
CAUSAL_LM_CLASS = ("BertLMHeadModel", False, "bert.")  # a left-to-right (causal_attention) pretrainer
# transformers' names of the activations that BertConfig.hidden_act names differently.
_HF_ACTIVATIONS = {"gelu_tanh": "gelu_new"}
_SPECIAL_TOKENS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                   "mask_token": "[MASK]"}


def hf_to_canonical(name):
    """Maps a HF BERT tensor name to (canonical name, transpose?) or (None, reason) when it is skipped.

    `encoder.layer.3.attention.self.query.weight` -> (`bert/encoder/layer_3/attention/self/query/kernel`,
    True): PyTorch Linear weights are [out, in], Google kernels [in, out]. The task heads map to the names
    of bert_tf's heads (`classifier.weight` -> `output_weights`, `qa_outputs.*` -> `cls/squad/output_*`,
    both [out, in] already); other names outside BERT keep their HF name.
    """
    stripped = name[len("bert."):] if name.startswith("bert.") else name
    if stripped in _IGNORED:
        return None, _IGNORED[stripped]
    if stripped in _NAMED:
        return _NAMED[stripped], False
    parts = stripped.split(".")
    if parts[0] not in ("embeddings", "encoder", "pooler", "cls"):
        return name, False
    scope = "cls" if parts[0] == "cls" else "bert"
    path = "/".join(parts if scope == "cls" else [scope] + parts)
    path = re.sub(r"/layer/(\d+)/", r"/layer_\1/", path)
    leaf = parts[-1]
    in_layer_norm = len(parts) > 1 and parts[-2] == "LayerNorm"
    if in_layer_norm:
        path = path[: -len(leaf)] + {"weight": "gamma", "bias": "beta", "gamma": "gamma", "beta": "beta"}[leaf]
        return path, False
    if parts[0] == "embeddings" and leaf == "weight":
        return path[: -len("/weight")], False
    if leaf == "weight":
        return path[: -len("weight")] + "kernel", True
    return path, False


def canonical_to_hf(name, prefix="bert."):
    """The HF tensor name of canonical `name` and whether its array is transposed: the inverse of
    `hf_to_canonical`. `prefix` goes before the encoder's names ("" for a `BertModel`)."""
    if name in _CANONICAL_TO_NAMED:
        return _CANONICAL_TO_NAMED[name], False
    parts = name.split("/")
    if parts[0] not in ("bert", "cls"):
        raise ValueError(f"{name}: no HuggingFace BERT name for this variable")
    path = ".".join(parts[1:] if parts[0] == "bert" else parts)
    path = re.sub(r"\blayer_(\d+)\.", r"layer.\1.", path)
    leaf, transpose = parts[-1], False
    if len(parts) > 1 and parts[-2] == "LayerNorm":
        path = path[: -len(leaf)] + {"gamma": "weight", "beta": "bias"}[leaf]
    elif parts[1:2] == ["embeddings"] and len(parts) == 3:
        path += ".weight"
    elif leaf == "kernel":
        path, transpose = path[: -len("kernel")] + "weight", True
    return (prefix + path if parts[0] == "bert" else path), transpose


def safetensors_files(path):
    """The safetensors files of a HF directory or file path, or None if `path` is not one."""
    if os.path.isfile(path) and path.endswith(".safetensors"):
        return [path]
    if os.path.isdir(path):
        index = os.path.join(path, "model.safetensors.index.json")
        if os.path.isfile(index):
            with open(index, encoding="utf-8") as f:
                shards = sorted(set(json.load(f)["weight_map"].values()))
            return [os.path.join(path, s) for s in shards]
        single = os.path.join(path, "model.safetensors")
        if os.path.isfile(single):
            return [single]
    return None


def _labels(config):
    """The label names of a HF config's `id2label`, in id order, or None."""
    id2label = (config or {}).get("id2label")
    if not id2label:
        return None
    return [id2label[key] for key in sorted(id2label, key=int)]


def model_type_of(config):
    """The model type whose class a HF config's `architectures` names, or None."""
    architectures = (config or {}).get("architectures") or []
    for name in architectures:
        if name in (MASKED_LM_CLASS[0], CAUSAL_LM_CLASS[0]):
            return model_types.PRETRAINER
        if model_types.of_huggingface_class(name):
            return model_types.of_huggingface_class(name)
    return None


def read_huggingface(files, path):
    """A CheckpointSource of the safetensors `files` of the HF model at `path` (its directory or file), with
    the config.json beside them (and the labels of its id2label) when there is one."""
    from safetensors import safe_open  # imported here: only HF imports need it

    shapes, locations, ignored = {}, {}, {}
    for file in files:
        try:
            handle = safe_open(file, framework="np")
            keys = list(handle.keys())
        except Exception as e:  # safetensors raises its own error types for corrupt headers
            raise ValueError(f"{file}: not a valid safetensors file ({e})") from None
        for key in keys:
            canonical, transpose = hf_to_canonical(key)
            if canonical is None:
                ignored[key] = transpose
                continue
            shape = tuple(handle.get_slice(key).get_shape())
            shapes[canonical] = shape[::-1] if transpose else shape
            locations[canonical] = (file, handle, key, transpose)

    def read(name):
        file, handle, key, transpose = locations[name]
        if handle.get_slice(key).get_dtype() == "BF16":  # NumPy has no bfloat16: safetensors' numpy reader refuses it
            value = _bfloat16_tensor(file, key)
        else:
            value = handle.get_tensor(key)
        return np.ascontiguousarray(value.T) if transpose else value

    config = None
    config_file = os.path.join(checkpoint_folder(path), "config.json")
    if os.path.isfile(config_file):
        with open(config_file, encoding="utf-8") as f:
            config = json.load(f)
    return CheckpointSource(path, HUGGINGFACE, shapes, read, ignored, config, _labels(config))


def _bfloat16_tensor(file, key):
    """The bfloat16 tensor `key` of the safetensors `file` as float32 (exact: every bfloat16 is a float32), read
    from the file's layout: an 8-byte little-endian header length, the JSON header ({key: {"dtype", "shape",
    "data_offsets": [begin, end]}}, offsets from the end of the header), the data."""
    import ml_dtypes  # Keras's dependency: NumPy's bfloat16

    with open(file, "rb") as f:
        header_length = int.from_bytes(f.read(8), "little")
        entry = json.loads(f.read(header_length))[key]
        begin, end = entry["data_offsets"]
        f.seek(8 + header_length + begin)
        data = f.read(end - begin)
    return np.frombuffer(data, ml_dtypes.bfloat16).reshape(entry["shape"]).astype(np.float32)


def _hf_config(config, hf_class, labels, num_outputs):
    """The config.json of a transformers BERT model: the BertConfig's fields (HF's names), the class, and the
    labels of a classification head."""
    values = config.to_dict()
    values["hidden_act"] = _HF_ACTIVATIONS.get(values["hidden_act"], values["hidden_act"])
    if values.pop("causal_attention", False):
        values["is_decoder"] = True  # transformers' causal self-attention
    values.update(architectures=[hf_class], model_type="bert", pad_token_id=0, position_embedding_type="absolute",
                  dtype="float32")
    if hf_class in ("BertForSequenceClassification", "BertForTokenClassification"):
        names = labels or [f"LABEL_{i}" for i in range(num_outputs)]
        values.update(num_labels=num_outputs, id2label={str(i): name for i, name in enumerate(names)},
                      label2id={name: i for i, name in enumerate(names)})
        if hf_class == "BertForSequenceClassification" and num_outputs == 1 and not labels:
            values["problem_type"] = "regression"
    return values


def write_huggingface(weights, config, model_type, directory, vocab_file, labels=None, do_lower_case=True):
    """Writes the HF directory of a `model_type` model into the existing empty folder `directory`.

    weights: {canonical name: array} (Google layouts). config: the BertConfig. vocab_file: its vocab.txt.
    labels: label names in id order for a classifier / NER head (one per output), or None.
    Files: config.json, model.safetensors (float32, HF names and [out, in] layouts), vocab.txt,
    tokenizer_config.json, special_tokens_map.json. Returns the transformers class name.
    """
    from safetensors.numpy import save  # imported here: only HF exports need it

    hf_class, pooler, prefix = model_types.get(model_type).huggingface_class
    if model_type == model_types.PRETRAINER and config.causal_attention:
        hf_class, pooler, prefix = CAUSAL_LM_CLASS
    elif model_type == model_types.PRETRAINER and NEXT_SENTENCE_SCOPE + OUTPUT_WEIGHTS not in weights:
        hf_class, pooler, prefix = MASKED_LM_CLASS
    names = model_types.model_names(model_type, weights, pooler)
    num_outputs = int(np.shape(weights[OUTPUT_WEIGHTS])[0]) if OUTPUT_WEIGHTS in names else None
    tensors = {}
    for name in names:
        hf_name, transpose = canonical_to_hf(name, prefix)
        value = np.asarray(weights[name], np.float32)
        tensors[hf_name] = np.ascontiguousarray(value.T if transpose else value)
    values = _hf_config(config, hf_class, labels, num_outputs)
    tokenizer = {"tokenizer_class": "BertTokenizer", "do_lower_case": do_lower_case, "strip_accents": None,
                 "tokenize_chinese_chars": True, "model_max_length": config.max_position_embeddings,
                 **_SPECIAL_TOKENS}
    with open(vocab_file, "rb") as f:
        vocab = f.read()
    for name, content in (("model.safetensors", save(tensors, metadata={"format": "pt"})),
                          ("config.json", json.dumps(values, indent=2, sort_keys=True) + "\n"),
                          ("vocab.txt", vocab),
                          ("tokenizer_config.json", json.dumps(tokenizer, indent=2, sort_keys=True) + "\n"),
                          ("special_tokens_map.json", json.dumps(_SPECIAL_TOKENS, indent=2, sort_keys=True) + "\n")):
        atomic_io.write_file(os.path.join(directory, name), content)
    return hf_class
