"""What export_model.py exports: the registry's model types that have a serving adapter (`bert_tf.model_types`)
built with every weight loaded (the check that none it serves is random), in the dtype and precision asked.

    model, adapter = build_model("classifier", config, "/tmp/mrpc_output", label_list=["0", "1"])
    export_serving(adapter, vocab_file, True, 128, "/models/mrpc")
"""

import contextlib
import time

import keras
from absl import logging

from bert_tf import model_types
from bert_tf.checkpoints import load_checkpoint, opened
from bert_tf.export import serving, task_adapters
from bert_tf.modeling import encoder
from bert_tf.modeling.layers.dense import BertDense
from bert_tf.modeling.tasks import (
    document_classifier,
    embedder,
    feature_tagger,
    multiple_choice,
    pretrainer,
    span_labeler,
)

# The modules that give the registry its built-in types' factories when imported (`model_types.provide`): the
# models' builds and the serving adapters. Imported here, so that every built-in type builds and serves.
PROVIDERS = (encoder, pretrainer, document_classifier, feature_tagger, span_labeler, multiple_choice, embedder, serving,
             task_adapters)

# The options that only some model types read (export_model.py refuses them for the others).
TASK_OPTIONS = ("label_list", "max_answer_length", "pooling", "normalize")
# The dtypes the exported variables can be stored in (--export_dtype); LayerNorm stays float32 in both.
EXPORT_DTYPES = ("float32", "bfloat16")
QUANTIZATION_MODES = ("int8",)


@contextlib.contextmanager
def _dtype_policy(name):
    """Keras' global dtype policy is `name` inside the block (layers take it when they are created)."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def types_reading(option):
    """The registered types with a serving adapter that read the export option `option` (of TASK_OPTIONS)."""
    return tuple(name for name in model_types.exportable() if option in model_types.get(name).options)


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
    """The Keras model and its serving adapter for `model_type` (a registered type with a serving adapter),
    with every weight loaded from `checkpoint` (any --init_checkpoint format: a path, or one opened once by
    `checkpoints.open_checkpoint`).

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
    if model_type not in model_types.exportable():  # the registry now, with the types registered since import
        raise ValueError(f"model type {model_type!r}: expected one of {', '.join(model_types.exportable())}")
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
    """build_model under the caller's dtype policy: (model with its weights loaded, adapter), as the registry
    (`bert_tf.model_types`) builds and serves `model_type`."""
    kind, source = model_types.get(model_type), opened(checkpoint)
    options = {"label_list": label_list, "max_answer_length": max_answer_length, **embedder_options}
    model = kind.build(config, source, options)
    adapter = kind.adapter(model, options)
    report = load_checkpoint(model, source)
    missing = [name for name in report.missing if not name.startswith(kind.unused_variables(source))]
    if missing:
        raise ValueError(f"{source.path} lacks {len(missing)} variable(s) of the {model_type} model "
                         f"({', '.join(missing[:5])}); the export would serve random weights")
    return model, adapter

