"""Activation functions named as in `bert_config.json` (`hidden_act`)."""

import keras
from keras import ops


def gelu(x):
    """Exact GELU, x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))): what the released Google checkpoints and HF's
    "gelu" use, written as HF writes it. Keras' gelu computes the same function with erfc; in bfloat16 this
    form's forward + backward is 1.7x faster on CPU (bench/bench_optimisations.py) and oneDNN still fuses it
    into the preceding MatMul + BiasAdd for inference."""
    return 0.5 * x * (1.0 + ops.erf(x * 0.7071067811865476))


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
