"""tf.data pipelines for fine-tuning features held in memory (dicts of NumPy arrays with a leading example
axis, as `convert_examples` / `convert_sentences` return them).

The datasets yield feature dicts (labels included as `label_ids`): what the task models' `fit` and the
distributed loop (`bert_tf.training.loop.Trainer`) both take. `length_sorted_batches` makes the batches of
inference over such features (run by `bert_tf.batched_inference`).
"""

import numpy as np
import tensorflow as tf

from bert_tf.batch_width import TRIM_MULTIPLE, trimmed_width
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


def make_dataset(features, batch_size, training, seed=None, input_context=None, trim_padding=False,
                 group_by_length=False, widths=None):
    """A tf.data.Dataset of feature dicts, `batch_size` examples per batch.

    training=True: this input pipeline's shard (`input_context`, a tf.distribute.InputContext, for
      multi-worker training), shuffled over all of its examples with `seed` (reshuffled every epoch),
      repeated forever, full batches only.
    training=False: one pass in order; the last batch may be short (pad with `pad_to_multiple` first where
      every batch must be full).
    group_by_length (training): batches of examples of similar length in a random order (`length_grouped`),
      deterministic from `seed` (0 when None) and resumable at any batch (tf.data's iterator checkpoint).
    trim_padding: cut each batch's per-token features (the encoder inputs, and per-token `label_ids`) to its
      longest example (`input_mask`), rounded up to a multiple of TRIM_MULTIPLE, or to the smallest of
      `widths` (ascending, the last the full length T) that holds it: the batches keep their composition,
      the padding they all share is not computed. Shapes then vary from batch to batch: where every shape is
      compiled (XLA, TPUs) give a few `widths` (`bucket_widths`).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be >= 1")
    count = num_examples(features)
    if training:
        if input_context is not None and input_context.num_input_pipelines > 1:
            shard = slice(input_context.input_pipeline_id, None, input_context.num_input_pipelines)
            features = {k: v[shard] for k, v in features.items()}
            count = num_examples(features)
        if count < batch_size:
            raise ValueError(f"{count} training examples are fewer than one batch of {batch_size}")
    if training and group_by_length:
        dataset = length_grouped(features, batch_size, seed or 0)
    else:
        dataset = tf.data.Dataset.from_tensor_slices(features)
        if training:
            dataset = dataset.shuffle(count, seed=seed, reshuffle_each_iteration=True).repeat()
        dataset = dataset.batch(batch_size, drop_remainder=training)
    if trim_padding:
        dataset = dataset.map(lambda batch: trim_batch(batch, widths), num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def without_autotune(dataset):
    """`dataset` with tf.data's autotuning off, for a fine-tuning job's training input. Autotuning's model
    thread sleeps between optimisations for up to a minute once a pipeline has run a while, and dropping the
    iterator waits for it to wake: the training input is dropped mid-stream when the steps are done, and
    that took 52 s after the 321 steps of the RT job (an RT training iterator dropped after 90 s of use;
    0.4 s with autotuning off). Its AUTOTUNE values then take tf.data's fixed defaults: these inputs are in
    memory or a parse per record, far from the step's cost."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def example_lengths(features):
    """int64 NumPy [N]: each example's real tokens (`input_mask`; several sequences per example, [N, C, T]: the
    longest of them)."""
    mask = features[INPUT_MASK]
    return mask.reshape(len(mask), -1, mask.shape[-1]).sum(axis=-1).max(axis=-1).astype(np.int64)


def length_grouped(features, batch_size, seed):
    """An endless dataset of batches (feature dicts, `batch_size` examples each) grouped by length, as
    HuggingFace's LengthGroupedSampler groups them: every epoch the examples are shuffled, cut into
    megabatches of GROUP_MEGABATCHES batches, each megabatch sorted longest first and cut into batches; then,
    unlike HuggingFace (which keeps each megabatch's batches longest first), the order of the epoch's batches
    is shuffled too, so that long and short batches alternate at random.

    Each epoch drops the examples beyond its last full batch (count % batch_size, a different random few every
    epoch). Deterministic from `seed` (stateless random ops of (seed, epoch)), so that tf.data's iterator
    checkpoint (a position in the epochs) resumes at the same batch."""
    lengths = example_lengths(features)
    count = len(lengths)
    per_epoch = count // batch_size
    megabatch = GROUP_MEGABATCHES * batch_size
    longest = int(lengths.max()) + 1
    lengths = tf.constant(lengths)
    tensors = {k: tf.constant(v) for k, v in features.items()}

    def epoch_batches(epoch):
        order = tf.argsort(tf.random.stateless_uniform([count], seed=tf.stack([seed, 2 * epoch])))
        order = order[:per_epoch * batch_size]
        # Sort by megabatch, then longest first (stable: the shuffled order among equal lengths).
        key = tf.range(per_epoch * batch_size, dtype=tf.int64) // megabatch * longest - tf.gather(lengths, order)
        batches = tf.reshape(tf.gather(order, tf.argsort(key, stable=True)), [per_epoch, batch_size])
        shuffled = tf.argsort(tf.random.stateless_uniform([per_epoch], seed=tf.stack([seed, 2 * epoch + 1])))
        return tf.data.Dataset.from_tensor_slices(tf.gather(batches, shuffled))

    return tf.data.Dataset.counter().flat_map(epoch_batches).map(
        lambda indexes: {k: tf.gather(v, indexes) for k, v in tensors.items()}, num_parallel_calls=tf.data.AUTOTUNE)


def bucket_widths(full, buckets=4):
    """The widths a batch is cut to where every shape is compiled: `buckets` steps up to `full` (each a multiple
    of TRIM_MULTIPLE), e.g. 128 -> [32, 64, 96, 128]."""
    step = -(-full // (buckets * TRIM_MULTIPLE)) * TRIM_MULTIPLE
    return sorted({min(full, step * i) for i in range(1, buckets + 1)})


def trim_batch(batch, widths=None):
    """A batch of feature dicts with its per-token features (the encoder inputs; `label_ids` where it has their
    shape) cut to the longest example, rounded up to a multiple of TRIM_MULTIPLE or to the smallest of `widths`
    that holds it (`trimmed_width`; see make_dataset)."""
    mask = batch[INPUT_MASK]
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(mask, tf.int32), axis=-1))
    width = trimmed_width(longest, tf.shape(mask)[-1], widths)
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
    full = features[INPUT_MASK].shape[-1]
    if widths is not None and (list(widths) != sorted(widths) or widths[-1] != full):
        raise ValueError(f"widths={list(widths)}: expected ascending widths, the last the full length {full}")
    lengths = example_lengths(features)
    order = np.argsort(lengths, kind="stable")
    for start in range(0, count, batch_size):
        indexes = order[start:start + batch_size]
        width = trimmed_width(int(lengths[indexes].max()), full, widths)
        yield indexes, {k: features[k][indexes][..., :width] for k in INPUT_NAMES if k in features}
