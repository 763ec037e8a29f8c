"""The tf.data pipeline of SQuAD feature records (`squad/records.py`): what the TensorFlow backend trains on when
the windows are streamed from the cached records, and what a notebook's `model.fit` takes.

    dataset = squad_dataset(prepared.record_file, 384, is_training=True, batch_size=12, seed=1)
"""

import tensorflow as tf

from bert_tf.data.tasks.pipeline import trim_batch
from bert_tf.feature_schema import INPUT_NAMES, SPAN_LABELS, UNIQUE_IDS


def feature_spec(max_seq_length, is_training):
    """{name: FixedLenFeature} of what the model reads: the inputs and `unique_ids`, plus the labels for
    training (`records.training_spec`'s features)."""
    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in INPUT_NAMES}
    spec[UNIQUE_IDS] = tf.io.FixedLenFeature([], tf.int64)
    if is_training:
        spec.update({name: tf.io.FixedLenFeature([], tf.int64) for name in SPAN_LABELS})
    return spec


def squad_dataset(record_file, max_seq_length, is_training, batch_size, input_context=None, seed=None,
                  widths=None):
    """A tf.data.Dataset of feature dicts (int32): `input_ids`, `input_mask`, `segment_ids` [batch, T],
    `unique_ids` [batch], and for training `start_positions`, `end_positions` [batch].

    Training: sharded over the workers of `input_context`, repeated, shuffled (buffer 1000, `seed`), full
    batches only, each cut to its longest window (`pipeline.trim_batch`, with `widths`: the answer positions
    lie in the real tokens). Prediction: every record once, in order, the last batch possibly smaller.
    """
    dataset = tf.data.TFRecordDataset(record_file)
    if is_training:
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        dataset = dataset.repeat().shuffle(1000, seed=seed)
    spec = feature_spec(max_seq_length, is_training)

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        return {name: tf.cast(value, tf.int32) for name, value in parsed.items()}

    dataset = dataset.batch(batch_size, drop_remainder=is_training).map(parse, tf.data.AUTOTUNE)
    if is_training:
        dataset = dataset.map(lambda batch: trim_batch(batch, widths), tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)
