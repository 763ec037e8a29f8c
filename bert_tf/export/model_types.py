"""The model types that export_model.py exports: which Keras model and serving adapter each one is, its head
size read from the checkpoint, and the check that every weight it serves was loaded.

    model, adapter = build_model("classifier", config, "/tmp/mrpc_output", label_list=["0", "1"])
    export_serving(adapter, vocab_file, True, 128, "/models/mrpc")
"""

import contextlib
import os
import time

import keras
from absl import logging

from bert_tf import run_directory
from bert_tf.checkpoints import load_checkpoint, open_checkpoint
from bert_tf.config import BertConfig
from bert_tf.export import serving, task_adapters
from bert_tf.formats import sentence_transformers
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.layers.dense import BertDense
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder
from bert_tf.modeling.tasks.feature_tagger import BertFeatureTagger
from bert_tf.modeling.tasks.pretrainer import BertPretrainer, pretraining_objective
from bert_tf.modeling.tasks.span_labeler import HEAD_SCOPE as SQUAD_HEAD_SCOPE
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.modeling.tasks.task_model import BILSTM_SCOPE
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier

MODEL_TYPES = ("encoder", "classifier", "squad", "ner", "pretrainer", "embedder")
# The options that only some model types read (export_model.py refuses them for the others).
TASK_OPTIONS = {"label_list": ("classifier", "ner"), "max_answer_length": ("squad",), "pooling": ("embedder",),
                "normalize": ("embedder",)}
# The dtypes the exported variables can be stored in (--export_dtype); LayerNorm stays float32 in both.
EXPORT_DTYPES = ("float32", "bfloat16")
QUANTIZATION_MODES = ("int8",)

_NEXT_SENTENCE = "cls/seq_relationship/output_weights"
_POOLER = ("bert/pooler/",)
_HEAD_SCOPES = {"classifier": "", "ner": "", "squad": SQUAD_HEAD_SCOPE}


def head_size(source, model_type):
    """The number of outputs of the fine-tuned head of `model_type` in the opened checkpoint `source` (its
    linear head, or the head its embedded `head` options describe)."""
    name = _HEAD_SCOPES[model_type] + (BILSTM_SCOPE if source.head else "") + "output_weights"
    if name not in source.shapes:
        raise ValueError(f"{source.path} has no {name}: not a fine-tuned {model_type} checkpoint (pass a "
                         "fine-tuning --output_dir or one of its model.ckpt-N as --init_checkpoint)")
    return source.shapes[name][0]


def _task_adapter(option, adapter_class, model, value):
    """adapter_class(model, value); its ValueError (a bad label list / max_answer_length) names the option."""
    try:
        return adapter_class(model, value)
    except ValueError as e:
        raise ValueError(f"--{option}: {e}") from None


@contextlib.contextmanager
def _dtype_policy(name):
    """Keras' global dtype policy is `name` inside the block (layers take it when they are created)."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def quantize_int8(model):
    """Quantizes the kernel of every `BertDense` of `model` to int8 (per-output-channel scales, weight-only:
    `BertDense.quantize`); the embedding tables, LayerNorms and task output layers keep their dtype.
    Returns the number of layers quantized."""
    layers = [layer for layer in model._flatten_layers() if isinstance(layer, BertDense)]
    for layer in layers:
        layer.quantize("int8")
    return len(layers)


def build_model(model_type, config, checkpoint, label_list=None, max_answer_length=30, dtype="float32",
                quantize=None, embedder_options=None):
    """The Keras model and its serving adapter for `model_type` (one of MODEL_TYPES), with every weight
    loaded from `checkpoint` (any --init_checkpoint format).

    label_list: the label names (classifier, ner; None for a regression classifier).
    max_answer_length: squad's longest answer span, in word pieces.
    dtype: one of EXPORT_DTYPES, the dtype the variables are stored and the matmuls computed in ("bfloat16":
      Keras' `bfloat16` policy; LayerNorm, the embedding sum, softmax and the outputs stay float32, as under
      mixed precision in training).
    quantize: None, or "int8": every BertDense kernel stored as int8 with per-output-channel scales
      (`quantize_int8`), dequantized to `dtype` when called.
    embedder_options: the embedder's {"pooling", "normalize"} (`formats.sentence_transformers.embedder_options`;
      default `sentence_transformers.DEFAULTS`: mean, not normalized).
    ValueError when the checkpoint lacks a variable that the outputs read: an export never serves randomly
    initialised weights. Logs the time it took.
    """
    if model_type not in MODEL_TYPES:
        raise ValueError(f"model type {model_type!r}: expected one of {', '.join(MODEL_TYPES)}")
    if dtype not in EXPORT_DTYPES:
        raise ValueError(f"dtype {dtype!r}: expected one of {', '.join(EXPORT_DTYPES)}")
    if quantize not in (None, *QUANTIZATION_MODES):
        raise ValueError(f"quantize {quantize!r}: expected None or one of {', '.join(QUANTIZATION_MODES)}")
    started = time.monotonic()
    with _dtype_policy(dtype):
        model, adapter = _build(model_type, config, checkpoint, label_list, max_answer_length,
                                embedder_options or {})
    if quantize:
        logging.info("Quantized %d dense layers to int8 (weight-only, per-output-channel scales)",
                     quantize_int8(model))
    logging.info("Built the %s model (%s%s) and loaded its weights in %.1f s", model_type, dtype,
                 f", {quantize} weights" if quantize else "", time.monotonic() - started)
    return model, adapter


def _build(model_type, config, checkpoint, label_list, max_answer_length, embedder_options):
    """build_model under the caller's dtype policy: (model with its weights loaded, adapter)."""
    source = open_checkpoint(checkpoint)
    head = source.head or {}  # a fine-tuned task model's head options (e.g. a BiLSTM head), embedded by training
    unused = ()  # variable name prefixes the checkpoint may lack: parts of the model that outputs never read
    if model_type == "encoder":
        model = BertEncoder(config)
        adapter = serving.EncoderAdapter(model)
    elif model_type == "pretrainer":
        # MLM-only pretraining (no NSP head in the checkpoint) leaves the pooler untrained and unused.
        nsp = _NEXT_SENTENCE in source.shapes
        model = BertPretrainer(config, objective=pretraining_objective(config, nsp))
        adapter, unused = serving.PretrainerAdapter(model), () if nsp else _POOLER
    elif model_type == "classifier":
        model = BertClassifier(config, head_size(source, model_type), **head)
        adapter = _task_adapter("label_list", task_adapters.ClassifierAdapter, model, label_list)
    elif model_type == "embedder":
        options = {**sentence_transformers.DEFAULTS, **embedder_options}
        model = BertSentenceEmbedder(config, options["pooling"], options["normalize"])
        adapter, unused = task_adapters.EmbedderAdapter(model), _POOLER
    elif model_type == "ner":
        tagger = BertFeatureTagger if "feature_layers" in head else BertTokenClassifier
        model = tagger(config, head_size(source, model_type), **head)
        adapter = _task_adapter("label_list", task_adapters.TokenClassifierAdapter, model, label_list)
        unused = _POOLER
    else:
        head_size(source, model_type)
        model = BertSpanLabeler(config, **head)
        adapter = _task_adapter("max_answer_length", task_adapters.SpanLabelerAdapter, model, max_answer_length)
        unused = _POOLER
    report = load_checkpoint(model, checkpoint)
    missing = [name for name in report.missing if not name.startswith(unused)]
    if missing:
        raise ValueError(f"{checkpoint} lacks {len(missing)} variable(s) of the {model_type} model "
                         f"({', '.join(missing[:5])}); the export would serve random weights")
    return model, adapter


def saved_labels(checkpoint):
    """The labels.txt that run_classifier.py / run_ner.py wrote beside `checkpoint` (a fine-tuning output
    dir or a model.ckpt-N in one), or None."""
    directory = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint)
    labels = run_directory.read_labels(directory)
    if labels is not None:
        logging.info("Labels from %s: %s", os.path.join(directory, run_directory.LABELS_FILE), ", ".join(labels))
    return labels


def read_config(config_file, checkpoint):
    """BertConfig of `config_file` if given, else the config embedded in (or beside, for HuggingFace)
    `checkpoint`; ValueError when it has none."""
    if config_file:
        return BertConfig.from_json_file(config_file)
    source = open_checkpoint(checkpoint)
    if source.config is None:
        raise ValueError(f"{source.path} ({source.format} checkpoint) carries no config: pass --bert_config_file")
    return BertConfig.from_dict(source.config, source=source.path)
