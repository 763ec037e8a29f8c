"""LayerNorm (Ba et al. 2016) in float32, over the last axis, with Google's `LayerNorm/gamma|beta` weights."""

import keras
from keras import ops

from bert_tf.modeling.layers.tf_kernels import layer_norm_for_training


def layer_norm(x, gamma, beta, epsilon):
    """LayerNorm over the last axis of float32 x [..., H], gamma/beta [H] -> float32 [..., H]: the math, as
    six plain ops (two means, a subtraction, a square, rsqrt, multiply-add). Keras' LayerNormalization builds
    the same function from moments + batch_normalization on TensorFlow, about twice the ops and twice the time
    on CPU (bench/bench_optimisations.py: `layer_norm`); no XLA here, so an exported SavedModel serves any shape
    without compiling."""
    mean = ops.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    variance = ops.mean(ops.square(centered), axis=-1, keepdims=True)
    return beta + centered * (ops.rsqrt(variance + epsilon) * gamma)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertLayerNorm(keras.layers.LayerNormalization):
    """keras.layers.LayerNormalization over the last axis, always float32 (faithful under mixed precision),
    weights `gamma`/`beta` [H] as in Google's `LayerNorm` scopes.

    Computes `layer_norm`; in training on the TensorFlow backend, `tf_kernels.layer_norm_for_training` (the
    same function, forward and backward each one XLA-fused kernel).

    Call: x [..., H] (cast to float32), training -> float32 [..., H].
    """

    def __init__(self, epsilon=1e-12, name="LayerNorm", **kwargs):
        kwargs.pop("axis", None)
        kwargs["dtype"] = "float32"
        super().__init__(axis=-1, epsilon=epsilon, name=name, **kwargs)

    def call(self, inputs, training=None):
        on_tensorflow = keras.backend.backend() == "tensorflow"
        normalize = layer_norm_for_training if training and on_tensorflow else layer_norm
        return normalize(ops.cast(inputs, "float32"), self.gamma, self.beta, self.epsilon)
