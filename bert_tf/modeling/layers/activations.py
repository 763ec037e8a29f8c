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
from keras import ops

SQRT_HALF = math.sqrt(0.5)  # 1 / sqrt(2)


def gelu(x):
    """Exact GELU, x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))): what the released Google checkpoints and HF's
    "gelu" use, written as HF writes it. Keras' gelu computes the same function with erfc; in bfloat16 this
    form's forward + backward is 1.7x faster on CPU (bench/bench_optimisations.py) and oneDNN still fuses it
    into the preceding MatMul + BiasAdd for inference."""
    return 0.5 * x * (1.0 + ops.erf(x * SQRT_HALF))


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
