"""Activation functions named as in `bert_config.json` (`hidden_act`)."""

import keras


def gelu(x):
    """Exact GELU, x * Phi(x) with the erf CDF: what the released Google checkpoints and HF's "gelu" use."""
    return keras.activations.gelu(x, approximate=False)


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
