"""LayerNorm (Ba et al. 2016) in float32 whose training forward and backward are each one XLA-fused kernel."""

import keras
import tensorflow as tf


@tf.function(jit_compile=True, reduce_retracing=True)
def _forward(x, gamma, beta, epsilon):
    """x float32 [N, H], gamma/beta [H] -> (y [N, H], mean [N, 1], inverse std [N, 1])."""
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    inverse_std = tf.math.rsqrt(tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True) + epsilon)
    return centered * inverse_std * gamma + beta, mean, inverse_std


@tf.function(jit_compile=True, reduce_retracing=True)
def _backward(x, gamma, mean, inverse_std, dy):
    """The gradients of `_forward` w.r.t. x [N, H], gamma [H] and beta [H], given dy [N, H]."""
    normalized = (x - mean) * inverse_std
    d_normalized = dy * gamma
    dx = inverse_std * (d_normalized - tf.reduce_mean(d_normalized, axis=-1, keepdims=True)
                        - normalized * tf.reduce_mean(d_normalized * normalized, axis=-1, keepdims=True))
    return dx, tf.reduce_sum(dy * normalized, axis=0), tf.reduce_sum(dy, axis=0)


def layer_norm_for_inference(x, gamma, beta, epsilon):
    """LayerNorm over the last axis of float32 x [..., H], gamma/beta [H] -> float32 [..., H], as six plain
    graph ops (two means, a subtraction, a square, rsqrt, multiply-add). Keras' LayerNormalization builds
    the same function from moments + batch_normalization, about twice the ops and twice the time on CPU
    (bench/bench_optimisations.py: `layer_norm`); no XLA here, so an exported SavedModel serves any shape
    without compiling."""
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    variance = tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True)
    return beta + centered * (tf.math.rsqrt(variance + epsilon) * gamma)


def layer_norm_for_training(x, gamma, beta, epsilon):
    """LayerNorm over the last axis of float32 x [..., H] with hand-written gradients.

    TensorFlow's own LayerNorm graph (moments + batch_normalization) and its automatic gradient are about
    twenty separate elementwise and reduction passes over the activations; here the forward is one XLA
    kernel and the backward another (bench/bench_optimisations.py: `layer_norm`), everything else in the
    step stays on the regular (oneDNN/cuDNN) kernels. Same function to float32 rounding.
    """
    @tf.custom_gradient
    def normalize(flat, gamma, beta):
        y, mean, inverse_std = _forward(flat, gamma, beta, epsilon)
        return y, lambda dy: _backward(flat, gamma, mean, inverse_std, dy)

    hidden = tf.shape(x)[-1]
    return tf.reshape(normalize(tf.reshape(x, [-1, hidden]), gamma, beta), tf.shape(x))


@keras.saving.register_keras_serializable(package="bert_tf")
class BertLayerNorm(keras.layers.LayerNormalization):
    """keras.layers.LayerNormalization over the last axis, always float32 (faithful under mixed precision),
    weights `gamma`/`beta` [H] as in Google's `LayerNorm` scopes.

    In training it runs `layer_norm_for_training` (two fused kernels); otherwise `layer_norm_for_inference`.

    Call: x [..., H] (cast to float32), training -> float32 [..., H].
    """

    def __init__(self, epsilon=1e-12, name="LayerNorm", **kwargs):
        kwargs.pop("axis", None)
        kwargs["dtype"] = "float32"
        super().__init__(axis=-1, epsilon=epsilon, name=name, **kwargs)

    def call(self, inputs, training=None):
        gamma, beta = tf.convert_to_tensor(self.gamma), tf.convert_to_tensor(self.beta)  # tensors, not variables
        normalize = layer_norm_for_training if training else layer_norm_for_inference
        return normalize(tf.cast(inputs, tf.float32), gamma, beta, self.epsilon)
