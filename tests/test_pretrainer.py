"""BertPretrainer against Google's original pretraining graph (bert-tensorflow's run_pretraining.py, TF1)."""

import sys
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.checkpoints import load_checkpoint
from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from tests.helpers.configs import tiny_config
from tools.original_bert import import_original

BATCH, SEQ, PREDICTIONS = 5, 11, 3


def relu_config(**overrides):
    """Tiny, all dimensions different; relu because the original's "gelu" is the tanh approximation."""
    return tiny_config(**{"hidden_act": "relu", **overrides})


def features(seed=0, batch=BATCH):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(PREDICTIONS + 2, SEQ + 1, size=batch)
    mask = (np.arange(SEQ)[None] < lengths[:, None]).astype(np.int32)
    positions = np.stack([np.sort(rng.choice(np.arange(1, n), PREDICTIONS, replace=False)) for n in lengths])
    weights = (rng.random((batch, PREDICTIONS)) < 0.8).astype(np.float32)
    weights[:, 0] = 1.0
    return {"input_ids": (rng.integers(1, 99, (batch, SEQ)) * mask).astype(np.int32), "input_mask": mask,
            "segment_ids": ((np.arange(SEQ)[None] >= lengths[:, None] // 2) * mask).astype(np.int32),
            "masked_lm_positions": (positions * weights).astype(np.int32),
            "masked_lm_ids": (rng.integers(1, 99, (batch, PREDICTIONS)) * weights).astype(np.int32),
            "masked_lm_weights": weights, "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype(np.int32)}


def contrib_layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None):
    """TF1's tf.contrib.layers.layer_norm as the original calls it (last axis, epsilon 1e-12, variables
    `LayerNorm/beta|gamma`); tf.contrib is gone from TF2."""
    v1 = tf.compat.v1
    with v1.variable_scope(scope, default_name="LayerNorm"):
        size = inputs.shape[-1]
        beta = v1.get_variable("beta", [size], initializer=v1.zeros_initializer())
        gamma = v1.get_variable("gamma", [size], initializer=v1.ones_initializer())
        mean, variance = tf.nn.moments(inputs, [-1], keepdims=True)
        return tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, 1e-12)


def v1_dense(inputs, units, activation=None, name=None, kernel_initializer=None):
    """tf.compat.v1.layers.dense (gone with Keras 3) for the 2-D inputs the original gives it."""
    v1 = tf.compat.v1
    with v1.variable_scope(name, default_name="dense"):
        kernel = v1.get_variable("kernel", [inputs.shape[-1], units], initializer=kernel_initializer)
        bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
        outputs = tf.matmul(inputs, kernel) + bias
        return activation(outputs) if activation is not None else outputs


def original_modules():
    """The original run_pretraining and modeling modules, with a tf.contrib.layers stand-in."""
    contrib = types.ModuleType("tensorflow.contrib")
    contrib.layers = types.SimpleNamespace(layer_norm=contrib_layer_norm)
    sys.modules["tensorflow.contrib"] = contrib
    try:
        return import_original("run_pretraining"), import_original("modeling")
    finally:
        del sys.modules["tensorflow.contrib"]


@pytest.fixture(scope="module")
def original_run(tmp_path_factory):
    """The original graph on random weights: a TF1 checkpoint it saved, its log-probs and losses."""
    original, modeling = original_modules()
    config = modeling.BertConfig.from_dict({k: v for k, v in relu_config().to_dict().items()
                                            if k != "layer_norm_eps"})
    batch = features()
    prefix = str(tmp_path_factory.mktemp("original") / "model.ckpt")
    v1 = modeling.tf  # the module object the original code calls `tf`
    layers = v1.__dict__.get("layers")
    v1.layers = types.SimpleNamespace(dense=v1_dense)
    try:
        results = _run_original_graph(original, modeling, config, batch, prefix)
    finally:
        if layers is None:
            del v1.layers
        else:
            v1.layers = layers
    return prefix, batch, results


def _run_original_graph(original, modeling, config, batch, prefix):
    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as session:
        tensors = {k: tf.constant(v) for k, v in batch.items()}
        model = modeling.BertModel(config, is_training=False, input_ids=tensors["input_ids"],
                                   input_mask=tensors["input_mask"], token_type_ids=tensors["segment_ids"])
        mlm_loss, _, mlm_log_probs = original.get_masked_lm_output(
            config, model.get_sequence_output(), model.get_embedding_table(), tensors["masked_lm_positions"],
            tensors["masked_lm_ids"], tensors["masked_lm_weights"])
        nsp_loss, _, nsp_log_probs = original.get_next_sentence_output(
            config, model.get_pooled_output(), tensors["next_sentence_labels"])
        session.run(v1.global_variables_initializer())
        # Non-zero biases, so that a bias mapped to the wrong place cannot pass.
        for variable in v1.global_variables():
            if variable.name.endswith(("bias:0", "beta:0")):
                variable.load(np.random.default_rng(1).normal(0, 0.1, variable.shape).astype(np.float32), session)
        results = session.run({"mlm_loss": mlm_loss, "mlm_log_probs": mlm_log_probs, "nsp_loss": nsp_loss,
                               "nsp_log_probs": nsp_log_probs})
        v1.train.Saver().save(session, prefix)
    return results


def test_loads_the_original_checkpoint_and_computes_the_same_outputs_and_losses(original_run):
    prefix, batch, expected = original_run
    model = BertPretrainer(relu_config())
    report = load_checkpoint(model, prefix)
    assert report.format == "google" and not report.missing
    assert len(report.mapped) == len(model.checkpoint_variables()) == len(model.weights)
    outputs = model(batch, training=False)
    log_probs = tf.nn.log_softmax(outputs["masked_lm_logits"]).numpy()
    np.testing.assert_allclose(log_probs.reshape(-1, 99), expected["mlm_log_probs"], atol=2e-5)
    np.testing.assert_allclose(tf.nn.log_softmax(outputs["next_sentence_logits"]).numpy(),
                               expected["nsp_log_probs"], atol=2e-5)
    loss = float(model.compute_loss(batch, None, outputs))
    assert loss == pytest.approx(expected["mlm_loss"] + expected["nsp_loss"], rel=1e-5)


def test_checkpoint_names_and_parameter_count():
    config = relu_config()
    model = BertPretrainer(config)
    names = model.checkpoint_variables()
    assert sorted(n for n in names if not n.startswith("bert/")) == [
        "cls/predictions/output_bias", "cls/predictions/transform/LayerNorm/beta",
        "cls/predictions/transform/LayerNorm/gamma", "cls/predictions/transform/dense/bias",
        "cls/predictions/transform/dense/kernel", "cls/seq_relationship/output_bias",
        "cls/seq_relationship/output_weights"]
    h, v = config.hidden_size, config.vocab_size
    # The original run_pretraining.py heads: the MLM head adds H^2 + H + 2H + V, NSP adds 2H + 2.
    assert model.count_params() == model.encoder.count_params() + (h * h + h + 2 * h + v) + (2 * h + 2)
    assert {names[n].path for n in names} == {w.path for w in model.weights}


def test_mlm_only_pretrainer(original_run):
    prefix, batch, _ = original_run
    model = BertPretrainer(relu_config(), objective="mlm")
    report = load_checkpoint(model, prefix)
    assert report.ignored["cls/seq_relationship/output_weights"] == "not part of this model"
    assert sorted(model(batch)) == ["masked_lm_logits"]
    assert tuple(model.objective_metrics()) == ("masked_lm",)
    assert not any("pooler" in v.path for v in model.trainable_variables)  # nothing would train it
    assert not any(n.startswith("cls/seq_relationship") for n in model.checkpoint_variables())


@pytest.mark.slow
def test_compile_fit_evaluate():
    keras.utils.set_random_seed(3)
    model = BertPretrainer(relu_config(hidden_act="gelu"))
    data = tf.data.Dataset.from_tensor_slices(features(batch=40)).batch(8)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = model.fit(data, epochs=4, verbose=0)
    assert set(history.history) == {"loss", "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                                    "next_sentence_loss"}
    assert history.history["loss"][-1] < history.history["loss"][0]
    results = model.evaluate(data, return_dict=True, verbose=0)
    batch = features(batch=40)
    outputs = model(batch, training=False)
    weights = batch["masked_lm_weights"].reshape(-1)
    hits = np.argmax(outputs["masked_lm_logits"].numpy(), -1).reshape(-1) == batch["masked_lm_ids"].reshape(-1)
    assert results["masked_lm_accuracy"] == pytest.approx((hits * weights).sum() / weights.sum(), abs=1e-6)
    nsp_hits = np.argmax(outputs["next_sentence_logits"].numpy(), -1) == batch["next_sentence_labels"][:, 0]
    assert results["next_sentence_accuracy"] == pytest.approx(nsp_hits.mean(), abs=1e-6)


def test_missing_masked_lm_positions():
    with pytest.raises(ValueError, match="expected input_ids, input_mask, segment_ids and masked_lm_positions"):
        BertPretrainer(relu_config())({"input_ids": np.ones((2, 4), np.int32)})
