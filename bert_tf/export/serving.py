"""SavedModel export: a serving model for TF Serving (tensor, raw-text and tf.Example signatures) and a
TF-Hub-style preprocessor / encoder pair.

Serving model (`export_serving`), written to `export_dir/<version>/` (1, then one more than the largest
existing version, as TF Serving expects; written to a temporary directory and renamed into place). B is the
batch, T the request's length: any 1 <= T <= the exported `seq_length` for tensors; for raw text and Examples
the longest packed input of the request rounded up to a multiple of 8 (at most `seq_length`), or always
`seq_length` when exported with `pad_to_max_length`. Outputs follow the request's T.

  serving_default(input_ids, input_mask, segment_ids: int32 [B, T]) -> the adapter's outputs
  serve_text(text_a: tf.string [B]) -> the adapter's outputs + the packed input_ids, input_mask, segment_ids
  serve_text_pair(text_a, text_b: tf.string [B]) -> the same, for `[CLS] A [SEP] B [SEP]` inputs
  serve_examples(inputs: tf.string [B], serialized tf.train.Example) -> the same; each Example has a bytes
      feature `text_a` and optionally `text_b` (present: that example is packed as a pair). The input is named
      `inputs`, the name TF Serving's classify/regress APIs feed.

Signatures cannot have optional inputs, hence the separate `serve_text_pair`. The raw-text signatures
tokenize in the graph with `bert_tf.tokenization.in_graph.BertTokenizer` (FullTokenizer's ids) and pack and
truncate with `BertPacker` (the original's truncation). Each string is first cut to the characters packing can
read (`truncate_text`: 64 a token of seq_length, plus 200; the ids are the same unless a string's first
seq_length tokens take more), so that a request's work and memory follow seq_length, not the size of its
strings. Strings whose kept part is not valid UTF-8 fail the request with an InvalidArgumentError naming the
rows, and so do out-of-range ids, masks or segment ids, a T above the export's limit and inputs of different
shapes (the message names the limit or the shapes). A request of zero rows gets outputs of zero rows.

A model plugs in through an adapter, a `ServingAdapter`: `model` (the Keras model, whose variables are
saved and whose `config` is a BertConfig) and `outputs(inputs)` mapping the dict of int32 [B, T] model
inputs to a dict of named tensors with the batch first (float outputs in float32). `EncoderAdapter` and
`PretrainerAdapter` are here, the task models' adapters in `bert_tf/export/task_adapters.py`. An adapter may add a
signature for one of TF Serving's classify / regress APIs (`serving_api`: its name and method name; inputs
`inputs`, serialized tf.Example as for serve_examples; outputs `api_outputs(outputs)`), and may serve with a
`ServingModule` subclass of its own (`serving_module`: SQuAD's text signatures take `question` + `context`).
TF2's `tf.saved_model.save` writes every signature with the predict method name; `export_serving` then
rewrites that signature's method name in saved_model.pb (`MethodNameUpdater`, the fingerprint rewritten to
match), since TF Serving's Classify and Regress refuse any other.

TF-Hub-style pair (`export_hub`): `export_dir/preprocessor` maps text to the encoder inputs, and
`export_dir/encoder` follows the Reusable SavedModel conventions of `hub.KerasLayer`: `obj(inputs,
training=False)` on a dict of int32 [B, T] inputs (any T up to max_position_embeddings) returns
`pooled_output` [B, H], `sequence_output` [B, T, H] and `encoder_outputs` (list of L [B, T, H]); `variables`,
`trainable_variables` and `regularization_losses` are attributes. In Keras 3 use `keras.layers.TFSMLayer`.

Loading any of these needs `import tensorflow_text` first (it registers the WordPiece op); the vocab and the
tokenizer's Unicode tables are constants in the graph, not asset files.
"""

import os
import shutil
import time

import tensorflow as tf
from absl import logging

from bert_tf import atomic_io, model_types
from bert_tf.feature_schema import (
    ENCODER_OUTPUTS,
    INPUT_IDS,
    INPUT_MASK,
    INPUT_NAMES,
    MASKED_LM_POSITIONS,
    POOLED_OUTPUT,
    SEQUENCE_OUTPUT,
)
from bert_tf.modeling.tasks.embedder import EMBEDDINGS, BertSentenceEmbedder
from bert_tf.tokenization.in_graph import BertPacker, BertTokenizer, truncate_text

TEXT_A, TEXT_B = "text_a", "text_b"
EXAMPLES_INPUT = "inputs"


# ---------------------------------------------------------------------------------------------- adapters

def _float32(outputs):
    return {name: tf.cast(value, tf.float32) if value.dtype.is_floating else value
            for name, value in outputs.items()}


class ServingAdapter:
    """Base of the adapters (see the module doc): `model`, `outputs(inputs)`, and optionally `serving_api`
    (None, or (signature name, method name) of a TF Serving classify / regress signature) with
    `api_outputs(outputs)`; `serving_module(preprocessor)` builds the SavedModel root."""

    serving_api = None

    def __init__(self, model):
        self.model = model

    def outputs(self, inputs):
        """dict of int32 [B, T] model inputs -> dict of named outputs, batch first."""
        raise NotImplementedError

    def api_outputs(self, outputs):
        """`outputs(inputs)` -> the outputs of the `serving_api` signature, under TF Serving's names."""
        raise NotImplementedError

    def serving_module(self, preprocessor):
        """The SavedModel root serving this adapter with `preprocessor` (a TextPreprocessor)."""
        return ServingModule(self, preprocessor)


class EncoderAdapter(ServingAdapter):
    """Serving outputs of a `BertEncoder`: `pooled_output` float32 [B, H], `sequence_output` [B, T, H],
    `encoder_outputs` [B, L, T, H] (every layer's output, stacked after the batch axis so that TF Serving
    can batch it)."""

    def outputs(self, inputs):
        encoded = self.model(inputs, training=False)
        return _float32({POOLED_OUTPUT: encoded[POOLED_OUTPUT],
                         SEQUENCE_OUTPUT: encoded[SEQUENCE_OUTPUT],
                         ENCODER_OUTPUTS: tf.stack(encoded[ENCODER_OUTPUTS], axis=1)})


class PretrainerAdapter(ServingAdapter):
    """Serving outputs of a `BertPretrainer`: `masked_lm_logits` float32 [B, T, V] at every position (put
    [MASK] = 103 ids in `input_ids` to fill them in; raw text cannot, since typed "[MASK]" is split like any
    text) and, with NSP, `next_sentence_logits` [B, 2] (index 0: B follows A); for a left-to-right
    pretrainer (objective "ltr") `lm_logits` [B, T, V], at each position the next token's."""

    def outputs(self, inputs):
        positions = tf.broadcast_to(tf.range(tf.shape(inputs[INPUT_IDS])[1]), tf.shape(inputs[INPUT_IDS]))
        return _float32(self.model({**inputs, MASKED_LM_POSITIONS: positions}, training=False))


def adapter_factory(adapter_class, option=None):
    """A model type's adapter (`model_types.ModelType.adapter`): (model, options) -> `adapter_class`(model[,
    options[option]]); its ValueError (a bad label list, max_answer_length) names the option."""

    def make(model, options):
        if option is None:
            return adapter_class(model)
        try:
            return adapter_class(model, options.get(option))
        except ValueError as e:
            raise ValueError(f"{option}: {e}") from None

    return make


model_types.provide(model_types.ENCODER, adapter=adapter_factory(EncoderAdapter))
model_types.provide(model_types.PRETRAINER, adapter=adapter_factory(PretrainerAdapter))


# ----------------------------------------------------------------------------------------- input checks

def _check_inputs(inputs, config, seq_length=None):
    """Asserts that the int32 [B, T] (or [B, W, T]) model inputs have one shape and are in range: T <= seq_length (the
    export's limit; None: the config's max_position_embeddings), ids < vocab_size, mask 0/1, segment ids
    < type_vocab_size. Returns the inputs (after the assertions)."""
    limit, source = ((seq_length, "the max_seq_length of the export") if seq_length is not None
                     else (config.max_position_embeddings, "the model's max_position_embeddings"))
    input_ids, input_mask, segment_ids = (inputs[name] for name in INPUT_NAMES)
    shapes = ["input_ids, input_mask, segment_ids have shapes", tf.shape(input_ids), tf.shape(input_mask),
              tf.shape(segment_ids)]
    checks = [
        tf.debugging.Assert(tf.shape(input_ids)[-1] <= limit, [
            f"the sequence length T exceeds the export limit of {limit} tokens ({source}): T =",
            tf.shape(input_ids)[-1]]),
        tf.debugging.assert_non_negative(input_ids, message="input_ids must be >= 0"),
        tf.debugging.assert_less(input_ids, config.vocab_size,
                                 message=f"input_ids must be < vocab_size={config.vocab_size}"),
        tf.debugging.Assert(tf.reduce_all(tf.shape(input_mask) == tf.shape(input_ids)),
                            ["input_mask must have the shape of input_ids;", *shapes]),
        tf.debugging.Assert(tf.reduce_all(tf.shape(segment_ids) == tf.shape(input_ids)),
                            ["segment_ids must have the shape of input_ids;", *shapes]),
        tf.debugging.assert_non_negative(input_mask, message="input_mask must be 0 or 1"),
        tf.debugging.assert_less_equal(input_mask, 1, message="input_mask must be 0 or 1"),
        tf.debugging.assert_non_negative(segment_ids, message="segment_ids must be >= 0"),
        tf.debugging.assert_less(segment_ids, config.type_vocab_size,
                                 message=f"segment_ids must be < type_vocab_size={config.type_vocab_size}"),
    ]
    with tf.control_dependencies(checks):
        return {name: tf.identity(inputs[name]) for name in INPUT_NAMES}


# ------------------------------------------------------------------------------------ text preprocessing

class TextPreprocessor(tf.Module):
    """Raw UTF-8 text -> int32 [B, T] `input_ids`, `input_mask`, `segment_ids`, in the graph.

    Args:
      tokenizer: a `bert_tf.tokenization.in_graph.BertTokenizer`.
      seq_length: the longest packed length; single texts keep seq_length - 2 tokens, pairs are truncated to
        seq_length - 3 as in the original.
      pad_to_max_length: T = seq_length always (True), or the request's longest packed input rounded up to a
        multiple of 8 (False; `BertPacker`).
    """

    def __init__(self, tokenizer, seq_length, pad_to_max_length=True):
        super().__init__(name="text_preprocessor")
        self.tokenizer = tokenizer
        self.seq_length = seq_length
        self.packer = BertPacker(seq_length, cls_id=tokenizer.token_to_id("[CLS]"),
                                 sep_id=tokenizer.token_to_id("[SEP]"), pad_id=tokenizer.token_to_id("[PAD]"),
                                 pad_to_max_length=pad_to_max_length)

    def tokenize(self, name, strings):
        """tf.string [B] (checked to be UTF-8, `name` is in the error) -> int32 RaggedTensor [B, (tokens)]."""
        return self.tokenizer.tokenize(strings, name)

    def _tokenize_for_packing(self, name, strings):
        """`tokenize` of the strings cut to what packing can read (`truncate_text`: the work and memory of a
        request follow seq_length, not the size of its strings; the packed ids are the same)."""
        return self.tokenize(name, truncate_text(strings, self.seq_length))

    def pack_texts(self, **texts):
        """`text_a=` (and `text_b=`) tf.string [B] -> dict of int32 [B, T]."""
        return self.packer([self._tokenize_for_packing(name, strings) for name, strings in texts.items()])

    def pack_examples(self, serialized):
        """Serialized tf.train.Example [B] with bytes features `text_a` (required) and `text_b` (optional,
        per example) -> dict of int32 [B, T]; examples with `text_b` are packed as pairs."""
        features = tf.io.parse_example(serialized, {TEXT_A: tf.io.FixedLenFeature([], tf.string),
                                                    TEXT_B: tf.io.VarLenFeature(tf.string)})
        text_b = tf.RaggedTensor.from_sparse(features[TEXT_B])
        count_b = text_b.row_lengths()
        check = tf.debugging.assert_less_equal(count_b, tf.constant(1, tf.int64),
                                               message=f"each Example must hold at most one {TEXT_B} string")
        with tf.control_dependencies([check]):
            has_b = count_b == 1
        ids_a = self._tokenize_for_packing(TEXT_A, features[TEXT_A])
        ids_b = self._tokenize_for_packing(TEXT_B, text_b.to_tensor("", shape=[None, 1])[:, 0])
        single, pair = self.packer(ids_a), self.packer([ids_a, ids_b])
        width = tf.maximum(tf.shape(single[INPUT_IDS])[1], tf.shape(pair[INPUT_IDS])[1])  # dynamic: may differ
        pad_values = {INPUT_IDS: self.packer.pad_id}
        single, pair = ({name: tf.pad(value, [[0, 0], [0, width - tf.shape(value)[1]]],
                                      constant_values=pad_values.get(name, 0)) for name, value in packed.items()}
                        for packed in (single, pair))
        return {name: tf.where(has_b[:, tf.newaxis], pair[name], single[name]) for name in INPUT_NAMES}


def _check_built(model):
    if not model.built:
        raise ValueError(f"{model.name} is not built: build it and load its weights (bert_tf.load_checkpoint) "
                         "before exporting")


def _model_input_specs(rank=2):
    return [tf.TensorSpec([None] * rank, tf.int32, name=name) for name in INPUT_NAMES]


def _text_specs(*names):
    return [tf.TensorSpec([None], tf.string, name=name) for name in names]


# --------------------------------------------------------------------------------------- serving model

class ServingModule(tf.Module):
    """The serving SavedModel's root: the model's variables and the signatures of the module doc:
    `serving_default`, the raw-text ones, `serve_examples` and the adapter's `serving_api` signature if it
    has one. A subclass changes the raw-text inputs by overriding `_text_functions` and `_pack_examples`.

    Args:
      adapter: a `ServingAdapter` (`EncoderAdapter`, `PretrainerAdapter` or a task model's adapter).
      preprocessor: a `TextPreprocessor` with the model's vocab and casing; its seq_length is the longest T
        of every signature.
    """

    input_rank = 2  # serving_default takes [B, T]

    def __init__(self, adapter, preprocessor):
        super().__init__(name="bert_serving")
        _check_built(adapter.model)
        adapter.model.config.check_seq_length(preprocessor.seq_length)
        self.model = adapter.model
        self.preprocessor = preprocessor
        self._adapter = adapter
        self.serve = tf.function(self._serve, input_signature=_model_input_specs(self.input_rank))
        self.serve_examples = tf.function(self._serve_examples, input_signature=_text_specs(EXAMPLES_INPUT))
        signatures = {"serving_default": self.serve, **self._text_functions(), "serve_examples": self.serve_examples}
        if adapter.serving_api is not None:
            self.serve_api = tf.function(self._serve_api, input_signature=_text_specs(EXAMPLES_INPUT))
            signatures[adapter.serving_api[0]] = self.serve_api
        self._signature_functions = signatures

    def signatures(self):
        """{signature name: tf.function} of the SavedModel."""
        return dict(self._signature_functions)

    def method_names(self):
        """{signature name: method name} of the signatures that are not predict ones (the serving_api)."""
        return dict([self._adapter.serving_api]) if self._adapter.serving_api is not None else {}

    def _text_functions(self):
        """Creates the raw-text functions (attributes of the root); returns them by signature name."""
        self.serve_text = tf.function(self._serve_text, input_signature=_text_specs(TEXT_A))
        self.serve_text_pair = tf.function(self._serve_text_pair, input_signature=_text_specs(TEXT_A, TEXT_B))
        return {"serve_text": self.serve_text, "serve_text_pair": self.serve_text_pair}

    def _pack_examples(self, serialized):
        """Serialized tf.train.Example [B] -> dict of int32 [B, T] model inputs."""
        return self.preprocessor.pack_examples(serialized)

    def _outputs(self, inputs):
        return self._adapter.outputs(_check_inputs(inputs, self.model.config, self.preprocessor.seq_length))

    def _outputs_with_inputs(self, inputs):
        return {**self._outputs(inputs), **inputs}

    def _serve(self, input_ids, input_mask, segment_ids):
        return self._outputs(dict(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids))

    def _serve_text(self, text_a):
        return self._outputs_with_inputs(self.preprocessor.pack_texts(text_a=text_a))

    def _serve_text_pair(self, text_a, text_b):
        return self._outputs_with_inputs(self.preprocessor.pack_texts(text_a=text_a, text_b=text_b))

    def _serve_examples(self, inputs):
        return self._outputs_with_inputs(self._pack_examples(inputs))

    def _serve_api(self, inputs):
        return self._adapter.api_outputs(self._outputs(self._pack_examples(inputs)))


# ------------------------------------------------------------------------------------ TF-Hub-style pair

class HubPreprocessor(tf.Module):
    """The TF-Hub-style preprocessor's root. `obj(text_a)`: tf.string [B] -> dict of int32 [B, seq_length]
    `input_ids`, `input_mask`, `segment_ids` (one segment); `obj.tokenize(text)` -> int32 RaggedTensor
    [B, (tokens)] without [CLS]/[SEP]; `obj.bert_pack_inputs([ids_a])` or `([ids_a, ids_b])` packs such
    ragged ids at the exported seq_length. Signatures `serving_default` (text_a) and `serve_text_pair`
    (text_a, text_b) give the same dicts."""

    def __init__(self, tokenizer, seq_length):
        super().__init__(name="bert_preprocessor")
        self.preprocessor = TextPreprocessor(tokenizer, seq_length)
        ragged = tf.RaggedTensorSpec([None, None], tf.int32, row_splits_dtype=tf.int64)
        self.__call__ = tf.function(self._preprocess, input_signature=_text_specs(TEXT_A))
        self.tokenize = tf.function(self._tokenize, input_signature=_text_specs("text"))
        self.bert_pack_inputs = tf.function(self._pack)
        self.serve_text_pair = tf.function(self._preprocess_pair, input_signature=_text_specs(TEXT_A, TEXT_B))
        for segments in ([ragged], [ragged, ragged]):
            self.bert_pack_inputs.get_concrete_function(segments)

    def signatures(self):
        return {"serving_default": self.__call__, "serve_text_pair": self.serve_text_pair}

    def _preprocess(self, text_a):
        return self.preprocessor.pack_texts(text_a=text_a)

    def _tokenize(self, text):
        return self.preprocessor.tokenize("text", text)

    def _pack(self, segments):
        return self.preprocessor.packer(segments)

    def _preprocess_pair(self, text_a, text_b):
        return self.preprocessor.pack_texts(text_a=text_a, text_b=text_b)


class HubEncoder(tf.__internal__.tracking.AutoTrackable):
    """The TF-Hub-style encoder's root (an AutoTrackable, not a tf.Module: `variables` and
    `trainable_variables` must be plain attributes, as `hub.KerasLayer` reads them after loading).

    `obj(inputs, training=False)`: dict of int32 [B, T] `input_ids`, `input_mask`, `segment_ids` -> dict
    `pooled_output` float32 [B, H], `sequence_output` [B, T, H], `encoder_outputs` list of L [B, T, H];
    `training=True` applies dropout. Signature `serving_default` takes the three tensors and returns
    `encoder_outputs` stacked as [B, L, T, H]. Given a BertSentenceEmbedder (model type embedder), both also
    return its `embeddings` float32 [B, H] (its pooling of sequence_output over input_mask).
    """

    def __init__(self, model):
        super().__init__()
        self.pooling = model.pooling if isinstance(model, BertSentenceEmbedder) else None
        encoder = model.encoder if self.pooling else model
        _check_built(encoder)
        self.model = encoder
        self.variables = list(encoder.variables)
        self.trainable_variables = list(encoder.trainable_variables)
        self.regularization_losses = []
        spec = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}
        self.__call__ = tf.function(self._encode)
        for training in (False, True):
            self.__call__.get_concrete_function(spec, training=training)
        self.serve = tf.function(self._serve, input_signature=list(spec.values()))

    def signatures(self):
        return {"serving_default": self.serve}

    def _encode(self, inputs, training=False):
        inputs = _check_inputs(inputs, self.model.config)
        encoded = self.model(inputs, training=training)
        outputs = {name: tf.nest.map_structure(lambda x: tf.cast(x, tf.float32), encoded[name])
                   for name in (POOLED_OUTPUT, SEQUENCE_OUTPUT, ENCODER_OUTPUTS)}
        if self.pooling:
            outputs[EMBEDDINGS] = self.pooling(outputs[SEQUENCE_OUTPUT], inputs[INPUT_MASK])
        return outputs

    def _serve(self, input_ids, input_mask, segment_ids):
        inputs = _check_inputs(dict(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids),
                               self.model.config)
        outputs = EncoderAdapter(self.model).outputs(inputs)
        if self.pooling:
            outputs[EMBEDDINGS] = self.pooling(outputs[SEQUENCE_OUTPUT], inputs[INPUT_MASK])
        return outputs


# ---------------------------------------------------------------------------------------------- writing

def _save_atomically(root, path, method_names=None):
    """tf.saved_model.save(root) into a temporary sibling of `path`, synced and renamed to `path` once
    complete (a reader never sees a partial SavedModel); OSError if `path` exists (before the write, or when
    another run publishes it first), or naming `path` and the reason when the write fails (nothing is left
    behind).
    `method_names`: {signature name: method name} to write over the predict method name of those signatures.
    Logs the stages with their elapsed time: the start (root and signatures), the SavedModel written (tracing
    every signature: the slow part), then the rename."""
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    if os.path.exists(path):
        raise OSError(f"{path} already exists; remove it or export elsewhere")
    atomic_io.remove_leftovers(parent, os.path.basename(path) + atomic_io.TEMPORARY_MARK)
    tmp = atomic_io.temporary_path(path)
    signatures, started = root.signatures(), time.monotonic()
    logging.info("Saving %s with signatures %s to %s", type(root).__name__, ", ".join(signatures), path)
    try:
        tf.saved_model.save(root, tmp, signatures=signatures)
        logging.info("SavedModel traced and written in %.1f s", time.monotonic() - started)
        if method_names:
            _set_method_names(tmp, method_names)
        atomic_io.fsync_tree(tmp)
        os.rename(tmp, path)
        atomic_io.fsync_path(parent)
    except (tf.errors.OpError, OSError) as e:
        raise _write_error(e, tmp, path) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    logging.info("Exported %s to %s in %.1f s", type(root).__name__, path, time.monotonic() - started)
    return path


def _write_error(error, tmp, path):
    """The OSError reporting `error`, raised while writing `path` through `tmp`, in one line naming `path`: the
    rename of `tmp` failed because another run published a folder at `path` meanwhile (two exports of one
    version at once), or the disk's reason (`atomic_io.disk_error`)."""
    lost_race = (getattr(error, "filename", None), getattr(error, "filename2", None)) == (tmp, path)
    if lost_race and os.path.exists(path):
        return OSError(error.errno, f"cannot write {path}: another run published it first ({error.strerror})")
    return atomic_io.disk_error(error, path)


def _set_method_names(saved_model_dir, method_names):
    """Rewrites the method name of signatures in `saved_model_dir`/saved_model.pb ({name: method name}),
    then its fingerprint.pb, which hashes the signatures (TF has no public API for either in TF2)."""
    updater = tf.compat.v1.saved_model.signature_def_utils.MethodNameUpdater(saved_model_dir)
    for signature, method_name in method_names.items():
        updater.replace_method_name(signature_key=signature, method_name=method_name)
    updater.save()
    from tensorflow.python.saved_model import fingerprinting_utils  # private: only needed here
    fingerprinting_utils.write_fingerprint(saved_model_dir)


def next_version(export_dir):
    """1 + the largest integer-named subdirectory of `export_dir` (1 when there is none)."""
    names = os.listdir(export_dir) if os.path.isdir(export_dir) else []
    return 1 + max((int(n) for n in names if n.isdigit()), default=0)


def export_serving(adapter, vocab_file, do_lower_case, seq_length, export_dir, pad_to_max_length=False):
    """Writes the serving SavedModel of `adapter` to `export_dir/<next version>/`; returns that path.

    Args:
      adapter: `EncoderAdapter(encoder)`, `PretrainerAdapter(pretrainer)` or a task model's adapter
        (`bert_tf.export.task_adapters`), with the weights already loaded.
      vocab_file, do_lower_case: the model's vocab.txt (or token list) and casing, for the text signatures.
      seq_length: the longest T of every signature, <= max_position_embeddings.
      pad_to_max_length: the raw-text and Example signatures pad every request to seq_length (for clients
        that need one fixed T), instead of to the request's longest input rounded up to a multiple of 8.
    """
    tokenizer = BertTokenizer(vocab_file, do_lower_case=do_lower_case)
    adapter.model.config.check_vocab_size(len(tokenizer.vocab), vocab_file)
    root = adapter.serving_module(TextPreprocessor(tokenizer, seq_length, pad_to_max_length))
    return _save_atomically(root, os.path.join(export_dir, str(next_version(export_dir))), root.method_names())


def export_hub(model, vocab_file, do_lower_case, seq_length, export_dir):
    """Writes the TF-Hub-style pair to `export_dir/preprocessor` and `export_dir/encoder`; returns the two
    paths. Arguments as for `export_serving`, with a `BertEncoder` or a `BertSentenceEmbedder` (its encoder
    adds `embeddings`); the preprocessor pads to seq_length (the TF Hub convention), the encoder takes any T."""
    tokenizer = BertTokenizer(vocab_file, do_lower_case=do_lower_case)
    model.config.check_vocab_size(len(tokenizer.vocab), vocab_file)
    model.config.check_seq_length(seq_length)
    roots = {"preprocessor": HubPreprocessor(tokenizer, seq_length), "encoder": HubEncoder(model)}
    return tuple(_save_atomically(root, os.path.join(export_dir, name)) for name, root in roots.items())
