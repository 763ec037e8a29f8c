"""The pretraining heads, against NumPy."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling.layers.pretraining_heads import MaskedLMHead, NextSentenceHead, gather_positions

B, T, H, V, P = 3, 7, 8, 13, 4


def reference_gelu(x):
    return np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(x.astype(np.float64))


def test_gather_positions():
    sequence = np.arange(B * T * H, dtype=np.float32).reshape(B, T, H)
    positions = np.array([[0, 2, 2, 6], [1, 0, 0, 0], [5, 4, 3, 2]])
    expected = np.stack([sequence[b, positions[b]] for b in range(B)])
    np.testing.assert_array_equal(gather_positions(sequence, positions), expected)


def test_masked_lm_head_against_numpy():
    rng = np.random.default_rng(0)
    head = MaskedLMHead(V, H, hidden_act="gelu", layer_norm_eps=1e-12)
    head.build()
    for weight in head.weights:
        weight.assign(rng.normal(0, 0.5, weight.shape).astype(np.float32))
    sequence = rng.normal(size=(B, T, H)).astype(np.float32)
    table = rng.normal(size=(V, H)).astype(np.float32)
    positions = rng.integers(0, T, (B, P))
    logits = head(sequence, positions, table).numpy()
    gathered = np.stack([sequence[b, positions[b]] for b in range(B)])
    hidden = reference_gelu(gathered @ head.dense.kernel.numpy() + head.dense.bias.numpy())
    mean, var = hidden.mean(-1, keepdims=True), hidden.var(-1, keepdims=True)
    hidden = (hidden - mean) / np.sqrt(var + 1e-12) * head.layer_norm.gamma.numpy() + head.layer_norm.beta.numpy()
    expected = hidden @ table.T + head.output_bias.numpy()
    assert logits.shape == (B, P, V) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)
    assert sorted(head.checkpoint_variables()) == [
        "cls/predictions/output_bias", "cls/predictions/transform/LayerNorm/beta",
        "cls/predictions/transform/LayerNorm/gamma", "cls/predictions/transform/dense/bias",
        "cls/predictions/transform/dense/kernel"]


def test_next_sentence_head_against_numpy():
    rng = np.random.default_rng(1)
    head = NextSentenceHead(H)
    head.build()
    head.output_bias.assign([0.5, -0.25])
    pooled = rng.normal(size=(B, H)).astype(np.float32)
    expected = pooled @ head.output_weights.numpy().T + [0.5, -0.25]
    np.testing.assert_allclose(head(pooled).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert tuple(head.output_weights.shape) == (2, H)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_heads_under_mixed_precision_keep_float32_variables_and_logits(policy):
    keras.mixed_precision.set_global_policy(policy)
    try:
        mlm, nsp = MaskedLMHead(V, H), NextSentenceHead(H)
        table = keras.Variable(np.random.default_rng(2).normal(size=(V, H)).astype(np.float32))
        logits = mlm(tf.random.normal((B, T, H)), np.zeros((B, P), np.int32), table)
        nsp_logits = nsp(tf.random.normal((B, H)))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert logits.dtype == tf.float32 and nsp_logits.dtype == tf.float32
    assert mlm.dense.compute_dtype == policy.split("_")[1]
    assert all(w.dtype == "float32" for w in mlm.weights + nsp.weights)
