"""Activation functions named as in `bert_config.json` (`hidden_act`).

Why `"gelu"` is the exact erf form although the original code's `gelu` is the tanh approximation: the
google-research/bert repository first computed GELU with erf, and the released checkpoints were trained
with that form; the repository switched its `gelu` to the tanh approximation later (what the bert-tensorflow
package has), without retraining them. HuggingFace's `"gelu"` is the erf form too, for the same reason, and
names the approximation `"gelu_new"`. So a released checkpoint reproduces its outputs here with `"gelu"`
(tests/test_parity.py checks the encoder against HF's outputs of real weights); `"gelu_new"` / `"gelu_tanh"`
select the tanh form (at most 4.7e-4 from the erf form per activation).

See also docs/DESIGN.md, section 4 (numerics).
"""

import math

import keras
import tensorflow as tf
from keras import ops

_SQRT_HALF = math.sqrt(0.5)  # 1 / sqrt(2)


def gelu(x):
    """Exact GELU, x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))): what the released Google checkpoints and HF's
    "gelu" use, written as HF writes it. Keras' gelu computes the same function with erfc; in bfloat16 this
    form's forward + backward is 1.7x faster on CPU (bench/bench_optimisations.py) and oneDNN still fuses it
    into the preceding MatMul + BiasAdd for inference."""
    return 0.5 * x * (1.0 + ops.erf(x * _SQRT_HALF))


@tf.function(jit_compile=True, reduce_retracing=True)
def _gelu_forward(x):
    """gelu(x) in one XLA kernel, computed in float32 and returned in x's dtype."""
    return tf.cast(gelu(tf.cast(x, tf.float32)), x.dtype)


@tf.function(jit_compile=True, reduce_retracing=True)
def _gelu_backward(x, dy):
    """dy * gelu'(x) = dy * (Phi(x) + x phi(x)) in one XLA kernel (float32 inside, x's dtype out)."""
    x32 = tf.cast(x, tf.float32)
    cdf = 0.5 * (1.0 + tf.math.erf(x32 * _SQRT_HALF))
    pdf = tf.exp(-0.5 * tf.square(x32)) * (1.0 / math.sqrt(2.0 * math.pi))
    return tf.cast(tf.cast(dy, tf.float32) * (cdf + x32 * pdf), x.dtype)


@tf.custom_gradient
def gelu_for_training(x):
    """`gelu` with its forward and its hand-written backward each one XLA-fused kernel: the automatic
    gradient of the erf form is about ten elementwise passes over the [tokens, intermediate] activations,
    the largest tensors of a BERT step (bench/bench_optimisations.py: `gelu`). Used by BertDense in
    training, where the pre-activation is kept for the backward anyway; inference keeps `gelu`, which
    oneDNN fuses into the MatMul."""
    return _gelu_forward(x), lambda dy: _gelu_backward(x, dy)


_TRAINING_FORMS = {gelu: gelu_for_training}


def training_form(activation):
    """The form of `activation` to use when gradients are taken (itself unless a fused one exists)."""
    return _TRAINING_FORMS.get(activation, activation)


def gelu_tanh(x):
    """The tanh approximation of GELU (the original code's `gelu`, HF's "gelu_new")."""
    return keras.activations.gelu(x, approximate=True)


_ACTIVATIONS = {
    "gelu": gelu,
    "gelu_new": gelu_tanh,
    "gelu_tanh": gelu_tanh,
    "relu": keras.activations.relu,
    "swish": keras.activations.silu,
    "silu": keras.activations.silu,
    "tanh": keras.activations.tanh,
    "linear": keras.activations.linear,
}


def get_activation(name):
    """Maps a `hidden_act` string to a function; ValueError for unknown names."""
    if name not in _ACTIVATIONS:
        raise ValueError(f"hidden_act={name!r} is not one of {', '.join(sorted(_ACTIVATIONS))}")
    return _ACTIVATIONS[name]
