"""Weight initialisation shared by every BERT layer."""

import keras


def truncated_normal(initializer_range):
    """The original's `create_initializer`: TruncatedNormal(stddev=initializer_range), cut at 2 stddev."""
    return keras.initializers.TruncatedNormal(stddev=initializer_range)


def layer_norm(epsilon, name="LayerNorm"):
    """A LayerNorm computed in float32 whatever the dtype policy (faithful numerics under mixed precision).

    Its output is float32; the next Dense casts it to the compute dtype.
    """
    return keras.layers.LayerNormalization(axis=-1, epsilon=epsilon, name=name, dtype="float32")
