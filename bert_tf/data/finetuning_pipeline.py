"""tf.data pipelines for fine-tuning features held in memory (dicts of NumPy arrays with a leading example
axis, as `convert_examples` / `convert_sentences` return them).

The datasets yield feature dicts (labels included as `label_ids`): what the task models' `fit` and the
distributed loop (`bert_tf.training.loop.Trainer`) both take.
"""

import numpy as np
import tensorflow as tf

from bert_tf.data.tagging import IGNORE_LABEL


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
        fill = IGNORE_LABEL if key == "label_ids" and values.ndim > 1 else 0
        padded[key] = np.concatenate([values, np.full((extra,) + values.shape[1:], fill, values.dtype)])
    return padded, count


def make_dataset(features, batch_size, training, seed=None, input_context=None):
    """A tf.data.Dataset of feature dicts, `batch_size` examples per batch.

    training=True: this input pipeline's shard (`input_context`, a tf.distribute.InputContext, for
      multi-worker training), shuffled over all of its examples with `seed` (reshuffled every epoch),
      repeated forever, full batches only.
    training=False: one pass in order; the last batch may be short (pad with `pad_to_multiple` first where
      every batch must be full).
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
    return dataset.prefetch(tf.data.AUTOTUNE)
