"""The tf.data input of pretraining.

Pretraining records (`pretraining_dataset`): the original's 7-feature records (written by this project's or
Google's `create_pretraining_data.py`), or unmasked 4-feature records (`--dynamic_masking`) masked in the
graph with the original's rules (`dynamic_masking_fn`).
"""

import random

import numpy as np
import tensorflow as tf

from bert_tf.data.pretraining import records as tfrecord
from bert_tf.data.pretraining.instances import PretrainingStats
from bert_tf.data.pretraining.record_files import expand_record_patterns
from bert_tf.feature_schema import (
    INPUT_IDS,
    INPUT_MASK,
    INPUT_NAMES,
    MASKED_LM_IDS,
    MASKED_LM_POSITIONS,
    MASKED_LM_WEIGHTS,
    NEXT_SENTENCE_LABELS,
)

UNMASKED_FEATURES = INPUT_NAMES + (NEXT_SENTENCE_LABELS,)


def pretraining_dataset(input_patterns, batch_size, max_seq_length, max_predictions_per_seq, is_training,
                        input_context=None, dynamic_masking=None, seed=None, shuffle_buffer_size=1000,
                        cycle_length=8):
    """Batches of pretraining features from TFRecord files.

    Training: the file list is shuffled every epoch (unless records are sharded, see input_context) and
    repeated forever, `cycle_length` files are interleaved, records go through a shuffle buffer and
    incomplete batches are dropped. Evaluation: files
    in order, one pass, the last batch may be smaller.

    Args:
      input_patterns: comma-separated string or list of files / glob patterns.
      batch_size: examples per batch of this pipeline (under tf.distribute, the per-replica batch size:
        `input_context.get_per_replica_batch_size(global_batch_size)`).
      max_seq_length, max_predictions_per_seq: the lengths the records were written with.
      is_training: bool.
      input_context: `tf.distribute.InputContext` or None. With N input pipelines, pipeline i reads files
        i, i + N, ... when there are at least N files, else every N-th record.
      dynamic_masking: None for records with masks (7 features), or a `MaskingConfig` (with the same
        max_predictions_per_seq) for unmasked records (4 features), masked here anew each time a record is
        read.
      seed: int or None; with an int, file order, shuffling and dynamic masks are reproducible.
      shuffle_buffer_size: records in the training shuffle buffer.
      cycle_length: files read at once in training.

    Returns:
      `tf.data.Dataset` of dicts: input_ids, input_mask, segment_ids int32 [B, max_seq_length];
      masked_lm_positions, masked_lm_ids int32 and masked_lm_weights float32 [B, max_predictions_per_seq];
      next_sentence_labels int32 [B, 1] (1 = random next).
    """
    if dynamic_masking is not None and dynamic_masking.max_predictions_per_seq != max_predictions_per_seq:
        raise ValueError(f"max_predictions_per_seq={max_predictions_per_seq} but the masking config has "
                         f"{dynamic_masking.max_predictions_per_seq}")
    files = expand_record_patterns(input_patterns)
    dataset = tf.data.Dataset.from_tensor_slices(files)
    num_pipelines, pipeline_id = 1, 0
    if input_context is not None:
        num_pipelines, pipeline_id = input_context.num_input_pipelines, input_context.input_pipeline_id
    shard_files = num_pipelines > 1 and len(files) >= num_pipelines
    if shard_files:
        dataset = dataset.shard(num_pipelines, pipeline_id)
    if is_training:
        if num_pipelines == 1 or shard_files:  # record-level sharding needs the same file order everywhere
            dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
        dataset = dataset.repeat()
        dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=min(cycle_length, len(files)),
                                     num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    else:
        dataset = tf.data.TFRecordDataset(dataset)
    if num_pipelines > 1 and not shard_files:
        dataset = dataset.shard(num_pipelines, pipeline_id)
    if is_training:
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed)
    dataset = dataset.batch(batch_size, drop_remainder=is_training)

    spec = tfrecord.pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
    if dynamic_masking is not None:
        spec = {name: spec[name] for name in UNMASKED_FEATURES}

    def parse(serialized):
        features = tf.io.parse_example(serialized, spec)
        return {name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
                for name, value in features.items()}

    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    if dynamic_masking is not None:
        mask = dynamic_masking_fn(dynamic_masking)
        base_seed = tf.constant([random.getrandbits(31) if seed is None else seed, pipeline_id], tf.int64)
        dataset = dataset.enumerate().map(
            lambda index, features: mask(features, tf.random.experimental.stateless_fold_in(base_seed, index)),
            num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def dynamic_masking_fn(config):
    """Returns `mask(features, seed)` that masks a batch of unmasked features in the graph.

    The original's rules (see `bert_tf.data.pretraining.masking`): `num_to_predict = min(P, max(1, round(n * prob)))`
    with n the real tokens ([CLS]/[SEP] included, never masked); words (whole-word masking: a token and its
    following "##" pieces) in random order, a word that would exceed num_to_predict skipped; each chosen
    token 80% [MASK], 10% a random id in [0, vocab_size), 10% kept; positions sorted, padded with 0.

    Args:
      config: `MaskingConfig`; P = config.max_predictions_per_seq, the padded number of predictions.

    `mask(features, seed)`: features has input_ids, input_mask (int32 [B, T]) and more; seed an int64 [2]
    tensor (stateless random ops). Returns the features with input_ids masked and masked_lm_positions,
    masked_lm_ids (int32 [B, P]), masked_lm_weights (float32 [B, P]) added.
    """
    continuation = tf.constant(
        np.frombuffer(config.continuation, np.uint8).astype(bool) if config.continuation is not None
        else np.zeros([config.vocab_size], bool))

    max_predictions_per_seq = config.max_predictions_per_seq

    def mask(features, seed):
        ids, input_mask = features[INPUT_IDS], features[INPUT_MASK]
        batch, length = tf.shape(ids)[0], tf.shape(ids)[1]
        word_seed, decision_seed, random_id_seed = tf.unstack(
            tf.random.experimental.stateless_split(seed, num=3))
        candidate = (input_mask > 0) & (ids != config.cls_id) & (ids != config.sep_id)
        num_tokens = tf.reduce_sum(input_mask, axis=1)
        target = tf.minimum(max_predictions_per_seq, tf.maximum(1, tf.cast(
            tf.round(tf.cast(num_tokens, tf.float64) * config.masked_lm_prob), tf.int32)))  # [B]
        # Words: a candidate starts one unless it is a "##" piece after an earlier candidate.
        earlier = tf.cumsum(tf.cast(candidate, tf.int32), axis=1, exclusive=True) > 0
        starts = candidate & ~(tf.gather(continuation, ids) & earlier)
        word = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # [B, T], word index of each token
        word = tf.where(candidate, word, length)  # non-candidates in an extra bucket
        word_length = tf.math.unsorted_segment_sum(
            tf.ones_like(word), word + (length + 1) * tf.range(batch)[:, None], batch * (length + 1))
        word_length = tf.reshape(word_length, [batch, length + 1])[:, :length]  # [B, T]; 0 = no such word
        # Random word order (words that do not exist last), then the original's greedy pass with skips.
        priority = tf.where(word_length > 0, tf.random.stateless_uniform([batch, length], word_seed), 2.0)
        order = tf.argsort(priority, axis=1)
        sorted_length = tf.gather(word_length, order, batch_dims=1)

        def take(count_and_taken, lengths):
            count, _ = count_and_taken
            taken = (lengths > 0) & (count + lengths <= target)
            return count + tf.where(taken, lengths, 0), taken

        _, taken_sorted = tf.scan(take, tf.transpose(sorted_length),
                                  initializer=(tf.zeros([batch], tf.int32), tf.zeros([batch], tf.bool)))
        taken_word = tf.gather(tf.transpose(taken_sorted), tf.argsort(order, axis=1), batch_dims=1)
        selected = candidate & tf.gather(tf.pad(taken_word, [[0, 0], [0, 1]]), word, batch_dims=1)  # [B, T]
        # Sorted positions of the selected tokens, padded with 0.
        position = tf.range(length)[None, :]
        key = tf.where(selected, position, length + position)
        first = -tf.math.top_k(-key, k=tf.minimum(max_predictions_per_seq, length)).values
        first = tf.pad(first, [[0, 0], [0, max_predictions_per_seq - tf.shape(first)[1]]],
                       constant_values=2 * length)
        valid = first < length
        positions = tf.where(valid, first, 0)
        labels = tf.where(valid, tf.gather(ids, positions, batch_dims=1), 0)
        decision = tf.random.stateless_uniform([batch, length], decision_seed)
        random_ids = tf.random.stateless_uniform([batch, length], random_id_seed, maxval=config.vocab_size,
                                                 dtype=tf.int32)
        replacement = tf.where(decision < 0.8, config.mask_id, tf.where(decision < 0.9, ids, random_ids))
        features = dict(features)
        features[INPUT_IDS] = tf.where(selected, replacement, ids)
        features[MASKED_LM_POSITIONS] = positions
        features[MASKED_LM_IDS] = labels
        features[MASKED_LM_WEIGHTS] = tf.cast(valid, tf.float32)
        return features

    return mask


def record_stats(input_patterns, max_seq_length, max_predictions_per_seq, mask_id, batch_size=1024):
    """Statistics of masked pretraining records (ours or the original's), for comparing outputs.

    A masked position counts as [MASK] if its input id is `mask_id`, kept if it equals the label, random
    otherwise; short = fewer real tokens than max_seq_length. `documents` and `corpus_tokens` stay 0.

    Returns:
      `PretrainingStats`.
    """
    stats = PretrainingStats()
    dataset = pretraining_dataset(input_patterns, batch_size, max_seq_length, max_predictions_per_seq,
                                  is_training=False)
    for batch in dataset.as_numpy_iterator():
        length = batch[INPUT_MASK].sum(axis=1)
        weights = batch[MASKED_LM_WEIGHTS] > 0
        at_positions = np.take_along_axis(batch[INPUT_IDS], batch[MASKED_LM_POSITIONS], axis=1)
        stats.instances += len(length)
        stats.tokens += int(length.sum())
        stats.short += int((length < max_seq_length).sum())
        stats.random_next += int(batch[NEXT_SENTENCE_LABELS].sum())
        stats.masked += int(weights.sum())
        stats.by_mask += int((weights & (at_positions == mask_id)).sum())
        stats.kept += int((weights & (at_positions == batch[MASKED_LM_IDS])).sum())
    stats.by_random = stats.masked - stats.by_mask - stats.kept
    return stats
