"""LiteRT (TFLite) export: one `.tflite` file of a serving adapter, for phones and other on-device runtimes.

    export_tflite(EncoderAdapter(encoder), vocab_file, True, 128, "out/model.tflite")               # raw text in
    export_tflite(adapter, vocab_file, True, 128, "out/model.tflite", inputs="ids", quantize="int8")

The file has one signature, `serving_default`, at batch 1 (T: the sequence length of the call):

  inputs="text": `text_a` tf.string [1], one UTF-8 string (`text_pair=True`: `text_a`, `text_b`; a
      SpanLabelerAdapter: `question`, `context`) -> the adapter's outputs + the packed `input_ids`,
      `input_mask`, `segment_ids` int32 [1, T]. The text is tokenized in the graph (`LiteTokenizer`) and packed
      `[CLS] A [SEP]` (`[CLS] A [SEP] B [SEP]`) with the original's truncation to seq_length; T is the packed
      length itself (no padding: the mask is all ones), so a short text costs a short sequence.
  inputs="ids": `input_ids`, `input_mask`, `segment_ids` int32 [1, T], any 1 <= T <= seq_length (the runtime
      resizes the inputs to the arrays it is given) -> the adapter's outputs, which follow T. A longer T, ids
      outside [0, vocab_size), a mask other than 0/1, segment ids outside [0, type_vocab_size) or inputs of
      different shapes fail the call: `invoke()` raises "gather index out of bounds" (TFLite has no assertion
      op with a message of its own; the model routes its inputs through a GATHER that these make fail).

The outputs are those of the SavedModel (bert_tf/export/serving.py, task_adapters.py): `pooled_output`
[1, H], `sequence_output` [1, T, H], `encoder_outputs` [1, L, T, H] for an encoder; a task model's own names
(`logits`, `probabilities`, `label_id`, `label`, ...). All of them convert, the string ones (`label`, `tags`)
included; the only SavedModel output a .tflite lacks is the SQuAD `answer` string, which the SavedModel's
serving module (not the adapter) makes with regular expressions: read `answer_start` / `answer_end` in
`input_ids` instead. There is no counterpart of the other SavedModel signatures (text pairs: `text_pair=True`;
tf.Example, classify, regress: none).

Running it: the raw-text models use four custom ops of tensorflow-text, `FastBertNormalize`,
`TFText>WhitespaceTokenizeWithOffsetsV2`, `FastWordpieceTokenizeWithOffsets` and `TFText>ByteSplitWithOffsets`
(`custom_ops(model)` lists them), whose kernels `tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS` registers:
`ai_edge_litert.interpreter.InterpreterWithCustomOps(model_path=..., custom_op_registerers=
tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)` (LiteRT; `tf.lite.Interpreter` takes no registerers in
TF 2.21). The ids models use builtin ops only. No model needs the TF (Flex) delegate.

Tokenization: `bert_tf.tokenization.lite.LiteTokenizer` (its module doc says how, and where its ids can
differ from FullTokenizer's: only in a final capital sigma when lower-casing, on the text tested).

Quantization: `quantize="int8"` is dynamic-range quantization (`tf.lite.Optimize.DEFAULT` without a
representative dataset): int8 weights with per-channel scales, activations quantized per call by the kernels;
the file is about 4x smaller and the pooled output of MiniLM stays at cosine >= 0.99 of the float one
(tests/test_export_tflite.py).

The file is written atomically (temporary name, fsync, rename); an existing file is an error, as for the
SavedModels. The vocab and the tokenizer tables are constants in the file.
"""

import os
import time

import tensorflow as tf
from absl import logging

from bert_tf import atomic_io
from bert_tf.export.serving import _check_built
from bert_tf.export.task_adapters import CONTEXT, QUESTION, SpanLabelerAdapter
from bert_tf.feature_schema import INPUT_NAMES
from bert_tf.tokenization.lite import LiteTokenizer, pack

INPUT_KINDS = ("text", "ids")
QUANTIZATIONS = ("none", "int8")
TEXT_A, TEXT_B = "text_a", "text_b"
# The custom ops of the raw-text models (their names in the .tflite file), all of tensorflow-text.
TEXT_CUSTOM_OPS = ("FastBertNormalize", "FastWordpieceTokenizeWithOffsets", "TFText>ByteSplitWithOffsets",
                   "TFText>WhitespaceTokenizeWithOffsetsV2")


# ------------------------------------------------------------------------------------------ conversion

def text_input_names(adapter, text_pair=False):
    """The string inputs of the raw-text model of `adapter`: (question, context) for a SpanLabelerAdapter,
    else (text_a,) or, with text_pair, (text_a, text_b)."""
    if isinstance(adapter, SpanLabelerAdapter):
        return QUESTION, CONTEXT
    return (TEXT_A, TEXT_B) if text_pair else (TEXT_A,)


def _checked_ids(inputs, config, seq_length):
    """The int32 [1, T] model inputs, through a GATHER whose indices are out of bounds unless T <= seq_length,
    the three inputs have one shape, 0 <= ids < vocab_size, the mask is 0 or 1 and 0 <= segment ids <
    type_vocab_size: TFLite has no assertion op, and an out-of-bounds GATHER fails the call."""
    input_ids, input_mask, segment_ids = (inputs[name] for name in INPUT_NAMES)
    shape = tf.shape(input_ids)
    valid = tf.reduce_all([
        tf.reduce_all(tf.shape(input_mask) == shape), tf.reduce_all(tf.shape(segment_ids) == shape),
        tf.reduce_all((input_ids >= 0) & (input_ids < config.vocab_size)),
        tf.reduce_all((input_mask >= 0) & (input_mask <= 1)),
        tf.reduce_all((segment_ids >= 0) & (segment_ids < config.type_vocab_size))])
    # Index T and above is past the end; an invalid input moves every index there.
    positions = tf.gather(tf.range(seq_length), tf.range(shape[1]) + tf.where(valid, 0, seq_length))
    return {name: tf.gather(inputs[name], positions, axis=1) for name in INPUT_NAMES}


def _serving_function(adapter, tokenizer, seq_length, inputs, text_pair):
    """The tf.function of the signature (batch 1; see the module doc), its inputs named."""
    if inputs == "text":
        names = text_input_names(adapter, text_pair)
        cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")

        def serve(*texts):
            packed = pack([tokenizer.tokenize(text).flat_values for text in texts], seq_length, cls_id, sep_id)
            return {**adapter.outputs(packed), **packed}

        specs = [tf.TensorSpec([1], tf.string, name=name) for name in names]
    else:
        names = INPUT_NAMES

        def serve(*tensors):
            return adapter.outputs(_checked_ids(dict(zip(names, tensors)), adapter.model.config, seq_length))

        specs = [tf.TensorSpec([1, None], tf.int32, name=name) for name in names]
    return tf.function(serve, input_signature=specs)


def _convert(function, quantize, allow_custom_ops):
    """The .tflite bytes of the tf.function `function` (its input signature; signature key `serving_default`).

    The variables are frozen into constants first: converted as they are, the Keras 3 variables become
    TFLite resource variables that nothing initialises."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # private

    concrete = function.get_concrete_function()
    output_names = sorted(concrete.structured_outputs)  # the frozen function returns them in this order
    frozen = convert_variables_to_constants_v2(concrete)

    def named(*args):
        return dict(zip(output_names, frozen(*args)))

    root = tf.Module()
    root.serve = tf.function(named, input_signature=concrete.structured_input_signature[0])  # the named specs
    converter = tf.lite.TFLiteConverter.from_concrete_functions([root.serve.get_concrete_function()], root)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = allow_custom_ops
    if quantize == "int8":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter.convert()


def custom_ops(model):
    """The custom op names (str, in file order) of the .tflite `model` (bytes): what the runtime must
    register beyond the builtin ops."""
    from tensorflow.lite.python import schema_py_generated as schema  # private: the flatbuffer reader

    parsed = schema.Model.GetRootAs(model, 0)
    codes = (parsed.OperatorCodes(i).CustomCode() for i in range(parsed.OperatorCodesLength()))
    return [code.decode("utf-8") for code in codes if code]


def _check_options(inputs, quantize):
    if inputs not in INPUT_KINDS:
        raise ValueError(f"inputs={inputs!r}: expected one of {', '.join(INPUT_KINDS)}")
    if quantize not in (None, *QUANTIZATIONS):
        raise ValueError(f"quantize={quantize!r}: expected None or one of {', '.join(QUANTIZATIONS)}")
    return None if quantize == "none" else quantize


def export_tflite(adapter, vocab_file, do_lower_case, seq_length, path, inputs="text", quantize=None,
                  text_pair=False):
    """Writes the .tflite model of `adapter` to `path` (see the module doc); returns `path`.

    Args:
      adapter: `EncoderAdapter(encoder)`, `PretrainerAdapter(pretrainer)` or a task model's adapter, with the
        weights already loaded.
      vocab_file, do_lower_case: the model's vocab.txt (or token list) and casing, for the raw-text model.
      seq_length: the longest T, <= max_position_embeddings (raw text is truncated to it).
      path: the file to write (e.g. export_dir/model.tflite); its folder is created.
      inputs: "text" (raw UTF-8 strings, tokenized in the graph) or "ids" (int32 [1, T] tensors).
      quantize: None (or "none"): float32; "int8": dynamic-range int8 weights.
      text_pair: raw text in two strings, `text_a` and `text_b` (a sentence-pair classifier); a
        SpanLabelerAdapter always takes `question` and `context`.
    Raises:
      ValueError for a bad `inputs` or `quantize` value, an unbuilt model, a vocab or seq_length that does
      not fit the config; OSError if `path` exists or cannot be written.
    """
    quantize = _check_options(inputs, quantize)
    _check_built(adapter.model)
    config = adapter.model.config
    config.check_seq_length(seq_length)
    path = os.fspath(path)
    if os.path.exists(path):
        raise OSError(f"{path} already exists; remove it or export elsewhere")
    started = time.monotonic()
    logging.info("Exporting %s to %s (inputs=%s, quantize=%s, seq_length=%d)", type(adapter).__name__, path,
                 inputs, quantize or "none", seq_length)
    tokenizer = None
    if inputs == "text":
        tokenizer = LiteTokenizer(vocab_file, do_lower_case=do_lower_case)
        config.check_vocab_size(len(tokenizer.vocab), vocab_file)
        logging.info("Tokenizer tables built in %.1f s", time.monotonic() - started)
    function = _serving_function(adapter, tokenizer, seq_length, inputs, text_pair)
    stage = time.monotonic()
    model = _convert(function, quantize, allow_custom_ops=inputs == "text")
    unknown = sorted(set(custom_ops(model)) - set(TEXT_CUSTOM_OPS))
    if unknown:
        raise ValueError(f"the converted model needs ops that have no TFLite kernel: {', '.join(unknown)}")
    logging.info("Traced, frozen and converted in %.1f s: %.1f MB%s", time.monotonic() - stage, len(model) / 1e6,
                 " (int8 weights)" if quantize else "")
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    atomic_io.remove_leftovers(parent, os.path.basename(path) + atomic_io.TEMPORARY_MARK)
    atomic_io.write_file(path, model)
    logging.info("Exported %s to %s in %.1f s", type(adapter).__name__, path, time.monotonic() - started)
    return path
