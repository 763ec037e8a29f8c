"""The pretraining input without TensorFlow: Grain over the records' bytes (`data/record_source.py`), parsed
and, for unmasked records, masked in NumPy; batches of NumPy arrays, the same features as the tf.data input
(`pipeline.pretraining_dataset`).

    batches = pretraining_batches(files, 32, 128, 20, is_training=True, seed=1)
    iterator = iter(batches)             # a grain DatasetIterator: next(iterator) -> {name: array [32, ...]}
    state = iterator.get_state()         # the input position (JSON-able); iterator.set_state(state) resumes it

Training: every record of this worker's shard (records worker, worker + num_workers, ...) in a new random
order each epoch (Grain's global shuffle, from `seed`), repeated forever, full batches only. Evaluation: the
records in order, one pass, the last batch may be short. Unmasked records (`dynamic_masking`, a MaskingConfig)
are masked each time they are read with the original's rules (`masking.mask_tokens`), from a random generator
that Grain derives from `seed` and the record's place in the stream, so a resumed iterator masks as an
uninterrupted one would.
"""

import random

import grain
import numpy as np

from bert_tf.data import tf_example
from bert_tf.data.pretraining import records as tfrecord
from bert_tf.data.pretraining.masking import mask_tokens
from bert_tf.data.record_source import RecordSource
from bert_tf.feature_schema import (
    INPUT_IDS,
    INPUT_MASK,
    INPUT_NAMES,
    MASKED_LM_IDS,
    MASKED_LM_POSITIONS,
    MASKED_LM_WEIGHTS,
    NEXT_SENTENCE_LABELS,
)


def record_spec(max_seq_length, max_predictions_per_seq, masked=True):
    """{name: (length, NumPy dtype)} of a pretraining record's features (`records.pretraining_feature_spec`'s
    shapes), as the input yields them: int32, masked_lm_weights float32."""
    spec = {name: (max_seq_length, np.int32) for name in INPUT_NAMES}
    if masked:
        spec.update({name: (max_predictions_per_seq, np.int32) for name in tfrecord.MASKED_LM_INT_FEATURES})
        spec[MASKED_LM_WEIGHTS] = (max_predictions_per_seq, np.float32)
    spec[NEXT_SENTENCE_LABELS] = (1, np.int32)
    return spec


class _Parse:
    """A record's bytes -> its features (a picklable callable: Grain's worker processes run it)."""

    def __init__(self, spec):
        self.spec = spec

    def __call__(self, serialized):
        return tf_example.parse_fixed(serialized, self.spec, "a pretraining record")


class _Mask:
    """Masks one unmasked example with the original's rules (`masking.mask_tokens`), from Grain's generator."""

    def __init__(self, config):
        self.config = config

    def __call__(self, features, rng):
        config = self.config
        ids = features[INPUT_IDS]
        length = int(features[INPUT_MASK].sum())
        tokens = ids[:length].tolist()
        candidates = [i for i, token in enumerate(tokens) if token not in (config.cls_id, config.sep_id)]
        masked = mask_tokens(tokens, candidates, config, random.Random(int(rng.integers(1 << 62))))
        count, padding = len(masked.positions), config.max_predictions_per_seq - len(masked.positions)
        out = dict(features)
        out[INPUT_IDS] = np.concatenate([np.asarray(tokens, np.int32), ids[length:]])
        out[MASKED_LM_POSITIONS] = np.asarray(masked.positions + [0] * padding, np.int32)
        out[MASKED_LM_IDS] = np.asarray(masked.labels + [0] * padding, np.int32)
        out[MASKED_LM_WEIGHTS] = np.asarray([1.0] * count + [0.0] * padding, np.float32)
        return out


def pretraining_batches(files, batch_size, max_seq_length, max_predictions_per_seq, is_training, input_context=None,
                        dynamic_masking=None, seed=None, repeat=False, worker_processes=0):
    """A Grain IterDataset of pretraining batches from the TFRecord `files` (a list of local paths).

    Args:
      batch_size: examples per batch of this worker.
      max_seq_length, max_predictions_per_seq: the lengths the records were written with.
      is_training: shuffled and repeated forever, full batches (see the module docstring), else one pass in order
        (with `repeat`: in order, repeated forever, full batches: the original's evaluation of max_eval_steps).
      input_context: this worker's shard (num_input_pipelines N, input_pipeline_id i: `devices.InputContext`):
        it reads records i, i + N, ...
      dynamic_masking: None for masked records (7 features), or the MaskingConfig of unmasked ones (4 features).
      seed: int (None: 0); the order and the masks follow from it alone, so that a restored iterator state
        resumes them.
      worker_processes: Grain worker processes that parse and mask (0: in this process).

    Yields {name: array}: input_ids, input_mask, segment_ids int32 [B, max_seq_length]; masked_lm_positions,
    masked_lm_ids int32 and masked_lm_weights float32 [B, max_predictions_per_seq]; next_sentence_labels int32
    [B, 1]."""
    if dynamic_masking is not None and dynamic_masking.max_predictions_per_seq != max_predictions_per_seq:
        raise ValueError(f"max_predictions_per_seq={max_predictions_per_seq} but the masking config has "
                         f"{dynamic_masking.max_predictions_per_seq}")
    num_workers, worker_index = 1, 0
    if input_context is not None:
        num_workers, worker_index = input_context.num_input_pipelines, input_context.input_pipeline_id
    if not 0 <= worker_index < num_workers:
        raise ValueError(f"input pipeline {worker_index} must be in [0, {num_workers})")
    seed = 0 if seed is None else seed
    dataset = grain.MapDataset.source(RecordSource(files))
    if num_workers > 1:
        dataset = dataset[worker_index::num_workers]
    if is_training:
        if len(dataset) < batch_size:
            raise ValueError(f"{len(dataset)} records for this worker are fewer than one batch of {batch_size}")
        dataset = dataset.shuffle(seed=seed).repeat()
    elif repeat:
        dataset = dataset.repeat()
    dataset = dataset.map(_Parse(record_spec(max_seq_length, max_predictions_per_seq, dynamic_masking is None)))
    if dynamic_masking is not None:
        dataset = dataset.seed(seed).random_map(_Mask(dynamic_masking))
    dataset = dataset.batch(batch_size, drop_remainder=is_training or repeat).to_iter_dataset()
    if worker_processes:
        dataset = dataset.mp_prefetch(grain.MultiprocessingOptions(num_workers=worker_processes))
    return dataset
