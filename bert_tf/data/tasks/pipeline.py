"""tf.data pipelines for fine-tuning features held in memory (dicts of NumPy arrays with a leading example
axis, as `convert_examples` / `convert_sentences` return them); what they share with the Grain input and
inference, in NumPy, is `batches.py`'s.

The datasets yield feature dicts (labels included as `label_ids`): what the task models' `fit` and the
distributed loop (`bert_tf.training.loop.Trainer`) both take.
"""

import tensorflow as tf

from bert_tf.batch_width import trimmed_width
from bert_tf.data.tasks.batches import GROUP_MEGABATCHES, cut_batch, example_sizes, num_examples
from bert_tf.feature_schema import INPUT_MASK


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


def length_grouped(features, batch_size, seed):
    """An endless dataset of batches (feature dicts, `batch_size` examples each) grouped by length, as
    HuggingFace's LengthGroupedSampler groups them: every epoch the examples are shuffled, cut into
    megabatches of GROUP_MEGABATCHES batches, each megabatch sorted longest first and cut into batches; then,
    unlike HuggingFace (which keeps each megabatch's batches longest first), the order of the epoch's batches
    is shuffled too, so that long and short batches alternate at random.

    Each epoch drops the examples beyond its last full batch (count % batch_size, a different random few every
    epoch). Deterministic from `seed` (stateless random ops of (seed, epoch)), so that tf.data's iterator
    checkpoint (a position in the epochs) resumes at the same batch."""
    lengths = example_sizes(features)
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


def trim_batch(batch, widths=None):
    """A batch of feature dicts with its per-token features (the encoder inputs; `label_ids` where it has their
    shape) cut to the longest example, rounded up to a multiple of TRIM_MULTIPLE or to the smallest of `widths`
    that holds it (`trimmed_width`; see make_dataset), and with no `widths`, a batch of documents [b, W, T] to its
    most windows (`batches.cut_batch`, on tensors)."""
    mask = batch[INPUT_MASK]
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(mask, tf.int32), axis=-1))
    width = trimmed_width(longest, tf.shape(mask)[-1], widths)
    return cut_batch(batch, width, compiled=widths is not None)


