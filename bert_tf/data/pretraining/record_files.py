"""The pretraining record files of a run, found and checked before any training, without TensorFlow (both inputs,
tf.data's `pipeline.py` and Grain's `grain_input.py`, read what these functions found and checked).

    files = expand_record_patterns("records/part-*.tfrecord,more.tfrecord")   # sorted per pattern
    check_records(files, 128, 20, 30522, masked=True)                       # ValueError naming the file
"""

import glob

from bert_tf.data import record_framing, tf_example
from bert_tf.data.record_source import RecordSource
from bert_tf.feature_schema import INPUT_IDS, MASKED_LM_POSITIONS

_CHECKED_RECORDS = 100  # the first records of the first file are checked against the flags and the config


def _glob(pattern):
    """The files `pattern` matches: local ones with the standard library, `scheme://...` ones (gs://) with
    TensorFlow's file system, which only the tf.data input can read."""
    if "://" not in pattern:
        return sorted(glob.glob(pattern))
    try:
        import tensorflow as tf
    except ImportError:
        raise ValueError(f"input file pattern {pattern!r}: remote files need TensorFlow's file system (pip install "
                         "tensorflow), or copy them to a local disk") from None
    return sorted(tf.io.gfile.glob(pattern))


def expand_record_patterns(input_patterns):
    """Comma-separated string or list of file names / glob patterns -> sorted-per-pattern list of files.

    Raises:
      ValueError: naming a pattern that matches no file.
    """
    if isinstance(input_patterns, str):
        input_patterns = input_patterns.split(",")
    files = []
    for pattern in (p.strip() for p in input_patterns):
        if pattern:
            matches = _glob(pattern)
            if not matches:
                raise ValueError(f"input file pattern {pattern!r} matches no file")
            files.extend(matches)
    if not files:
        raise ValueError("no input file given")
    return files


def check_records(files, max_seq_length, max_predictions_per_seq, vocab_size, masked):
    """ValueError, before any training, if a local file of `files` is truncated or damaged (its framing is
    walked: `record_framing.check_framing`; remote files, `scheme://...`, are left to TensorFlow's reader),
    or if the first records of `files` do not fit the flags or the config: `input_ids` of another length
    than max_seq_length, masked positions of another length than max_predictions_per_seq, masked records
    where unmasked ones are expected (`masked=False`, dynamic masking) or the reverse, token ids >=
    vocab_size, or not pretraining records at all."""
    for path in files:
        if "://" not in path:
            record_framing.check_framing(path)
    first = files[0]
    if "://" in first:  # TensorFlow's file system (`_glob` found it with it)
        import tensorflow as tf

        records = list(tf.data.TFRecordDataset([first]).take(_CHECKED_RECORDS).as_numpy_iterator())
    else:
        source = RecordSource([first])
        records = [source[index] for index in range(min(len(source), _CHECKED_RECORDS))]
    if not records:
        raise ValueError(f"{first}: no records")
    max_id = 0
    for index, record in enumerate(records):
        try:
            features = tf_example.parse_example(record)
        except ValueError as e:
            raise ValueError(f"{first}: record {index} is {e}") from None
        if INPUT_IDS not in features:
            raise ValueError(f"{first}: not pretraining records (features {sorted(features)})")
        lengths = {INPUT_IDS: max_seq_length}
        if masked:
            lengths[MASKED_LM_POSITIONS] = max_predictions_per_seq
        for name, expected in lengths.items():
            if name not in features:
                raise ValueError(f"{first}: records have no {name}; they are unmasked records "
                                 "(create_pretraining_data's dynamic_masking): pass dynamic_masking=True")
            found = len(features[name])
            if found != expected:
                flag = "max_seq_length" if name == INPUT_IDS else "max_predictions_per_seq"
                raise ValueError(f"{first}: records have {name} of length {found} but {flag}={expected}; "
                                 "pass the value the data was created with")
        if not masked and MASKED_LM_POSITIONS in features:
            raise ValueError(f"{first}: records are already masked; drop dynamic_masking")
        max_id = max(max_id, int(features[INPUT_IDS].max(initial=0)))
    if max_id >= vocab_size:
        raise ValueError(f"{first}: token id {max_id} but the config's vocab_size={vocab_size}; the "
                         "records were made with another vocab")
