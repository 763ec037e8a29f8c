"""SQuAD features as TFRecords (the original's format), cached by their settings, and their tf.data pipeline.

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
import tensorflow as tf
from absl import logging

from bert_tf import atomic_io
from bert_tf.data import record_framing, tf_example
from bert_tf.data.record_source import RecordSource
from bert_tf.data.squad import examples as squad
from bert_tf.data.tasks.pipeline import trim_batch
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


def _int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))


def _ints(fields, name):
    return list(fields[name].int64_list.value)


def serialize_features(feature, is_training):
    """A SquadFeatures -> serialized tf.train.Example bytes (training or prediction record, see module)."""
    fields = {UNIQUE_IDS: _int_feature([feature.unique_id])}
    fields.update({name: _int_feature(getattr(feature, name)) for name in INPUT_NAMES})
    if is_training:
        fields[START_POSITIONS] = _int_feature([feature.start_position])
        fields[END_POSITIONS] = _int_feature([feature.end_position])
        fields[IS_IMPOSSIBLE] = _int_feature([int(feature.is_impossible)])
    else:
        count = len(feature.tokens)
        fields[EXAMPLE_INDEX] = _int_feature([feature.example_index])
        fields[DOC_SPAN_INDEX] = _int_feature([feature.doc_span_index])
        fields[TOKENS] = tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[t.encode("utf-8") for t in feature.tokens]))
        fields[TOKEN_TO_ORIG_MAP] = _int_feature([feature.token_to_orig_map.get(i, -1) for i in range(count)])
        fields[TOKEN_IS_MAX_CONTEXT] = _int_feature(
            [int(feature.token_is_max_context.get(i, False)) for i in range(count)])
    return tf.train.Example(features=tf.train.Features(feature=fields)).SerializeToString()


def read_prediction_features(record_file):
    """The SquadFeatures of a prediction record file, in order (labels None)."""
    features = []
    for raw in tf.data.TFRecordDataset(record_file).as_numpy_iterator():
        fields = tf.train.Example.FromString(raw).features.feature
        if TOKENS not in fields:
            raise ValueError(f"{record_file}: not a prediction record file (no 'tokens' feature); was it "
                             "written for training?")
        orig_map = _ints(fields, TOKEN_TO_ORIG_MAP)
        max_context = _ints(fields, TOKEN_IS_MAX_CONTEXT)
        features.append(squad.SquadFeatures(
            unique_id=_ints(fields, UNIQUE_IDS)[0], example_index=_ints(fields, EXAMPLE_INDEX)[0],
            doc_span_index=_ints(fields, DOC_SPAN_INDEX)[0],
            tokens=[t.decode("utf-8") for t in fields[TOKENS].bytes_list.value],
            token_to_orig_map={i: w for i, w in enumerate(orig_map) if w >= 0},
            token_is_max_context={i: bool(m) for i, (w, m) in enumerate(zip(orig_map, max_context)) if w >= 0},
            input_ids=_ints(fields, INPUT_IDS), input_mask=_ints(fields, INPUT_MASK),
            segment_ids=_ints(fields, SEGMENT_IDS)))
    return features


def feature_spec(max_seq_length, is_training):
    """{name: FixedLenFeature} of what the model reads: the inputs and `unique_ids`, plus the labels for
    training."""
    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in INPUT_NAMES}
    spec[UNIQUE_IDS] = tf.io.FixedLenFeature([], tf.int64)
    if is_training:
        spec.update({name: tf.io.FixedLenFeature([], tf.int64) for name in SPAN_LABELS})
    return spec


def parsed_batches(dataset, max_seq_length, is_training, batch_size, drop_remainder=False):
    """`dataset` of serialized records -> batches of `batch_size` parsed ones: {name: int32 [batch, ...]} of
    `feature_spec`'s features (squad_dataset's parser)."""
    spec = feature_spec(max_seq_length, is_training)

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        return {name: tf.cast(value, tf.int32) for name, value in parsed.items()}

    return dataset.batch(batch_size, drop_remainder=drop_remainder).map(parse, tf.data.AUTOTUNE)


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
    dataset = parsed_batches(dataset, max_seq_length, is_training, batch_size, drop_remainder=is_training)
    if is_training:
        dataset = dataset.map(lambda batch: trim_batch(batch, widths), tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def read_training_features(record_file, max_seq_length):
    """The training windows of `record_file` in memory, read without TensorFlow (`record_source`, `tf_example`):
    {name: int32 NumPy [windows, ...]} of squad_dataset's features (for `pipeline.make_dataset` or the Grain
    input, e.g. length-grouped batches). ValueError naming the file for a record that is not a training window."""
    spec = {name: (max_seq_length, np.int32) for name in INPUT_NAMES}
    spec.update({name: (1, np.int32) for name in (UNIQUE_IDS, *SPAN_LABELS)})
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
    tmp_file = atomic_io.temporary_path(record_file)
    num_features, progress = 0, Progress("SQuAD features", len(examples), "examples")
    try:
        with tf.io.TFRecordWriter(tmp_file) as writer, progress:
            for feature in squad.convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                                              max_query_length, is_training):
                writer.write(serialize_features(feature, is_training))
                num_features += 1
                if feature.doc_span_index == 0:
                    progress.update(feature.example_index + 1)
        atomic_io.publish([tmp_file], [record_file])
    except tf.errors.OpError as e:  # TensorFlow's writer (e.g. a full disk): one line naming the file
        raise atomic_io.disk_error(e, record_file) from None
    finally:
        if os.path.exists(tmp_file):
            os.remove(tmp_file)
    # Last: workers sharing the cache take the records as complete once the summary is there.
    atomic_io.write_file(summary_file, json.dumps({
        "input_file": os.path.abspath(input_file), "num_examples": len(examples), "num_features": num_features,
        "skipped": read.skipped, **settings}, indent=2))
    logging.info("%s: %d examples -> %d features in %s", input_file, len(examples), num_features, record_file)
    return PreparedSquad(examples, read.skipped, record_file, num_features, False)

