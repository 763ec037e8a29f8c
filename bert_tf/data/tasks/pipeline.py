"""tf.data pipelines for fine-tuning features held in memory (dicts of NumPy arrays with a leading example
axis, as `convert_examples` / `convert_sentences` return them).

The datasets yield feature dicts (labels included as `label_ids`): what the task models' `fit` and the
distributed loop (`bert_tf.training.loop.Trainer`) both take. `length_sorted_batches` makes the batches of
inference over such features (run by `bert_tf.batched_inference`).
"""

import numpy as np
import tensorflow as tf

from bert_tf.feature_schema import IGNORE_LABEL, INPUT_MASK, INPUT_NAMES, LABEL_IDS

# Trimmed batches are cut to a multiple of this many positions (fewer distinct shapes to trace/compile).
TRIM_MULTIPLE = 8


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


def make_dataset(features, batch_size, training, seed=None, input_context=None, trim_padding=False):
    """A tf.data.Dataset of feature dicts, `batch_size` examples per batch.

    training=True: this input pipeline's shard (`input_context`, a tf.distribute.InputContext, for
      multi-worker training), shuffled over all of its examples with `seed` (reshuffled every epoch),
      repeated forever, full batches only.
    training=False: one pass in order; the last batch may be short (pad with `pad_to_multiple` first where
      every batch must be full).
    trim_padding: cut each batch's per-token features (the encoder inputs, and per-token `label_ids`) to its
      longest example (`input_mask`), rounded up to a multiple of TRIM_MULTIPLE: the batches keep their
      random composition, the padding they all share is not computed. Shapes then vary from batch to batch
      (keep it off where every shape is compiled: XLA, TPUs).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be >= 1")
    count = num_examples(features)
    dataset = tf.data.Dataset.from_tensor_slices(features)
    if training:
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
            count = len(range(input_context.input_pipeline_id, count, input_context.num_input_pipelines))
        if count < batch_size:
            raise ValueError(f"{count} training examples are fewer than one batch of {batch_size}")
        dataset = dataset.shuffle(count, seed=seed, reshuffle_each_iteration=True).repeat()
    dataset = dataset.batch(batch_size, drop_remainder=training)
    if trim_padding:
        dataset = dataset.map(_trim_batch, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def _trim_batch(batch):
    """A batch of feature dicts with its per-token features cut to the longest example (see make_dataset)."""
    mask = batch[INPUT_MASK]
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(mask, tf.int32), axis=-1))
    width = tf.minimum(tf.shape(mask)[-1], -(-tf.maximum(longest, 1) // TRIM_MULTIPLE) * TRIM_MULTIPLE)
    token_level = {*INPUT_NAMES, *([LABEL_IDS] if batch.get(LABEL_IDS) is not None
                                   and batch[LABEL_IDS].shape.rank == mask.shape.rank else [])}
    return {k: v[..., :width] if k in token_level else v for k, v in batch.items()}


def length_sorted_batches(features, batch_size, widths=None):
    """Yields (indexes [b], inputs) over all examples of `features`, shortest first, for inference.

    `inputs` holds the encoder inputs (input_ids, input_mask, segment_ids, those of them in `features`, each
    [N, ..., T]) of examples `indexes`, cut along the last axis to a width that holds their longest example's
    real tokens (`input_mask`; several sequences per example, [N, C, T]: the longest of them): the smallest
    of `widths` (ascending, the last of them T) that does, or, `widths=None`, that length rounded up to a
    multiple of TRIM_MULTIPLE (at most T). Padding is masked out of attention, so each example's outputs at
    its real positions are the same as with the full padding, while short texts no longer pay for T.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be >= 1")
    count = num_examples(features)
    if not count:
        return
    mask = features[INPUT_MASK]
    full = mask.shape[-1]
    if widths is not None and (list(widths) != sorted(widths) or widths[-1] != full):
        raise ValueError(f"widths={list(widths)}: expected ascending widths, the last the full length {full}")
    lengths = mask.reshape(count, -1, full).sum(axis=-1).max(axis=-1)
    order = np.argsort(lengths, kind="stable")
    for start in range(0, count, batch_size):
        indexes = order[start:start + batch_size]
        longest = max(int(lengths[indexes].max()), 1)
        if widths is None:
            width = min(full, -(-longest // TRIM_MULTIPLE) * TRIM_MULTIPLE)
        else:
            width = next(w for w in widths if w >= longest)
        yield indexes, {k: features[k][indexes][..., :width] for k in INPUT_NAMES if k in features}
