"""Gradients on whichever Keras backend runs: the one helper the backend-neutral tests take them from; and the
comparison of two computations' gradients where some are zero but for float rounding."""

import re

import keras
import numpy as np

# A gradient below this share of the largest one is zero but for float rounding.
ROUNDING = 1e-6
# The key biases: a softmax does not change when every key's logit moves alike, so their gradients are zero.
KEY_BIASES = r"attention/self/key/bias$"


def gradients_of(layer, loss):
    """(loss(), [d loss / d w for w in layer.trainable_weights]) on the process's Keras backend; `loss` is a
    function of no arguments that calls `layer` (its weights are read as they are when it is called)."""
    weights = layer.trainable_weights
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            value = loss()
        return value, tape.gradient(value, weights)
    if backend == "jax":
        import jax

        def stateless(values):
            with keras.StatelessScope(state_mapping=list(zip(weights, values))):
                return loss()

        return jax.value_and_grad(stateless)([weight.value for weight in weights])
    if backend == "torch":
        for weight in weights:
            weight.value.grad = None
        value = loss()
        if weights:  # a weightless layer's loss has no graph to go back through
            value.backward()
        return value, [weight.value.grad for weight in weights]
    raise ValueError(f"no gradients for the Keras backend {backend}")


def gradient_difference(want, got, analytically_zero):
    """(worst, zero) of two computations' gradients `want` and `got`, {variable path: NumPy gradient}: each
    gradient against its own largest value, `worst` the largest relative difference; one that is zero but for
    float rounding (below ROUNDING of `want`'s largest gradient) against that bound instead, `zero` the set of
    their paths. Asserts that each of them is one that is zero analytically (its path matches the regular
    expression `analytically_zero`) and that `got` has it below the bound too."""
    largest = max(np.abs(g).max() for g in want.values())
    zero = {path for path, w in want.items() if np.abs(w).max() < ROUNDING * largest}
    assert all(re.search(analytically_zero, path) for path in zero), sorted(zero)
    assert all(np.abs(got[path]).max() < ROUNDING * largest for path in zero)
    worst = max(np.abs(got[path] - w).max() / np.abs(w).max() for path, w in want.items() if path not in zero)
    return worst, zero
