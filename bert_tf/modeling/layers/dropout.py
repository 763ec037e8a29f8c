"""Dropout whose mask is a counter-based hash of the element's index (SplitMix64), in one XLA-fused kernel."""

import keras
import tensorflow as tf

_LEVELS = 1 << 16  # an element is dropped when 16 bits of its hash, as an integer, are below rate * _LEVELS
_GOLDEN_GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment between consecutive counters


def _u64(value):
    return tf.constant(value, tf.uint64)


def splitmix64(z):
    """SplitMix64's output function (Steele, Lea and Flood 2014; the constants of Vigna's `splitmix64.c`) on
    uint64 z [...]: a bijection whose outputs over z = key + n * golden gamma pass BigCrush."""
    z = tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _u64(30))) * _u64(0xBF58476D1CE4E5B9)
    z = tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _u64(27))) * _u64(0x94D049BB133111EB)
    return tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _u64(31)))


@tf.function(jit_compile=True, reduce_retracing=True)
def _forward(x, key, threshold, scale):
    """x [...], key uint64 [] -> (x with each dropped element zeroed and the others times `scale`, keep bool [...]).
    Element n (row-major) is dropped when the top 16 bits of splitmix64(key + (n + 1) * gamma) are < threshold."""
    counters = tf.cast(tf.range(tf.size(x, out_type=tf.int64)), tf.uint64) + _u64(1)
    bits = tf.cast(tf.bitwise.right_shift(splitmix64(key + counters * _u64(_GOLDEN_GAMMA)), _u64(48)), tf.int32)
    keep = tf.reshape(bits >= threshold, tf.shape(x))
    return tf.where(keep, x * tf.cast(scale, x.dtype), tf.zeros((), x.dtype)), keep


@tf.function(jit_compile=True, reduce_retracing=True)
def _backward(dy, keep, scale):
    """The gradient of `_forward` w.r.t. x: dy [...] where kept, times `scale`; 0 where dropped."""
    return tf.where(keep, dy * tf.cast(scale, dy.dtype), tf.zeros((), dy.dtype))


@keras.saving.register_keras_serializable(package="bert_tf")
class BertDropout(keras.layers.Layer):
    """Inverted dropout (Srivastava et al. 2014): in training, each element is zeroed with probability
    `rate` (to 1/65536) and the others are scaled by 1 / (1 - rate); outside training, the identity.

    The random bits are not drawn from TensorFlow's Philox kernel, whose CPU implementation is most of a
    dropout's time (the dropouts were 8% of the op time of a training step at sequence 512,
    bench/RESULTS.md H48): each element's 16 bits are a hash of its index and a per-call key
    (SplitMix64, a counter-based generator that passes BigCrush), computed, compared and applied in one
    XLA-fused kernel, with the backward another (bench/bench_optimisations.py `dropout`: 3.3-4.7x the speed
    of keras.layers.Dropout, against 1.6-2.1x with 16 Philox bits per element). keras.layers.Dropout draws
    one uniform number per element in the input's dtype (for bfloat16, 7 random bits: a rate of 0.1 drops
    10.16%). The key comes from a Keras SeedGenerator (its state is checkpointed by the training loop, so a
    resumed run draws the same masks).

    Call: inputs [...] (any float dtype), training -> same shape and dtype.
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"dropout rate={rate} must be in [0, 1)")
        self.rate = rate
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self._threshold = round(rate * _LEVELS)

    def call(self, inputs, training=None):
        if not training or not self._threshold:
            return inputs
        seed = tf.cast(tf.math.floormod(self.seed_generator.next(), tf.int32.max - 1), tf.uint64)
        key = splitmix64(tf.bitwise.left_shift(seed[0], _u64(32)) + seed[1])
        threshold = tf.constant(self._threshold, tf.int32)
        scale = tf.constant(1.0 / (1.0 - self.rate), tf.float32)

        @tf.custom_gradient
        def dropout(x):
            y, keep = _forward(x, key, threshold, scale)
            return y, lambda dy: _backward(dy, keep, scale)

        return dropout(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}
