"""Gradients on whichever Keras backend runs: the one helper the backend-neutral tests take them from."""

import keras


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
