"""The records and the tf.train.Example parsing of the input without TensorFlow: `data/record_source.py` gives
each record's bytes as TensorFlow's TFRecordDataset reads them (random access, pickled into other processes),
a damaged file is one ValueError naming it before anything is read; `data/tf_example.py` parses every
Example as `tf.io.parse_single_example` does (packed and unpacked numbers, negative int64s, bytes)."""

import os
import pickle
import re

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import protobuf_wire
from bert_tf.data import tf_example
from bert_tf.data.record_source import RecordSource
from tests.helpers import pretraining_records


@pytest.fixture(scope="module")
def record_files(tmp_path_factory):
    """Two files of real-text pretraining records (State of the Union, MiniLM vocab): 40 and 25 records."""
    directory = tmp_path_factory.mktemp("records")
    return [pretraining_records.write_records(directory / "a.tfrecord", 40, seed=1),
            pretraining_records.write_records(directory / "b.tfrecord", 25, seed=2)]


def test_records_as_tensorflow_reads_them(record_files):
    expected = [r.numpy() for r in tf.data.TFRecordDataset(record_files)]
    source = RecordSource(record_files)
    assert len(source) == len(expected) == 65
    assert [source[i] for i in range(len(source))] == expected
    assert [source[i] for i in (64, 0, 40, 39, -1)] == [expected[i] for i in (64, 0, 40, 39, -1)]
    with pytest.raises(IndexError):
        source[65]
    copy = pickle.loads(pickle.dumps(source))  # as Grain's worker processes get it: no open file travels
    assert copy[50] == expected[50] and copy._fds.keys() == {1}


def test_damaged_files_are_named_before_reading(record_files, tmp_path):
    cut = str(tmp_path / "cut.tfrecord")
    with open(record_files[0], "rb") as f:
        data = f.read()
    with open(cut, "wb") as f:
        f.write(data[: len(data) - 30])
    with pytest.raises(ValueError, match=re.escape(cut) + r": ends inside a record at byte \d+ .* truncated"):
        RecordSource([record_files[1], cut])
    with pytest.raises(ValueError, match="gs://bucket/x: the input without TensorFlow reads local files only"):
        RecordSource(["gs://bucket/x"])
    with pytest.raises(ValueError, match="no record file given"):
        RecordSource([])


def test_examples_parse_as_tensorflow_parses_them(record_files):
    spec = {"input_ids": tf.io.FixedLenFeature([32], tf.int64),
            "masked_lm_weights": tf.io.FixedLenFeature([5], tf.float32)}
    for record in RecordSource(record_files):
        ours = tf_example.parse_example(record)
        assert set(ours) == {"input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
                             "masked_lm_weights", "next_sentence_labels"}
        theirs = tf.io.parse_single_example(record, spec)
        np.testing.assert_array_equal(ours["input_ids"], theirs["input_ids"].numpy())
        assert ours["masked_lm_weights"].tobytes() == theirs["masked_lm_weights"].numpy().tobytes()


def test_every_kind_of_feature(tmp_path):
    """Negative and 64-bit int64s, floats, bytes, empty lists; and the unpacked encoding protobuf also allows."""
    ints = [0, 1, 127, 128, 300, 2 ** 31, 2 ** 63 - 1, -1, -(2 ** 63), -300]
    floats = [0.0, -1.5, 3.4e38, 1e-45, float("inf")]
    example = tf.train.Example(features=tf.train.Features(feature={
        "ints": tf.train.Feature(int64_list=tf.train.Int64List(value=ints)),
        "floats": tf.train.Feature(float_list=tf.train.FloatList(value=floats)),
        "bytes": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"", b"\x00\xff", "é".encode()])),
        "empty": tf.train.Feature(int64_list=tf.train.Int64List(value=[])),
    }))
    parsed = tf_example.parse_example(example.SerializeToString())
    assert parsed["ints"].dtype == np.int64 and parsed["ints"].tolist() == ints
    assert parsed["floats"].dtype == np.float32 and parsed["floats"].tobytes() == np.float32(floats).tobytes()
    assert parsed["bytes"].tolist() == [b"", b"\x00\xff", "é".encode()] and len(parsed["empty"]) == 0
    # Unpacked: each value its own field (tag 1, varint / fixed32), as a writer without packing emits them.
    unpacked_ints = b"".join(b"\x08" + protobuf_wire.encode_varint(v % 2 ** 64) for v in ints)
    unpacked_floats = b"".join(b"\x0d" + np.float32(v).tobytes() for v in floats)
    for kind, payload, expected in ((3, unpacked_ints, ints), (2, unpacked_floats, np.float32(floats).tolist())):
        feature = protobuf_wire.message_field(kind, payload)
        entry = protobuf_wire.message_field(1, b"x") + protobuf_wire.message_field(2, feature)
        serialized = protobuf_wire.message_field(1, protobuf_wire.message_field(1, entry))
        assert tf_example.parse_example(serialized)["x"].tolist() == expected
        assert tf.io.parse_single_example(serialized, {"x": tf.io.VarLenFeature(
            tf.int64 if kind == 3 else tf.float32)})["x"].values.numpy().tolist() == expected


def test_fixed_lengths_are_checked(record_files):
    record = RecordSource(record_files)[0]
    spec = {"input_ids": (32, np.int32), "next_sentence_labels": (1, np.int32)}
    parsed = tf_example.parse_fixed(record, spec)
    assert parsed["input_ids"].dtype == np.int32 and parsed["input_ids"].shape == (32,)
    with pytest.raises(ValueError, match="a record: feature input_ids has 32 values, expected 64"):
        tf_example.parse_fixed(record, {"input_ids": (64, np.int32)})
    with pytest.raises(ValueError, match=r"part-3: no feature label_ids \(it has input_ids, input_mask, "):
        tf_example.parse_fixed(record, {"label_ids": (1, np.int32)}, "part-3")
    with pytest.raises(ValueError, match="not a tf.train.Example"):
        tf_example.parse_example(b"\x0a\xff\xff")
    assert os.path.getsize(record_files[0]) > 0
