"""The width a batch of token features is cut or padded to: its longest example's real tokens rounded up to a
multiple of TRIM_MULTIPLE (at most T), or the smallest of a list of compiled widths that holds them. One rule for
the trimmed training batches and the length-sorted inference batches (data/tasks/) and the in-graph
BertPacker (tokenization/in_graph.py), in Python integers or in TensorFlow ops; and the sequences a batch of
examples of several sequences (a document's windows) is cut to (`present_sequences`)."""

import numpy as np

# Trimmed batches are cut to a multiple of this many positions (fewer distinct shapes to trace/compile).
TRIM_MULTIPLE = 8


def trimmed_width(longest, full, widths=None):
    """The width a batch is cut to: the real tokens of its longest example (`longest`, taken as at least 1)
    rounded up to a multiple of TRIM_MULTIPLE, at most `full` (T); with `widths` (ascending, the last T), the
    smallest of them that holds it. Python (or NumPy) integers give an int; a scalar int32 tensor (a batch in a
    tf.data map or a Keras layer, `full` possibly a tensor too) gives a tensor: the same rule in TensorFlow ops
    (TensorFlow is imported only then)."""
    if isinstance(longest, (int, np.integer)):
        longest = max(int(longest), 1)
        if widths is None:
            return min(full, -(-longest // TRIM_MULTIPLE) * TRIM_MULTIPLE)
        return next(w for w in widths if w >= longest)
    import tensorflow as tf  # a tensor: in the graph that holds it

    longest = tf.maximum(longest, 1)
    if widths is None:
        return tf.minimum(full, -(-longest // TRIM_MULTIPLE) * TRIM_MULTIPLE)
    return tf.reduce_min(tf.boolean_mask(tf.constant(widths), tf.constant(widths) >= longest))


def present_sequences(mask):
    """The most sequences that an example of a batch holds (`mask` [b, C, T]; a sequence is present when its first
    position is real, [CLS]), at least 1. Documents' windows (`classification.convert_documents`) fill the first of
    their W places, so a batch of documents is cut to [b, present_sequences, T] with nothing lost; SWAG's choices
    are all present. A NumPy mask gives an int, a tensor a scalar int32 tensor."""
    if isinstance(mask, np.ndarray):
        return max(int((mask[:, :, 0] > 0).sum(axis=1).max(initial=0)), 1)
    import tensorflow as tf  # a tensor: in the graph that holds it

    return tf.maximum(tf.reduce_max(tf.reduce_sum(tf.cast(mask[:, :, 0] > 0, tf.int32), axis=1)), 1)
