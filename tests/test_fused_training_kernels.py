"""The XLA-fused training forms of LayerNorm and GELU compute the same values and gradients as the plain ones."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertEncoder
from bert_tf.modeling.layers.activations import gelu
from bert_tf.modeling.layers.layer_norm import BertLayerNorm
from bert_tf.modeling.layers.tf_kernels import gelu_for_training
from tests.helpers.model_inputs import random_inputs


def values_and_gradients(function, x, variables=(), output_gradient=None):
    """(function(x), d<function(x), output_gradient>/d[x, *variables])."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = function(x)
    return y, tape.gradient(y, [x, *variables], output_gradients=output_gradient)


@pytest.mark.parametrize("shape", [(3, 5, 16), (7, 32)])
def test_layer_norm_training_form_matches_keras_layer_norm(shape):
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(2.0, 3.0, shape), tf.float32)
    dy = tf.constant(rng.normal(size=shape), tf.float32)
    reference = keras.layers.LayerNormalization(epsilon=1e-12)
    fused = BertLayerNorm(epsilon=1e-12)
    reference.build(shape)
    fused.build(shape)
    for layer in (reference, fused):
        layer.gamma.assign(rng.normal(1.0, 0.5, shape[-1:]).astype(np.float32))
        layer.beta.assign(rng.normal(0.0, 0.5, shape[-1:]).astype(np.float32))
    expected, expected_grads = values_and_gradients(
        reference, x, [reference.gamma, reference.beta], dy)
    fused.gamma.assign(reference.gamma)
    fused.beta.assign(reference.beta)
    actual, actual_grads = values_and_gradients(
        lambda v: fused(v, training=True), x, [fused.gamma, fused.beta], dy)
    np.testing.assert_allclose(actual, expected, atol=1e-5)
    for got, want in zip(actual_grads, expected_grads):  # dx, dgamma, dbeta
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    inference = fused(x, training=False)  # layer_norm.layer_norm: the same function in six plain ops
    np.testing.assert_allclose(inference, reference(x), atol=1e-5)


def test_layer_norm_is_float32_for_any_input_and_keeps_its_names():
    layer = BertLayerNorm(epsilon=1e-12)
    x = tf.cast(tf.random.normal([2, 3, 8]), tf.bfloat16)
    for training in (False, True):
        assert layer(x, training=training).dtype == tf.float32
    assert [w.path for w in layer.weights] == ["LayerNorm/gamma", "LayerNorm/beta"]


@pytest.mark.parametrize("dtype, tolerance", [(tf.float32, 1e-6), (tf.bfloat16, 2e-2)])
def test_gelu_training_form_matches_the_automatic_gradient(dtype, tolerance):
    x32 = tf.constant(np.linspace(-6, 6, 1201), tf.float32)
    dy32 = tf.constant(np.cos(np.linspace(0, 40, 1201)), tf.float32)
    expected, (expected_dx,) = values_and_gradients(gelu, x32, output_gradient=dy32)  # float32 reference
    actual, (actual_dx,) = values_and_gradients(gelu_for_training, tf.cast(x32, dtype), output_gradient=tf.cast(
        dy32, dtype))
    assert actual.dtype == dtype and actual_dx.dtype == dtype
    scale = np.maximum(1.0, np.abs(expected))
    assert np.max(np.abs(tf.cast(actual, tf.float32) - tf.cast(gelu(tf.cast(tf.cast(x32, dtype), tf.float32)),
                                                                 tf.float32)) / scale) <= tolerance
    np.testing.assert_allclose(tf.cast(actual_dx, tf.float32), expected_dx, rtol=tolerance, atol=tolerance)


def test_encoder_gradients_with_fused_kernels_equal_the_plain_graph(tiny_config):
    """With dropout off, training=True (fused LayerNorm/GELU) and training=False (plain ops) are the same
    function: same outputs and same gradients for every weight."""
    config = dataclasses.replace(tiny_config, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    encoder = BertEncoder(config)
    encoder.skip_padding = False  # the padded layout in both (training would skip the padding: zeros there)
    inputs = random_inputs(config)
    encoder(inputs)

    def loss_and_gradients(training):
        with tf.GradientTape() as tape:
            outputs = encoder(inputs, training=training)
            loss = tf.reduce_sum(outputs["sequence_output"] ** 2) + tf.reduce_sum(outputs["pooled_output"])
        return outputs["sequence_output"], tape.gradient(loss, encoder.trainable_variables)

    fused_output, fused_grads = loss_and_gradients(True)
    plain_output, plain_grads = loss_and_gradients(False)
    np.testing.assert_allclose(fused_output, plain_output, atol=1e-5)
    assert len(fused_grads) == len(encoder.trainable_variables) > 0
    fused_grads = [tf.convert_to_tensor(g).numpy() for g in fused_grads]
    plain_grads = [tf.convert_to_tensor(g).numpy() for g in plain_grads]
    scale = max(np.abs(g).max() for g in plain_grads)  # key biases have zero gradient: compare to the largest
    for variable, got, want in zip(encoder.trainable_variables, fused_grads, plain_grads):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5 * scale, err_msg=variable.path)
