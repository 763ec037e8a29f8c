"""One harness over every Keras layer and model of bert_tf (in the spirit of KerasHub's TestCase.run_layer_test
and run_model_saving_test), on the tiny config:

  config      get_config -> from_config gives the same config (JSON-serializable), and the same outputs once
              the weights are copied;
  bfloat16    built and run under mixed_bfloat16 (inference and training mode): outputs finite, in the dtypes
              the docstrings give (LayerNorm outputs, attention probabilities and logits float32, the
              matmul outputs in the compute dtype), variables float32, close to the float32 outputs;
  keras file  a `.keras` save/load round trip gives identical outputs (a model itself; a layer inside a
              functional model);
  gradients   layers: every trainable weight gets a finite gradient;
  training    models: one training step (compile with an optimizer and fit one batch; the encoder, which has
              no objective, one optimizer step on a loss of its outputs) gives a finite loss and changes the
              weights.

A new layer or model is one line in CASES; test_every_layer_and_model_is_in_the_harness fails until it is there.

The harness runs on the Keras backend of the process (KERAS_BACKEND): TensorFlow here, JAX and PyTorch in their
own processes (tests/test_backends.py). The in-graph tokenizers are TensorFlow's (tensorflow-text) and run on
the TensorFlow backend only.
"""

import dataclasses
import functools
import importlib
import json
import pkgutil
from typing import Any, Callable

import keras
import numpy as np
import pytest
from keras import ops

import bert_tf
from bert_tf import BertConfig
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.layers.attention import BertSelfAttention
from bert_tf.modeling.layers.dense import BertDense
from bert_tf.modeling.layers.dropout import BertDropout
from bert_tf.modeling.layers.embeddings import BertEmbeddings
from bert_tf.modeling.layers.layer_norm import BertLayerNorm
from bert_tf.modeling.layers.output_head import OutputHead
from bert_tf.modeling.layers.pretraining_heads import MaskedLMHead, NextSentenceHead
from bert_tf.modeling.layers.scalar_mix import ScalarMix
from bert_tf.modeling.layers.sentence_pooling import SentencePooling
from bert_tf.modeling.layers.sequence_bilstm import SequenceBiLSTM
from bert_tf.modeling.layers.transformer import BertResidualOutput, BertTransformerLayer
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.document_classifier import AGGREGATIONS, BertDocumentClassifier
from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder
from bert_tf.modeling.tasks.feature_tagger import BertFeatureTagger
from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice
from bert_tf.modeling.tasks.objective import ObjectiveModel
from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.modeling.tasks.task_model import BertTaskModel
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from bert_tf.tokenization.in_graph import BertPacker, BertTokenizer
from tests.helpers import tokenizer_data
from tests.helpers.gradients import gradients_of
from tests.helpers.model_inputs import random_inputs

ABSTRACT = {ObjectiveModel, BertTaskModel}  # bases that are never built themselves
ON_TENSORFLOW = keras.backend.backend() == "tensorflow"
TENSORFLOW_ONLY = (BertTokenizer, BertPacker)  # in-graph tokenization: tensorflow-text ops
B, T, PREDICTIONS, CHOICES = 2, 9, 3, 3
F32, COMPUTE = "float32", "compute"  # expected output dtypes under mixed_bfloat16; COMPUTE: the policy's


# ------------------------------------------------------------------------------------------------ inputs

def floats(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def hidden(config, width=None, seed=0):
    return floats(B, T, width or config.hidden_size, seed=seed)


def input_mask():
    return (np.arange(T)[None] < np.array([T, 5])[:, None]).astype(np.int32)


def encoder_inputs(config, shape=(B, T)):
    if len(shape) == 2:
        return random_inputs(config, batch=shape[0], seq=shape[1], seed=1)
    flat = random_inputs(config, batch=shape[0] * shape[1], seq=shape[2], seed=1)
    return {name: value.reshape(shape) for name, value in flat.items()}


def pretraining_features(config):
    positions = np.array([[1, 3, 4], [2, 0, 0]], np.int32)
    return {**encoder_inputs(config), "masked_lm_positions": positions,
            "masked_lm_ids": np.array([[5, 6, 7], [8, 0, 0]], np.int32),
            "masked_lm_weights": np.array([[1, 1, 1], [1, 0, 0]], np.float32),
            "next_sentence_labels": np.array([[0], [1]], np.int32)}


def text_lines():
    import tensorflow as tf

    return tf.constant(tokenizer_data.corpus_lines()[-100:])


def token_ids():
    """Two segments of word-piece ids, ragged [100, (tokens)], from the uncased tokenizer."""
    import tensorflow as tf

    tokenizer = BertTokenizer(tokenizer_data.uncased_vocab_file())
    lines = tokenizer_data.corpus_lines()
    return [tokenizer(tf.constant(lines[-100:])), tokenizer(tf.constant(lines[-200:-100]))]


# ------------------------------------------------------------------------------------------------- cases

@dataclasses.dataclass(frozen=True)
class Case:
    """cls: the class under test; make(config) -> an instance; args(config) -> the positional call arguments;
    dtypes: the outputs' structure with F32 / COMPUTE leaves (None: no float outputs); features(config) ->
    the training features with labels (models with an objective); name: the test id."""

    cls: type
    make: Callable[[BertConfig], Any]
    args: Callable[[BertConfig], tuple]
    dtypes: Any
    features: Callable[[BertConfig], dict] = None
    name: str = None

    @property
    def id(self):
        return self.name or self.cls.__name__

    @property
    def is_model(self):
        return issubclass(self.cls, keras.Model)


def labelled(labels):
    """features(config) of a task model: encoder inputs and `labels(config, inputs)`."""
    def features(config, shape=(B, T)):
        inputs = encoder_inputs(config, shape)
        return {**inputs, **labels(inputs)}
    return features


CASES = [
    # building blocks
    Case(BertDense, lambda c: BertDense(c.intermediate_size, activation="gelu", name="dense"),
         lambda c: (hidden(c),), COMPUTE),
    Case(BertDropout, lambda c: BertDropout(0.2, seed=1), lambda c: (hidden(c),), COMPUTE),
    Case(BertLayerNorm, lambda c: BertLayerNorm(c.layer_norm_eps), lambda c: (hidden(c),), F32),
    Case(BertSelfAttention, lambda c: BertSelfAttention(c.num_attention_heads, c.hidden_size, c.initializer_range,
                                                        c.attention_probs_dropout_prob, name="self"),
         lambda c: (hidden(c), input_mask()), (COMPUTE, F32)),
    Case(BertEmbeddings, lambda c: BertEmbeddings(c.vocab_size, c.hidden_size, c.max_position_embeddings,
                                                  c.type_vocab_size, c.initializer_range, c.hidden_dropout_prob,
                                                  c.layer_norm_eps, name="embeddings"),
         lambda c: (encoder_inputs(c)["input_ids"], encoder_inputs(c)["segment_ids"]), COMPUTE),
    Case(BertResidualOutput, lambda c: BertResidualOutput(c.hidden_size, c.initializer_range, c.hidden_dropout_prob,
                                                          c.layer_norm_eps, name="output"),
         lambda c: (hidden(c, c.intermediate_size), hidden(c, seed=1)), F32),
    Case(BertTransformerLayer, lambda c: BertTransformerLayer(
        c.hidden_size, c.num_attention_heads, c.intermediate_size, c.hidden_act, c.initializer_range,
        c.hidden_dropout_prob, c.attention_probs_dropout_prob, c.layer_norm_eps, name="layer_0"),
         lambda c: (hidden(c), input_mask()), (F32, F32)),
    Case(OutputHead, lambda c: OutputHead(3, c.hidden_size, c.initializer_range), lambda c: (hidden(c),), F32),
    Case(MaskedLMHead, lambda c: MaskedLMHead(c.vocab_size, c.hidden_size, c.hidden_act, c.initializer_range,
                                              c.layer_norm_eps),
         lambda c: (hidden(c), np.array([[1, 3, 4], [2, 0, 0]], np.int32),
                    floats(c.vocab_size, c.hidden_size, seed=2) * 0.02), F32),
    Case(NextSentenceHead, lambda c: NextSentenceHead(c.hidden_size, c.initializer_range),
         lambda c: (floats(B, c.hidden_size),), F32),
    Case(SentencePooling, lambda c: SentencePooling("mean_sqrt_len", normalize=True),
         lambda c: (hidden(c), input_mask()), F32),
    Case(SequenceBiLSTM, lambda c: SequenceBiLSTM(5, num_layers=2), lambda c: (hidden(c), input_mask()), (F32, F32)),
    Case(ScalarMix, lambda c: ScalarMix(3), lambda c: (floats(B, T, 3, c.hidden_size),), F32),
    # in-graph tokenization (int outputs)
    Case(BertTokenizer, lambda c: BertTokenizer(tokenizer_data.uncased_vocab_file(), do_lower_case=False),
         lambda c: (text_lines(),), None),
    Case(BertPacker, lambda c: BertPacker(24, cls_id=101, sep_id=102), lambda c: (token_ids(),), None),
    # models
    Case(BertEncoder, BertEncoder, lambda c: (encoder_inputs(c),),
         {"sequence_output": F32, "pooled_output": COMPUTE, "encoder_outputs": [F32, F32],
          "embedding_output": COMPUTE}),
    Case(BertPretrainer, BertPretrainer, lambda c: (pretraining_features(c),),
         {"masked_lm_logits": F32, "next_sentence_logits": F32}, pretraining_features),
    Case(BertPretrainer, lambda c: BertPretrainer(c, objective="mlm"),
         lambda c: (pretraining_features(c),), {"masked_lm_logits": F32}, pretraining_features,
         name="BertPretrainer-mlm_only"),
    Case(BertClassifier, lambda c: BertClassifier(c, num_labels=3), lambda c: (encoder_inputs(c),), F32,
         labelled(lambda inputs: {"label_ids": np.array([0, 2], np.int32)})),
    Case(BertClassifier, lambda c: BertClassifier(c, num_labels=1), lambda c: (encoder_inputs(c),), F32,
         labelled(lambda inputs: {"label_ids": np.array([0.5, 4.0], np.float32)}), name="BertClassifier-regression"),
    Case(BertClassifier, lambda c: BertClassifier(c, num_labels=3, task_head="bilstm", bilstm_size=6, bilstm_layers=1),
         lambda c: (encoder_inputs(c),), F32, labelled(lambda inputs: {"label_ids": np.array([0, 2], np.int32)}),
         name="BertClassifier-bilstm"),
    Case(BertTokenClassifier, lambda c: BertTokenClassifier(c, num_labels=5), lambda c: (encoder_inputs(c),), F32,
         labelled(lambda inputs: {"label_ids": np.where(inputs["input_mask"] == 1, np.arange(T) % 5, -100)})),
    Case(BertFeatureTagger, lambda c: BertFeatureTagger(c, 5, "weighted_sum_all", bilstm_size=6, bilstm_layers=1),
         lambda c: (encoder_inputs(c),), F32,
         labelled(lambda inputs: {"label_ids": np.where(inputs["input_mask"] == 1, np.arange(T) % 5, -100)})),
    Case(BertMultipleChoice, BertMultipleChoice, lambda c: (encoder_inputs(c, (B, CHOICES, T)),), F32,
         lambda c: labelled(lambda inputs: {"label_ids": np.array([1, 2], np.int32)})(c, (B, CHOICES, T))),
    *[Case(BertDocumentClassifier, functools.partial(BertDocumentClassifier, num_labels=3, aggregation=aggregation),
           lambda c: (encoder_inputs(c, (B, CHOICES, T)),), F32,  # a document's windows: [B, W, T]
           lambda c: labelled(lambda inputs: {"label_ids": np.array([1, 2], np.int32)})(c, (B, CHOICES, T)),
           name=f"BertDocumentClassifier-{aggregation}") for aggregation in AGGREGATIONS],
    Case(BertSentenceEmbedder, BertSentenceEmbedder, lambda c: (encoder_inputs(c),), F32,
         lambda c: encoder_inputs(c, (B, 2, T))),  # (anchor, positive) pairs: in-batch negatives, no labels
    Case(BertSpanLabeler, BertSpanLabeler, lambda c: (encoder_inputs(c),), {"start_logits": F32, "end_logits": F32},
         labelled(lambda inputs: {"start_positions": np.array([1, 2], np.int32),
                                  "end_positions": np.array([3, 2], np.int32)})),
    Case(BertSpanLabeler, lambda c: BertSpanLabeler(c, task_head="bilstm", bilstm_size=6, bilstm_layers=2),
         lambda c: (encoder_inputs(c),), {"start_logits": F32, "end_logits": F32},
         labelled(lambda inputs: {"start_positions": np.array([1, 2], np.int32),
                                  "end_positions": np.array([3, 2], np.int32)}), name="BertSpanLabeler-bilstm"),
]
MODEL_CASES = [case for case in CASES if case.is_model]
LAYER_CASES = [case for case in CASES if not case.is_model]


def cases(selection):
    marks = {case.id: pytest.mark.skipif(not ON_TENSORFLOW and issubclass(case.cls, TENSORFLOW_ONLY),
                                         reason="tensorflow-text ops: the TensorFlow backend only")
             for case in selection}
    return pytest.mark.parametrize("case", [pytest.param(case, id=case.id, marks=marks[case.id])
                                            for case in selection])


# ----------------------------------------------------------------------------------------------- helpers

def paths(outputs):
    """[(path, output)]: every output of a (nested) structure and its path, e.g. "encoder_outputs/1"."""
    return [("/".join(map(str, path)), value) for path, value in keras.tree.flatten_with_path(outputs)]


def numpy(value):
    """A backend tensor (or array) as a NumPy array, bfloat16 kept."""
    return ops.convert_to_numpy(value)


def flat(outputs):
    """Every output as a NumPy array (a ragged one as a list of lists), in keras.tree order."""
    return [value.to_list() if hasattr(value, "to_list") else numpy(value) for _, value in paths(outputs)]


def assert_same_outputs(got, expected, what):
    """The same paths (a functional model may give a list for a layer's tuple) and values."""
    assert [path for path, _ in paths(got)] == [path for path, _ in paths(expected)], what
    for i, (a, b) in enumerate(zip(flat(got), flat(expected))):
        if isinstance(b, list):
            assert a == b, f"{what}: output {i}"
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{what}: output {i}")


def call(layer, args, training=False):
    return layer(*args, training=training) if not isinstance(layer, (BertTokenizer, BertPacker)) else layer(*args)


def built(case, config):
    """A new instance of the case, called once (built) on its inputs; (instance, args, outputs)."""
    layer = case.make(config)
    args = case.args(config)
    return layer, args, call(layer, args)


def with_policy(policy, function):
    keras.mixed_precision.set_global_policy(policy)
    try:
        return function()
    finally:
        keras.mixed_precision.set_global_policy("float32")


# ----------------------------------------------------------------------------------------------- checks

@cases(CASES)
def test_config_round_trip_gives_the_same_config_and_outputs(case, tiny_config):
    layer, args, expected = built(case, tiny_config)
    config = layer.get_config()
    json.dumps(keras.saving.serialize_keras_object(layer))  # the config of a `.keras` file is JSON
    clone = case.cls.from_config(json.loads(json.dumps(config)))
    call(clone, args)  # built, as the layer is (Keras' LayerNormalization turns its axis into a list when built)
    assert type(clone) is case.cls and clone.get_config() == config
    clone.set_weights(layer.get_weights())
    assert_same_outputs(call(clone, args), expected, case.id)


@cases(CASES)
def test_runs_under_mixed_bfloat16_with_the_documented_float32_parts(case, tiny_config):
    reference, args, expected = built(case, tiny_config)

    def run():
        layer = case.make(tiny_config)
        call(layer, args)
        layer.set_weights(reference.get_weights())
        return layer, call(layer, args), call(layer, args, training=True)

    layer, outputs, training_outputs = with_policy("mixed_bfloat16", run)
    assert layer.dtype_policy.name == "mixed_bfloat16" or isinstance(layer, BertLayerNorm)
    assert all(w.dtype == "float32" for w in layer.trainable_weights)
    if case.dtypes is None:  # ids: nothing to round
        assert_same_outputs(outputs, expected, case.id)
        return
    documented = {path: "bfloat16" if dtype == COMPUTE else dtype for path, dtype in paths(case.dtypes)}
    for mode, values in (("inference", outputs), ("training", training_outputs)):
        got = paths(values)
        assert [path for path, _ in got] == list(documented), f"{case.id} {mode}"
        assert {path: keras.backend.standardize_dtype(value.dtype) for path, value in got} == documented, \
            f"{case.id} {mode}"
        assert all(np.isfinite(numpy(ops.cast(value, "float32"))).all() for _, value in got), f"{case.id} {mode}"
    for (path, value), reference_value in zip(paths(outputs), flat(expected)):
        np.testing.assert_allclose(numpy(ops.cast(value, "float32")), reference_value, atol=0.1,
                                   err_msg=f"{case.id} {path}")


def keras_file_model(case, layer, args):
    """(a functional keras.Model around `layer` with inputs of `args`' shapes, its call arguments)."""
    if isinstance(layer, BertPacker):  # ragged ids: through the tokenizer, from strings
        import tensorflow as tf

        texts = [keras.Input(shape=(), dtype="string") for _ in range(2)]
        tokenizer = BertTokenizer(tokenizer_data.uncased_vocab_file())
        lines = tokenizer_data.corpus_lines()
        return keras.Model(texts, layer([tokenizer(text) for text in texts])), [
            tf.constant(lines[-100:]), tf.constant(lines[-200:-100])]
    inputs = [keras.Input(batch_shape=tuple(arg.shape), dtype=keras.backend.standardize_dtype(arg.dtype))
              for arg in args]
    return keras.Model(inputs, call(layer, inputs)), list(args)


@cases(CASES)
def test_keras_file_round_trip_gives_identical_outputs(case, tiny_config, tmp_path):
    layer, args, _ = built(case, tiny_config)
    path = str(tmp_path / f"{case.id}.keras")
    if case.is_model:
        model, model_args = layer, args
        expected = call(model, args)
        model.save(path)
        restored = keras.saving.load_model(path)
        assert type(restored) is case.cls and restored.get_config() == model.get_config()
        assert_same_outputs(call(restored, model_args), expected, case.id)
    else:
        model, model_args = keras_file_model(case, layer, args)
        expected = model(model_args)
        model.save(path)
        restored = keras.saving.load_model(path)  # every layer is registered: no custom_objects
        assert any(type(inner) is case.cls for inner in restored.layers)
        assert_same_outputs(restored(model_args), expected, case.id)


@cases(CASES)
def test_registered_for_keras_files(case):
    assert keras.saving.get_registered_object(keras.saving.get_registered_name(case.cls)) is case.cls
    assert keras.saving.get_registered_name(case.cls) == f"bert_tf>{case.cls.__name__}"


@cases([case for case in LAYER_CASES if case.dtypes is not None])
def test_every_trainable_weight_gets_a_finite_gradient(case, tiny_config):
    layer, args, _ = built(case, tiny_config)

    def loss():
        return sum(ops.sum(ops.cast(value, "float32") ** 2) for value in keras.tree.flatten(
            call(layer, args, training=True)))

    _, gradients = gradients_of(layer, loss)
    assert layer.trainable_weights or isinstance(layer, (BertDropout, SentencePooling))  # the weightless ones
    for weight, gradient in zip(layer.trainable_weights, gradients):
        assert gradient is not None, weight.path
        assert np.isfinite(numpy(gradient)).all(), weight.path


@cases(MODEL_CASES)
def test_one_training_step_changes_the_weights(case, tiny_config):
    keras.utils.set_random_seed(0)
    model, args, _ = built(case, tiny_config)
    before = [w.numpy().copy() for w in model.trainable_weights]
    optimizer = keras.optimizers.Adam(1e-2)
    if case.features is None:  # the encoder: no objective, a loss of its outputs
        def encoder_loss():
            outputs = model(*args, training=True)
            return ops.mean(outputs["sequence_output"] ** 2) + ops.mean(outputs["pooled_output"] ** 2)

        loss, gradients = gradients_of(model, encoder_loss)
        optimizer.apply(gradients, model.trainable_weights)
        loss = float(numpy(loss))
    else:
        model.compile(optimizer=optimizer, run_eagerly=True)  # one step: tracing would cost more than it saves
        history = model.fit(case.features(tiny_config), batch_size=B, epochs=1, verbose=0)
        loss = history.history["loss"][0]
    assert np.isfinite(loss) and loss > 0
    assert all(np.isfinite(w.numpy()).all() for w in model.weights)
    # Every trainable weight moves, but the attention key biases (softmax ignores what they add to a query's
    # logits) and the multiple-choice head's output bias (the same shift of every choice's score): their
    # gradient is zero but for rounding.
    unchanged = [w.path for w, old in zip(model.trainable_weights, before)
                 if np.array_equal(w.numpy(), old) and not w.path.endswith("key/bias")
                 and not w.path.endswith("bert_multiple_choice/output_head/output_bias")]
    assert not unchanged, unchanged


def test_every_layer_and_model_is_in_the_harness():
    for module in pkgutil.walk_packages(bert_tf.__path__, "bert_tf."):
        if module.name.startswith("bert_tf.cli."):  # the commands define flags; they hold no layers
            continue
        try:
            importlib.import_module(module.name)
        except ModuleNotFoundError as e:  # the JAX loop's modules (no layers) where jax is not installed: the
            if e.name != "jax":  # PyTorch backend's venv (tests/test_backends.py)
                raise
    found, pending = set(), [keras.layers.Layer]
    while pending:
        for subclass in pending.pop().__subclasses__():
            pending.append(subclass)
            if subclass.__module__.startswith("bert_tf.") and subclass not in ABSTRACT:
                found.add(subclass)
    assert found == {case.cls for case in CASES}
