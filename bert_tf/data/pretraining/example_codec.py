"""Fast serialization of pretraining instances as `tf.train.Example` bytes, in pure Python.

Building `tf.train.Example` protos costs more than making the instance; these bytes are the protobuf wire
format of the same message (what `bert_tf.data.pretraining.records.serialize_pretraining_example` produces, up to
the order of the map entries, which protobuf does not fix), assembled from precomputed varints. Worker
processes use it without calling TensorFlow.

Wire format: Example{features(1): Features{feature(1): repeated map entry{key(1): string, value(2):
Feature{float_list(2) | int64_list(3): {value(1): packed}}}}}.
"""

import operator
import struct

from bert_tf.data.pretraining import records as tfrecord
from bert_tf.feature_schema import (
    INPUT_IDS,
    INPUT_MASK,
    MASKED_LM_IDS,
    MASKED_LM_POSITIONS,
    MASKED_LM_WEIGHTS,
    NEXT_SENTENCE_LABELS,
    SEGMENT_IDS,
)
from bert_tf.protobuf_wire import encode_varint, message_field


class PretrainingExampleEncoder:
    """Serializes one instance to `tf.train.Example` bytes with the original's 7 features, or 4 features
    (no masked_lm_*) for unmasked instances that are masked at training time.

    Args:
      vocab_size: ids are < vocab_size.
      max_seq_length, max_predictions_per_seq: the padded lengths.
    """

    def __init__(self, vocab_size, max_seq_length, max_predictions_per_seq):
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        # Varints of every id and of every length a field can have (values take at most 5 bytes each).
        self._varints = [encode_varint(i) for i in range(max(vocab_size, 5 * max_seq_length + 64))]
        self._keys = {name: message_field(1, name.encode()) for name in
                      tfrecord.ALL_FEATURES}
        self._cache = {}  # entries that depend on lengths only

    def _entry(self, name, packed, float_list=False):
        varints = self._varints
        values = b"\x0a" + varints[len(packed)] + packed  # Int64List / FloatList.value (packed)
        feature = (b"\x12" if float_list else b"\x1a") + varints[len(values)] + values
        entry = self._keys[name] + b"\x12" + varints[len(feature)] + feature
        return b"\x0a" + varints[len(entry)] + entry

    def _cached_entry(self, name, length_a, length_b):
        key = (name, length_a, length_b)
        entry = self._cache.get(key)
        if entry is None:
            if name == INPUT_MASK:
                packed = b"\1" * length_a + b"\0" * (self.max_seq_length - length_a)
            elif name == SEGMENT_IDS:
                packed = b"\0" * length_a + b"\1" * length_b + b"\0" * (self.max_seq_length - length_a - length_b)
            elif name == MASKED_LM_WEIGHTS:
                packed = struct.pack("<f", 1.0) * length_a + b"\0\0\0\0" * (self.max_predictions_per_seq - length_a)
            else:  # next_sentence_labels
                packed = self._varints[length_a]
            entry = self._cache[key] = self._entry(name, packed, float_list=name == MASKED_LM_WEIGHTS)
        return entry

    def encode(self, ids, len_a, is_random_next, positions=None, labels=None):
        """Returns serialized `tf.train.Example` bytes.

        Args:
          ids: list of int, `[CLS] A [SEP] B [SEP]` (masked or not), at most max_seq_length long.
          len_a: int, number of tokens of segment A (segment ids are 0 up to the first [SEP] included).
          is_random_next: bool, next_sentence_labels = 1 if True (random next), else 0.
          positions, labels: lists of int (masked positions and their original ids), or both None for an
            unmasked instance (then the masked_lm_* features are left out).
        """
        varints = self._varints
        entries = [
            # itemgetter(*ids) returns a tuple for 2 or more ids (an instance has at least 5).
            self._entry(INPUT_IDS, b"".join(operator.itemgetter(*ids)(varints))
                        + b"\0" * (self.max_seq_length - len(ids))),
            self._cached_entry(INPUT_MASK, len(ids), 0),
            self._cached_entry(SEGMENT_IDS, len_a + 2, len(ids) - len_a - 2),
        ]
        if positions is not None:
            pad = b"\0" * (self.max_predictions_per_seq - len(positions))
            entries += [
                self._entry(MASKED_LM_POSITIONS, b"".join(map(varints.__getitem__, positions)) + pad),
                self._entry(MASKED_LM_IDS, b"".join(map(varints.__getitem__, labels)) + pad),
                self._cached_entry(MASKED_LM_WEIGHTS, len(positions), 0),
            ]
        entries.append(self._cached_entry(NEXT_SENTENCE_LABELS, int(is_random_next), 0))
        body = b"".join(entries)
        return b"\x0a" + varints[len(body)] + body
