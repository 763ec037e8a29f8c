"""Weight initialisation shared by every BERT layer."""

import keras


def truncated_normal(initializer_range):
    """The original's `create_initializer`: TruncatedNormal(stddev=initializer_range), cut at 2 stddev."""
    return keras.initializers.TruncatedNormal(stddev=initializer_range)

