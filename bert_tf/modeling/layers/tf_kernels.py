"""The TensorFlow backend's fused kernels of the layers' math: GELU, LayerNorm and dropout, each forward and
backward one XLA-fused kernel with a hand-written gradient.

The math of each layer is defined once, in `keras.ops`, in its own file (activations.gelu,
layer_norm.layer_norm, dropout.BertDropout); on the JAX and PyTorch backends that definition runs (under
`jax.jit` XLA fuses it by itself). On the TensorFlow backend the layers call these kernels instead in training,
where TensorFlow's executor would otherwise run the automatic gradient as a dozen separate elementwise passes
(bench/bench_optimisations.py: `gelu`, `layer_norm`, `dropout`). Same functions to float rounding
(tests/test_fused_training_kernels.py); dropout draws its own masks (a hash of the element's index), with the
same rate and scale. The layers call these only on the TensorFlow backend; TensorFlow is imported at the
first call, so that bert_tf.modeling loads on a host without it.
"""

import functools
import math

from bert_tf.modeling.layers.activations import SQRT_HALF, gelu


def _tensorflow():
    import tensorflow  # the TensorFlow backend's kernels: imported when first used, not when bert_tf loads

    return tensorflow


def xla_kernel(function):
    """`function` as one XLA kernel (tf.function with jit_compile), compiled at its first call (and once per
    new input shape). Also the optimizer's (training/optimization.py)."""
    compiled = None

    @functools.wraps(function)
    def call(*args, **kwargs):
        nonlocal compiled
        if compiled is None:
            compiled = _tensorflow().function(function, jit_compile=True, reduce_retracing=True, autograph=False)
        return compiled(*args, **kwargs)

    return call

# ------------------------------------------------------------------------------------------------- GELU


@xla_kernel
def _gelu_forward(x):
    """gelu(x) in one XLA kernel, computed in float32 and returned in x's dtype."""
    tf = _tensorflow()
    return tf.cast(gelu(tf.cast(x, tf.float32)), x.dtype)


@xla_kernel
def _gelu_backward(x, dy):
    """dy * gelu'(x) = dy * (Phi(x) + x phi(x)) in one XLA kernel (float32 inside, x's dtype out)."""
    tf = _tensorflow()
    x32 = tf.cast(x, tf.float32)
    cdf = 0.5 * (1.0 + tf.math.erf(x32 * SQRT_HALF))
    pdf = tf.exp(-0.5 * tf.square(x32)) * (1.0 / math.sqrt(2.0 * math.pi))
    return tf.cast(tf.cast(dy, tf.float32) * (cdf + x32 * pdf), x.dtype)


def gelu_for_training(x):
    """`activations.gelu` with its forward and its hand-written backward each one XLA-fused kernel: the
    automatic gradient of the erf form is about ten elementwise passes over the [tokens, intermediate]
    activations, the largest tensors of a BERT step. Used by BertDense in training, where the pre-activation
    is kept for the backward anyway; inference keeps `gelu`, which oneDNN fuses into the MatMul."""
    @_tensorflow().custom_gradient
    def fused(x):
        return _gelu_forward(x), lambda dy: _gelu_backward(x, dy)

    return fused(x)


# -------------------------------------------------------------------------------------------- LayerNorm


@xla_kernel
def _layer_norm_forward(x, gamma, beta, epsilon):
    """x float32 [N, H], gamma/beta [H] -> (y [N, H], mean [N, 1], inverse std [N, 1])."""
    tf = _tensorflow()
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    inverse_std = tf.math.rsqrt(tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True) + epsilon)
    return centered * inverse_std * gamma + beta, mean, inverse_std


@xla_kernel
def _layer_norm_backward(x, gamma, mean, inverse_std, dy):
    """The gradients of `_layer_norm_forward` w.r.t. x [N, H], gamma [H] and beta [H], given dy [N, H]."""
    tf = _tensorflow()
    normalized = (x - mean) * inverse_std
    d_normalized = dy * gamma
    dx = inverse_std * (d_normalized - tf.reduce_mean(d_normalized, axis=-1, keepdims=True)
                        - normalized * tf.reduce_mean(d_normalized * normalized, axis=-1, keepdims=True))
    return dx, tf.reduce_sum(dy * normalized, axis=0), tf.reduce_sum(dy, axis=0)


def layer_norm_for_training(x, gamma, beta, epsilon):
    """`layer_norm.layer_norm` of float32 x [..., H] with gamma/beta [H], forward one XLA kernel and the
    hand-written backward another: TensorFlow's automatic gradient of it is about twenty separate elementwise
    and reduction passes over the activations; everything else in the step stays on the regular
    (oneDNN/cuDNN) kernels."""
    tf = _tensorflow()
    @tf.custom_gradient
    def normalize(flat, gamma, beta):
        y, mean, inverse_std = _layer_norm_forward(flat, gamma, beta, epsilon)
        return y, lambda dy: _layer_norm_backward(flat, gamma, mean, inverse_std, dy)

    hidden = tf.shape(x)[-1]
    gamma, beta = tf.convert_to_tensor(gamma), tf.convert_to_tensor(beta)  # tensors, not variables
    return tf.reshape(normalize(tf.reshape(x, [-1, hidden]), gamma, beta), tf.shape(x))


# ---------------------------------------------------------------------------------------------- dropout

_LEVELS = 1 << 16  # an element is dropped when 16 bits of its hash, as an integer, are below rate * _LEVELS
_GOLDEN_GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment between consecutive counters


def _u64(value):
    tf = _tensorflow()
    return tf.constant(value, tf.uint64)


def splitmix64(z):
    """SplitMix64's output function (Steele, Lea and Flood 2014; the constants of Vigna's `splitmix64.c`) on
    uint64 z [...]: a bijection whose outputs over z = key + n * golden gamma pass BigCrush."""
    tf = _tensorflow()
    z = tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _u64(30))) * _u64(0xBF58476D1CE4E5B9)
    z = tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _u64(27))) * _u64(0x94D049BB133111EB)
    return tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _u64(31)))


@xla_kernel
def _dropout_forward(x, key, threshold, scale):
    """x [...], key uint64 [] -> (x with each dropped element zeroed and the others times `scale`, keep bool [...]).
    Element n (row-major) is dropped when the top 16 bits of splitmix64(key + (n + 1) * gamma) are < threshold."""
    tf = _tensorflow()
    counters = tf.cast(tf.range(tf.size(x, out_type=tf.int64)), tf.uint64) + _u64(1)
    bits = tf.cast(tf.bitwise.right_shift(splitmix64(key + counters * _u64(_GOLDEN_GAMMA)), _u64(48)), tf.int32)
    keep = tf.reshape(bits >= threshold, tf.shape(x))
    return tf.where(keep, x * tf.cast(scale, x.dtype), tf.zeros((), x.dtype)), keep


@xla_kernel
def _dropout_backward(dy, keep, scale):
    """The gradient of `_dropout_forward` w.r.t. x: dy [...] where kept, times `scale`; 0 where dropped."""
    tf = _tensorflow()
    return tf.where(keep, dy * tf.cast(scale, dy.dtype), tf.zeros((), dy.dtype))


def hashed_dropout(x, rate, seed):
    """Inverted dropout of x [...] (any float dtype) at `rate` (to 1/65536), keyed by `seed` (int32 [2], a Keras
    SeedGenerator's draw) -> same shape and dtype.

    The random bits are not drawn from TensorFlow's Philox kernel, whose CPU implementation is most of a
    dropout's time (the dropouts were 8% of the op time of a training step at sequence 512, bench/RESULTS.md
    H48): each element's 16 bits are a hash of its index and the key (SplitMix64, a counter-based generator that
    passes BigCrush), computed, compared and applied in one XLA-fused kernel, with the backward another
    (bench/bench_optimisations.py `dropout`: 3.3-4.7x the speed of keras.layers.Dropout)."""
    tf = _tensorflow()
    seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.uint64)
    key = splitmix64(tf.bitwise.left_shift(seed[0], _u64(32)) + seed[1])
    if not round(rate * _LEVELS):
        return x
    threshold = tf.constant(round(rate * _LEVELS), tf.int32)
    scale = tf.constant(1.0 / (1.0 - rate), tf.float32)

    @tf.custom_gradient
    def dropout(x):
        y, keep = _dropout_forward(x, key, threshold, scale)
        return y, lambda dy: _dropout_backward(dy, keep, scale)

    return dropout(tf.convert_to_tensor(x))  # a tensor, also when x is a variable (custom_gradient's rule)
