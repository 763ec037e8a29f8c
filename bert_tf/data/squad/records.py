"""SQuAD features as TFRecords (the original's format), cached by their settings, written and read without
TensorFlow (`tf_example`, `record_framing`; their tf.data pipeline is `squad/pipeline.py`).

Training records hold the original's 7 features: `unique_ids` [1], `input_ids`, `input_mask`, `segment_ids`
[max_seq_length], `start_positions`, `end_positions`, `is_impossible` [1] (all int64), so the original's
`train.tf_record` trains here. Prediction records hold the original's 4 (`unique_ids` and the inputs) plus
what post-processing needs: `example_index`, `doc_span_index` [1], `tokens` (bytes, one per token),
`token_to_orig_map` (per token: index in the example's doc_tokens, -1 outside the window) and
`token_is_max_context` (per token 0/1); a cached prediction file therefore replaces the conversion entirely.

`prepare_squad` names the record file after a hash of everything that decides its contents (the JSON file's
bytes, the vocab, lower-casing, the window settings, training or not, SQuAD 2.0 or not), so a second run
with the same settings reads the cache and a run with other settings converts anew. A cached record file
that is truncated or damaged (its framing walked with `record_framing.check_framing`), or that holds
another number of records than its summary says, is converted anew with a warning: the cache is derived
data that the SQuAD file rebuilds.
"""

import dataclasses
import hashlib
import json
import os
import random

import numpy as np
from absl import logging

from bert_tf import atomic_io
from bert_tf.data import record_framing, tf_example
from bert_tf.data.record_source import RecordSource
from bert_tf.data.squad import examples as squad
from bert_tf.feature_schema import (
    DOC_SPAN_INDEX,
    END_POSITIONS,
    EXAMPLE_INDEX,
    INPUT_IDS,
    INPUT_MASK,
    INPUT_NAMES,
    IS_IMPOSSIBLE,
    SEGMENT_IDS,
    SPAN_LABELS,
    START_POSITIONS,
    TOKEN_IS_MAX_CONTEXT,
    TOKEN_TO_ORIG_MAP,
    TOKENS,
    UNIQUE_IDS,
)
from bert_tf.progress import Progress

CACHE_FORMAT_VERSION = 2  # 2: CJK characters are words of their own (examples.split_context)
WRITE_RECORDS = 1024  # records framed and written at a time
TRAINING_SHUFFLE_SEED = 12345  # the original shuffles the training examples with random.Random(12345)


@dataclasses.dataclass
class PreparedSquad:
    """A SQuAD file ready for the model.

    Attributes:
      examples: list of SquadExample (for training in the original's shuffled order);
      skipped: list of (qas_id, reason), training questions whose answer is not in their context;
      record_file: path of the TFRecord file of the features; num_features: how many it holds;
      from_cache: True when the record file was already there.
    """

    examples: list
    skipped: list
    record_file: str
    num_features: int
    from_cache: bool


def serialize_features(feature, is_training):
    """A SquadFeatures -> serialized tf.train.Example bytes (training or prediction record, see module)."""
    fields = {UNIQUE_IDS: [feature.unique_id]}
    fields.update({name: list(getattr(feature, name)) for name in INPUT_NAMES})
    if is_training:
        fields[START_POSITIONS] = [feature.start_position]
        fields[END_POSITIONS] = [feature.end_position]
        fields[IS_IMPOSSIBLE] = [int(feature.is_impossible)]
    else:
        count = len(feature.tokens)
        fields[EXAMPLE_INDEX] = [feature.example_index]
        fields[DOC_SPAN_INDEX] = [feature.doc_span_index]
        fields[TOKENS] = [t.encode("utf-8") for t in feature.tokens]
        fields[TOKEN_TO_ORIG_MAP] = [feature.token_to_orig_map.get(i, -1) for i in range(count)]
        fields[TOKEN_IS_MAX_CONTEXT] = [int(feature.token_is_max_context.get(i, False)) for i in range(count)]
    return tf_example.encode_example(fields)


def read_prediction_features(record_file):
    """The SquadFeatures of a prediction record file, in order (labels None)."""
    features = []
    for index, record in enumerate(RecordSource([record_file])):
        try:
            fields = tf_example.parse_example(record)
        except ValueError as e:
            raise ValueError(f"{record_file}: record {index}: {e}") from None
        if TOKENS not in fields:
            raise ValueError(f"{record_file}: not a prediction record file (no 'tokens' feature); was it "
                             "written for training?")
        ints = {name: fields[name].tolist() for name in fields if name != TOKENS}
        orig_map, max_context = ints[TOKEN_TO_ORIG_MAP], ints[TOKEN_IS_MAX_CONTEXT]
        features.append(squad.SquadFeatures(
            unique_id=ints[UNIQUE_IDS][0], example_index=ints[EXAMPLE_INDEX][0],
            doc_span_index=ints[DOC_SPAN_INDEX][0], tokens=[t.decode("utf-8") for t in fields[TOKENS]],
            token_to_orig_map={i: w for i, w in enumerate(orig_map) if w >= 0},
            token_is_max_context={i: bool(m) for i, (w, m) in enumerate(zip(orig_map, max_context)) if w >= 0},
            input_ids=ints[INPUT_IDS], input_mask=ints[INPUT_MASK], segment_ids=ints[SEGMENT_IDS]))
    return features


def training_spec(max_seq_length):
    """{name: (length, NumPy dtype)} of a training record's features that the model reads: the inputs,
    `unique_ids` and the span labels."""
    spec = {name: (max_seq_length, np.int32) for name in INPUT_NAMES}
    spec.update({name: (1, np.int32) for name in (UNIQUE_IDS, *SPAN_LABELS)})
    return spec


def read_training_features(record_file, max_seq_length):
    """The training windows of `record_file` in memory, read without TensorFlow (`record_source`, `tf_example`):
    {name: int32 NumPy [windows, ...]} of `training_spec`'s features (for `pipeline.make_dataset` or the Grain
    input, e.g. length-grouped batches). ValueError naming the file for a record that is not a training window."""
    spec = training_spec(max_seq_length)
    rows = [tf_example.parse_fixed(record, spec, f"{record_file}: record {index}")
            for index, record in enumerate(RecordSource([record_file]))]
    if not rows:
        raise ValueError(f"{record_file}: no training windows")
    return {name: np.stack([row[name] for row in rows]) if length > 1 else np.concatenate([row[name] for row in rows])
            for name, (length, _) in spec.items()}


def _cache_key(input_file, tokenizer, settings):
    digest = hashlib.sha256()
    with open(input_file, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    digest.update("\n".join(tokenizer.vocab).encode("utf-8"))
    digest.update(json.dumps(settings, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()[:16]


def _cache_damage(record_file, num_features):
    """Why the cached `record_file` cannot be reused (truncated, damaged, or not the `num_features` records
    that its summary counts), or None when it can."""
    try:
        count = record_framing.check_framing(record_file)
    except ValueError as e:
        return str(e)
    if count != num_features:
        return f"{record_file}: {count} records, but its summary counts {num_features}"
    return None


def prepare_squad(input_file, tokenizer, cache_dir, max_seq_length, doc_stride, max_query_length, is_training,
                  version_2_with_negative):
    """Reads a SQuAD file and converts it to a TFRecord file of features in `cache_dir`, or reuses the file a
    previous call with the same settings wrote (`<name>.<train|predict>.<hash>.tf_record` and its `.json`
    summary, written last, whose presence marks the records complete). Shows the conversion's progress in
    examples (`bert_tf.progress`). Returns a PreparedSquad."""
    squad.check_window_settings(max_seq_length, doc_stride, max_query_length)
    read = squad.read_squad_examples(input_file, is_training, version_2_with_negative)
    examples = read.examples
    if is_training:
        random.Random(TRAINING_SHUFFLE_SEED).shuffle(examples)
    settings = {"format": CACHE_FORMAT_VERSION, "do_lower_case": tokenizer.basic_tokenizer.do_lower_case,
                "max_seq_length": max_seq_length, "doc_stride": doc_stride, "max_query_length": max_query_length,
                "is_training": is_training, "version_2_with_negative": version_2_with_negative}
    name = os.path.splitext(os.path.basename(input_file))[0]
    kind = "train" if is_training else "predict"
    record_file = os.path.join(cache_dir, f"{name}.{kind}.{_cache_key(input_file, tokenizer, settings)}.tf_record")
    summary_file = record_file + ".json"
    if os.path.isfile(summary_file) and os.path.isfile(record_file):
        with open(summary_file, encoding="utf-8") as f:
            num_features = json.load(f)["num_features"]
        damage = _cache_damage(record_file, num_features)
        if damage is None:
            logging.info("%s: reusing %d cached features from %s", input_file, num_features, record_file)
            return PreparedSquad(examples, read.skipped, record_file, num_features, True)
        logging.warning("Cached features not reused (%s); converting %s anew", damage, input_file)
    os.makedirs(cache_dir, exist_ok=True)
    num_features, progress = 0, Progress("SQuAD features", len(examples), "examples")
    with atomic_io.atomic_write(record_file, "wb") as f, progress:
        pending = []
        for feature in squad.convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                                          max_query_length, is_training):
            pending.append(serialize_features(feature, is_training))
            num_features += 1
            if feature.doc_span_index == 0:
                progress.update(feature.example_index + 1)
            if len(pending) == WRITE_RECORDS:
                f.write(record_framing.frame(pending))
                pending.clear()
        f.write(record_framing.frame(pending))
    # Last: workers sharing the cache take the records as complete once the summary is there.
    atomic_io.write_file(summary_file, json.dumps({
        "input_file": os.path.abspath(input_file), "num_examples": len(examples), "num_features": num_features,
        "skipped": read.skipped, **settings}, indent=2))
    logging.info("%s: %d examples -> %d features in %s", input_file, len(examples), num_features, record_file)
    return PreparedSquad(examples, read.skipped, record_file, num_features, False)

