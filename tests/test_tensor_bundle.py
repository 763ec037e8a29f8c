"""formats/tensor_bundle.py: TensorFlow checkpoint bundles read with NumPy only give what TensorFlow's reader
gives (names, shapes, dtypes, values, strings), for bert_tf's own checkpoint of the real MiniLM weights, a
Google-layout one of every dtype and one whose index has several data blocks; damaged files are one ValueError
naming the file; bundles written without TensorFlow are the bytes TensorFlow's SaveV2 writes; and
google.read_checkpoint and write_checkpoint work in a process where TensorFlow cannot be imported."""

import json
import os
import re
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoint_paths
from bert_tf.checkpoints import open_checkpoint
from bert_tf.formats import google, leveldb_table, tensor_bundle
from tools import pypi_data

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAD = {"task_head": "bilstm", "lstm_units": 8}


def save_v2(prefix, tensors):
    """Writes {name: array} with TensorFlow's SaveV2 op, as TF1's Saver did (a name-based bundle)."""
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.convert_to_tensor(tensors[n]) for n in names])


def assert_same(ours, theirs, name):
    """`ours` is `theirs`: the same type, and for arrays the same dtype, shape and bytes (bytes objects for strings)."""
    assert type(ours) is type(theirs), name
    if isinstance(theirs, bytes):
        assert ours == theirs, name
        return
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape), name
    if theirs.dtype == object:
        assert ours.tolist() == theirs.tolist(), name
    else:
        assert ours.tobytes() == theirs.tobytes(), name


def assert_reads_like_tensorflow(prefix):
    """read_bundle(prefix) and tf.train.load_checkpoint(prefix) agree on every tensor; returns read_bundle's."""
    shapes, dtypes, read = tensor_bundle.read_bundle(prefix)
    reader = tf.train.load_checkpoint(prefix)
    assert shapes == {n: tuple(s) for n, s in reader.get_variable_to_shape_map().items()}
    assert dtypes == {n: np.dtype(d.as_numpy_dtype) for n, d in reader.get_variable_to_dtype_map().items()}
    for name in shapes:
        assert_same(read(name), reader.get_tensor(name), name)
    return shapes, dtypes, read


# Defined here and in the process without TensorFlow, which cannot import this module (it imports TensorFlow).
DIGESTS = """
import hashlib
import numpy as np

def digests(source):
    # {name: "dtype shape sha256"} of every tensor of a CheckpointSource
    def digest(value):
        value = np.asarray(value)
        return f"{value.dtype} {value.shape} {hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()}"
    return {name: digest(source.read(name)) for name in sorted(source.shapes)}
"""
_namespace = {}
exec(DIGESTS, _namespace)
digests = _namespace["digests"]


@pytest.fixture(scope="module")
def minilm_bundle(tmp_path_factory):
    """(prefix, {name: array}): the real MiniLM weights written by google.write_checkpoint, config and head
    embedded."""
    source = open_checkpoint(pypi_data.minilm_dir())
    tensors = {name: source.read(name) for name in source.shapes}
    prefix = str(tmp_path_factory.mktemp("minilm_bundle") / "model.ckpt")
    google.write_checkpoint(prefix, tensors, config_json=json.dumps(source.config), head=HEAD)
    return prefix, tensors


@pytest.fixture
def small_bundle(tmp_path):
    """A prefix of two float tensors: `a` (4 bytes) and `b` (4,000 bytes)."""
    prefix = str(tmp_path / "small.ckpt")
    save_v2(prefix, {"a": np.float32(1.5), "b": np.arange(1000, dtype=np.float32)})
    return prefix


def test_minilm_bert_tf_checkpoint_reads_like_tensorflow(minilm_bundle):
    prefix, tensors = minilm_bundle
    shapes, _, read = assert_reads_like_tensorflow(prefix)
    assert set(shapes) == set(tensors) | {google.FORMAT_VERSION_NAME, google.CONFIG_NAME, google.HEAD_NAME}
    for name, value in tensors.items():
        assert np.array_equal(read(name), value), name
    assert json.loads(read(google.HEAD_NAME).decode("utf-8")) == HEAD
    assert json.loads(read(google.CONFIG_NAME))["hidden_size"] == 384
    assert read(google.FORMAT_VERSION_NAME) == google.FORMAT_VERSION


KERNEL = "bert/encoder/layer_0/attention/self/query/kernel"


def every_dtype():
    """{name: array} of a Google-layout checkpoint with tensors of every dtype a bundle holds, strings included."""
    rng = np.random.default_rng(0)
    kernel = KERNEL
    return {
        "bert/embeddings/word_embeddings": rng.normal(size=(50, 8)).astype(np.float32),
        kernel: rng.normal(size=(8, 8)).astype(np.float32),
        kernel + "/adam_m": rng.normal(size=(8, 8)).astype(np.float32),
        kernel + "/adam_v": rng.random(size=(8, 8)).astype(np.float32),
        "global_step": np.int64(1234567890123),
        "dtypes/bfloat16": rng.normal(size=(3, 5)).astype(ml_dtypes.bfloat16),
        "dtypes/float16": rng.normal(size=(7,)).astype(np.float16),
        "dtypes/float64": rng.normal(size=(2, 2)),
        "dtypes/int64": np.array([-(2 ** 62), -1, 0, 2 ** 62], np.int64),
        "dtypes/bool": np.array([[True, False, True]]),
        "dtypes/int8": np.array([-128, 0, 127], np.int8),
        "dtypes/uint8": np.array([0, 255], np.uint8),
        "dtypes/int16": np.array([-32768, 32767], np.int16),
        "dtypes/uint16": np.array([65535], np.uint16),
        "dtypes/int32": np.array([-(2 ** 31), 2 ** 31 - 1], np.int32),
        "dtypes/uint32": np.array([2 ** 32 - 1], np.uint32),
        "dtypes/uint64": np.array([2 ** 64 - 1], np.uint64),
        "dtypes/complex64": np.array([1 + 2j], np.complex64),
        "dtypes/empty": np.zeros((0, 4), np.float32),
        "dtypes/strings": np.array([[b"", "caf\u00e9 \u6f22\u5b57".encode(), b"x" * 300],
                                    [b"\x00\xff", b"a", b"y" * 20000]], dtype=object),
        "dtypes/string_scalar": np.asarray(b"scalar", dtype=object),
    }


def many_names():
    """3,000 names of ~110 bytes: more than TensorFlow's 256 KiB index block size, many restart points each."""
    return {f"layer_{i:04d}/" + "long_scope_name/" * 6 + "kernel": np.full((2,), i, np.int32) for i in range(3000)}


def test_google_layout_of_every_dtype_reads_like_tensorflow(tmp_path, monkeypatch):
    tensors, kernel = every_dtype(), KERNEL
    prefix = str(tmp_path / "bert_model.ckpt")
    save_v2(prefix, tensors)
    shapes, _, read = assert_reads_like_tensorflow(prefix)
    assert set(shapes) == set(tensors)
    assert read("dtypes/string_scalar") == b"scalar" and read("global_step") == 1234567890123

    monkeypatch.setattr(google, "_tensorflow", lambda: None)  # google.read_checkpoint by tensor_bundle
    source = google.read_checkpoint(prefix)
    assert source.format == google.GOOGLE
    assert {kernel + "/adam_m", kernel + "/adam_v", "global_step"} <= set(source.ignored)
    assert np.array_equal(source.read(kernel), tensors[kernel])


def test_index_of_several_data_blocks(tmp_path):
    tensors = many_names()
    prefix = str(tmp_path / "many.ckpt")
    save_v2(prefix, tensors)
    with open(prefix + ".index", "rb") as f:
        assert len(leveldb_table.data_block_handles(prefix + ".index", memoryview(f.read()))) > 1
    shapes, _, read = assert_reads_like_tensorflow(prefix)
    assert len(shapes) == 3000
    assert all(read(name)[0] == value[0] for name, value in tensors.items())


@pytest.mark.parametrize("tensors", [every_dtype, many_names], ids=["every_dtype", "many_names"])
def test_written_without_tensorflow_as_save_v2_writes(tmp_path, tensors):
    """write_bundle's files are SaveV2's, byte for byte (the index's blocks, separators and CRC32Cs, each
    tensor's bytes and checksum, strings' length checksums), so TensorFlow's reader, which checks every CRC32C,
    reads them."""
    tensors = tensors()
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    tensor_bundle.write_bundle(ours, tensors)
    save_v2(theirs, tensors)
    for suffix in (".index", ".data-00000-of-00001"):
        with open(ours + suffix, "rb") as a, open(theirs + suffix, "rb") as b:
            assert a.read() == b.read(), suffix
    shapes, _, _ = assert_reads_like_tensorflow(ours)  # TensorFlow's reader checks every CRC32C
    assert set(shapes) == set(tensors)


def test_write_refuses_a_dtype_before_any_file(tmp_path):
    prefix = str(tmp_path / "x")
    with pytest.raises(ValueError, match="the tensor b has dtype datetime64"):
        tensor_bundle.write_bundle(prefix, {"a": np.zeros(2, np.float32),
                                            "b": np.array(["2026-01-01"], "datetime64[D]")})
    assert os.listdir(tmp_path) == []


def test_checkpoint_index_file_read_as_tensorflow_reads_it(tmp_path):
    """checkpoint_paths.indexed_path reads TensorFlow's own `checkpoint` files (text-format escapes, absolute
    paths, timestamps) as tf.train.get_checkpoint_state does (which joins a relative path to the folder)."""
    for name in ("model.ckpt-7", str(tmp_path / 'we"ird\\ \u00e9' / "model.ckpt-9")):
        tf.compat.v1.train.update_checkpoint_state(str(tmp_path), name, ["model.ckpt-3", name],
                                                   all_model_checkpoint_timestamps=[1.0, 2.5],
                                                   last_preserved_timestamp=0.5)
        expected = tf.train.get_checkpoint_state(str(tmp_path)).model_checkpoint_path
        assert checkpoint_paths.indexed_path(str(tmp_path)) == name
        assert os.path.join(str(tmp_path), name) == expected
    with open(tmp_path / checkpoint_paths.INDEX_FILE, "w") as f:
        f.write("model_checkpoint_path: \"unterminated\n")
    assert checkpoint_paths.indexed_path(str(tmp_path)) is None
    assert checkpoint_paths.indexed_path(str(tmp_path / "missing")) is None


def test_truncated_data_file(small_bundle):
    data = small_bundle + ".data-00000-of-00001"
    with open(data, "r+b") as f:
        f.truncate(100)
    _, _, read = tensor_bundle.read_bundle(small_bundle)
    assert read("a") == np.float32(1.5)
    with pytest.raises(ValueError, match=rf"{re.escape(data)} ends at byte 100, the tensor b needs bytes \d+\.\.\d+: "
                                         "the checkpoint is truncated"):
        read("b")


def test_truncated_index(small_bundle):
    index = small_bundle + ".index"
    with open(index, "r+b") as f:
        f.truncate(os.path.getsize(index) // 2)
    with pytest.raises(ValueError, match=f"{re.escape(index)}: not a TensorFlow checkpoint index"):
        tensor_bundle.read_bundle(small_bundle)


def test_text_file_named_index(tmp_path):
    prefix = str(tmp_path / "x")
    with open(prefix + ".index", "w") as f:
        f.write("model_checkpoint_path: \"model.ckpt-1\"\n" * 3)
    with pytest.raises(ValueError, match=f"{re.escape(prefix)}\\.index: not a TensorFlow checkpoint index"):
        tensor_bundle.read_bundle(prefix)
    with pytest.raises(ValueError, match=f"{re.escape(str(tmp_path))}/nothing\\.index: no such checkpoint index"):
        tensor_bundle.read_bundle(str(tmp_path / "nothing"))


def test_missing_data_shard(small_bundle):
    data = small_bundle + ".data-00000-of-00001"
    os.remove(data)
    message = f"{data}: missing data shard of the checkpoint {small_bundle}"
    with pytest.raises(ValueError, match=re.escape(message)):
        tensor_bundle.read_bundle(small_bundle)


def test_partitioned_variable(tmp_path):
    prefix = str(tmp_path / "sliced.ckpt")
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=["v", "w"], shape_and_slices=["4 2 0,2:-", ""],
                      tensors=[tf.ones([2, 2]), tf.ones([3])])
    with pytest.raises(ValueError, match=re.escape(f"{prefix}.index: the tensor v: partitioned variables are not "
                                                   "supported")):
        tensor_bundle.read_bundle(prefix)


def test_compressed_block_and_unknown_dtype(small_bundle, monkeypatch):
    index = small_bundle + ".index"
    with open(index, "r+b") as f:
        handle = leveldb_table.data_block_handles(index, memoryview(f.read()))[0]
        offset, pos = leveldb_table.varint(handle, 0)
        f.seek(offset + leveldb_table.varint(handle, pos)[0])
        f.write(b"\x01")  # the first data block's trailer: snappy
    with pytest.raises(ValueError, match=f"{re.escape(index)}: a block is compressed"):
        tensor_bundle.read_bundle(small_bundle)
    with open(index, "r+b") as f:
        f.seek(offset + leveldb_table.varint(handle, pos)[0])
        f.write(b"\x00")
    monkeypatch.delitem(tensor_bundle._STORED_DTYPES, 1)  # DT_FLOAT unknown
    message = f"{index}: the tensor a has TensorFlow dtype 1, unknown to this reader"
    with pytest.raises(ValueError, match=re.escape(message)):
        tensor_bundle.read_bundle(small_bundle)


def test_google_read_and_write_checkpoint_without_tensorflow(minilm_bundle, tmp_path):
    """In a process where `import tensorflow` fails, google.read_checkpoint reads the MiniLM bundle through
    tensor_bundle (the same config, head and tensors as through TensorFlow) and write_checkpoint writes it
    again: the same bytes as the bundle written here with TensorFlow imported."""
    prefix, _ = minilm_bundle
    copy = str(tmp_path / "model.ckpt")  # a bundle read through checkpoint_paths.prefix_of's directory rule
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(prefix + suffix, copy + suffix)
    code = f"""
import json, sys
sys.modules["tensorflow"] = None
sys.path.insert(0, {ROOT!r})
from bert_tf import checkpoint_paths
from bert_tf.formats import google
{DIGESTS}
source = google.read_checkpoint(checkpoint_paths.prefix_of({str(tmp_path)!r}))
google.write_checkpoint({str(tmp_path / "again" / "model.ckpt")!r}, {{n: source.read(n) for n in source.shapes}},
                        config_json=json.dumps(source.config), head=source.head)
print(json.dumps({{"format": source.format, "config": source.config, "head": source.head,
                  "ignored": source.ignored, "digests": digests(source), "tf": sys.modules["tensorflow"] is None}}))
"""
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    without_tf = json.loads(result.stdout.strip().splitlines()[-1])
    with_tf = google.read_checkpoint(prefix)
    assert without_tf["tf"] is True
    for suffix in (".index", ".data-00000-of-00001"):
        with open(prefix + suffix, "rb") as a, open(str(tmp_path / "again" / "model.ckpt") + suffix, "rb") as b:
            assert a.read() == b.read(), suffix
    assert (without_tf["format"], without_tf["head"]) == (google.NATIVE, HEAD)
    assert (without_tf["config"], without_tf["ignored"]) == (with_tf.config, with_tf.ignored)
    assert without_tf["digests"] == digests(with_tf)
