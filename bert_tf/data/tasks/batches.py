"""Batches of fine-tuning features held in memory (dicts of NumPy arrays with a leading example axis, as
`convert_examples` / `convert_sentences` return them), in NumPy: what the tf.data input (`pipeline.py`), the
Grain input (`grain_input.py`) and inference (`bert_tf.batched_inference`: `length_sorted_batches`) share, with
no TensorFlow.
"""

import numpy as np

from bert_tf.batch_width import TRIM_MULTIPLE, present_sequences, trimmed_width
from bert_tf.feature_schema import IGNORE_LABEL, INPUT_MASK, INPUT_NAMES, LABEL_IDS

# Length-grouped training batches are sorted within megabatches of this many batches (HuggingFace's
# LengthGroupedSampler: 50).
GROUP_MEGABATCHES = 50


def num_examples(features):
    """N, the length of the leading axis shared by every feature."""
    lengths = {k: len(v) for k, v in features.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"features have different numbers of examples: {lengths}")
    return next(iter(lengths.values()))


def pad_to_multiple(features, multiple):
    """Appends padding examples until N is a multiple of `multiple` (the original's PaddingInputExample, so
    that evaluation and prediction see every example in fixed-size batches on any number of replicas):
    zeros, `is_real_example` 0 and, for per-token labels, IGNORE_LABEL. Returns (features, N before)."""
    count = num_examples(features)
    extra = -count % multiple
    if not extra:
        return features, count
    padded = {}
    for key, values in features.items():
        fill = IGNORE_LABEL if key == LABEL_IDS and values.ndim > 1 else 0
        padded[key] = np.concatenate([values, np.full((extra,) + values.shape[1:], fill, values.dtype)])
    return padded, count


def example_lengths(features):
    """int64 NumPy [N]: each example's real tokens (`input_mask`; several sequences per example, [N, C, T]: the
    longest of them)."""
    mask = features[INPUT_MASK]
    return mask.reshape(len(mask), -1, mask.shape[-1]).sum(axis=-1).max(axis=-1).astype(np.int64)


def example_sizes(features):
    """int64 NumPy [N]: each example's real tokens in all of its sequences (a document's windows: all of them),
    the key that length-grouped and length-sorted batches sort by."""
    mask = features[INPUT_MASK]
    return mask.reshape(len(mask), -1).sum(axis=-1).astype(np.int64)


def cut_batch(batch, width, compiled=False):
    """`batch` ({name: NumPy array or tensor [b, ..., T]}) with its encoder inputs (and `label_ids` where it has
    their shape) cut to `width` positions and, unless `compiled` (shapes compiled per width: XLA, JAX), a batch of
    documents [b, W, T] to its most windows (`present_sequences`)."""
    mask = batch[INPUT_MASK]
    token_level = {*INPUT_NAMES, *([LABEL_IDS] if LABEL_IDS in batch and batch[LABEL_IDS].ndim == mask.ndim else [])}
    cut = (slice(None), slice(present_sequences(mask))) if not compiled and mask.ndim == 3 else (slice(None),)
    return {k: v[cut][..., :width] if k in token_level else v for k, v in batch.items()}


def bucket_widths(full, buckets=4):
    """The widths a batch is cut to where every shape is compiled: `buckets` steps up to `full` (each a multiple
    of TRIM_MULTIPLE), e.g. 128 -> [32, 64, 96, 128]."""
    step = -(-full // (buckets * TRIM_MULTIPLE)) * TRIM_MULTIPLE
    return sorted({min(full, step * i) for i in range(1, buckets + 1)})


def length_sorted_batches(features, batch_size, widths=None):
    """Yields (indexes [b], inputs) over all examples of `features`, shortest first, for inference.

    `inputs` holds the encoder inputs (input_ids, input_mask, segment_ids, those of them in `features`, each
    [N, ..., T]) of examples `indexes`, cut along the last axis to a width that holds their longest example's
    real tokens (`input_mask`; several sequences per example, [N, C, T]: the longest of them): the smallest
    of `widths` (ascending, the last of them T) that does, or, `widths=None`, that length rounded up to a
    multiple of TRIM_MULTIPLE (at most T), and then also to their most sequences (`present_sequences`).
    Padding is masked out of attention, so each example's outputs at its real positions are the same as with
    the full padding, while short texts no longer pay for T (nor short documents for the windows they lack).
    "Shortest first" counts all of an example's tokens (`example_sizes`).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be >= 1")
    count = num_examples(features)
    if not count:
        return
    full = features[INPUT_MASK].shape[-1]
    if widths is not None and (list(widths) != sorted(widths) or widths[-1] != full):
        raise ValueError(f"widths={list(widths)}: expected ascending widths, the last the full length {full}")
    lengths = example_lengths(features)
    order = np.argsort(example_sizes(features), kind="stable")
    for start in range(0, count, batch_size):
        indexes = order[start:start + batch_size]
        width = trimmed_width(int(lengths[indexes].max()), full, widths)
        yield indexes, cut_batch({k: features[k][indexes] for k in INPUT_NAMES if k in features}, width,
                                 compiled=widths is not None)
