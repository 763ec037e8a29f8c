"""TensorFlow checkpoint bundles (`prefix.index` + `prefix.data-SSSSS-of-NNNNN`) read and written with the
standard library and NumPy only: Google's TF1 checkpoints and bert_tf's own, on a host without TensorFlow (JAX,
PyTorch).

    shapes, dtypes, read = read_bundle(prefix)    # read(name) -> what tf.train.load_checkpoint's get_tensor gives
    write_bundle(prefix, {name: array})           # the bytes TensorFlow's SaveV2 writes for the same tensors

The `.index` file is a LevelDB table (`leveldb_table`). Its entry with the empty key is a BundleHeaderProto,
every other key is a tensor name whose value is a BundleEntryProto: where the tensor's bytes lie in which data
shard, and their masked CRC32C. Both protos are encoded and decoded here by hand (no protobuf). A string
tensor's bytes are the varint lengths of its strings, a masked CRC32C of those, then the strings.

Reading does not verify CRC32C checksums (the blocks' and each tensor's): TensorFlow's reader does, and this
one must work where no CRC32C library is installed. A bit-flipped tensor is read as it is; a truncated file is
not. Writing computes them (google-crc32c), so TensorFlow's reader accepts what is written here.
"""

import os
import struct

import numpy as np

from bert_tf import atomic_io
from bert_tf.formats import leveldb_table
from bert_tf.masked_crc import masked_crc32c
from bert_tf.protobuf_wire import encode_varint, fields, message_field, varint, varint_field

_DT_STRING, _DT_BFLOAT16 = 7, 14
# TensorFlow's DataType enum -> the little-endian NumPy dtype of its stored bytes (bfloat16's are read as uint16,
# then viewed as ml_dtypes.bfloat16; DT_STRING is decoded apart).
_STORED_DTYPES = {1: "<f4", 2: "<f8", 3: "<i4", 4: "u1", 5: "<i2", 6: "i1", 8: "<c8", 9: "<i8", 10: "?",
                  _DT_BFLOAT16: "<u2", 17: "<u2", 18: "<c16", 19: "<f2", 22: "<u4", 23: "<u8"}


def _tensor_entry(serialized):
    """A BundleEntryProto as {"dtype", "shape" (a tuple), "shard_id", "offset", "size", "unsupported" (why this
    reader cannot read the tensor, or None)}."""
    entry = {"dtype": 0, "shape": (), "shard_id": 0, "offset": 0, "size": 0, "unsupported": None}
    for field, value in fields(serialized):
        if field == 2:  # TensorShapeProto: repeated dim (2) {size (1), int64}; unknown_rank (3)
            sizes = [dict(fields(dim)).get(1, 0) for f, dim in fields(value) if f == 2]
            entry["shape"] = tuple(size - (1 << 64) if size >= 1 << 63 else size for size in sizes)
            if any(f == 3 and v for f, v in fields(value)):
                entry["unsupported"] = "its shape has an unknown rank"
        elif field == 7:
            entry["unsupported"] = "partitioned variables are not supported (it is saved in slices)"
        elif field in (1, 3, 4, 5):
            entry[{1: "dtype", 3: "shard_id", 4: "offset", 5: "size"}[field]] = value
    return entry


def _strings(data, count):
    """The `count` strings of a DT_STRING tensor's bytes: `count` varint lengths, a 4-byte CRC32C of the
    lengths, then the strings one after another."""
    lengths, pos = [], 0
    for _ in range(count):
        length, pos = varint(data, pos)
        lengths.append(length)
    pos += 4
    if pos + sum(lengths) != len(data):
        raise ValueError(f"its string lengths add up to {pos + sum(lengths)} bytes, the tensor has {len(data)}")
    strings = np.empty(count, dtype=object)
    for i, length in enumerate(lengths):
        strings[i], pos = bytes(data[pos: pos + length]), pos + length
    return strings


def read_bundle(prefix):
    """(shapes {name: tuple}, dtypes {name: NumPy dtype, `object` for strings}, read) of the checkpoint at
    `prefix`. `read(name)` returns the tensor as TensorFlow's `tf.train.load_checkpoint(prefix).get_tensor`
    does: a NumPy array of its shape (bytes objects for strings), a scalar as a NumPy scalar (`bytes` for a
    string), reading only that tensor's bytes. Every problem is a ValueError naming the file."""
    prefix = os.fspath(prefix)
    index_path = prefix + ".index"
    if not os.path.isfile(index_path):
        raise ValueError(f"{index_path}: no such checkpoint index")
    try:
        entries = leveldb_table.read_table(index_path)
        header = dict(fields(entries.pop(b"")))
        tensors = {key.decode("utf-8"): _tensor_entry(value) for key, value in entries.items()
                   if not key.startswith(b"\x00")}  # keys of a partitioned variable's slices (OrderedCode)
    except KeyError:
        raise ValueError(f"{index_path}: not a TensorFlow checkpoint index (no bundle header)") from None
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as e:
        message = str(e) if str(e).startswith(index_path) else f"{index_path}: damaged checkpoint index ({e})"
        raise ValueError(message) from None
    num_shards = header.get(1, 1)
    if header.get(2, 0) != 0:
        raise ValueError(f"{index_path}: a big-endian checkpoint; only little-endian ones are supported")

    def shard_path(shard_id):
        return f"{prefix}.data-{shard_id:05d}-of-{num_shards:05d}"

    for shard_id in sorted({entry["shard_id"] for entry in tensors.values()}):
        if not os.path.isfile(shard_path(shard_id)):
            raise ValueError(f"{shard_path(shard_id)}: missing data shard of the checkpoint {prefix}")
    dtypes = {}
    for name, entry in tensors.items():
        code = entry["dtype"]
        if entry["unsupported"]:
            raise ValueError(f"{index_path}: the tensor {name}: {entry['unsupported']}")
        if code not in _STORED_DTYPES and code != _DT_STRING:
            raise ValueError(f"{index_path}: the tensor {name} has TensorFlow dtype {code}, unknown to this reader")
        if code == _DT_BFLOAT16:
            import ml_dtypes  # only for bfloat16 tensors

            dtypes[name] = np.dtype(ml_dtypes.bfloat16)
        else:
            dtypes[name] = np.dtype(_STORED_DTYPES.get(code, object))

    def read(name):
        if name not in tensors:
            raise ValueError(f"{index_path}: no tensor {name} in this checkpoint")
        entry, shape = tensors[name], tensors[name]["shape"]
        shard = shard_path(entry["shard_id"])
        if not os.path.isfile(shard):
            raise ValueError(f"{shard}: missing data shard of the checkpoint {prefix}")
        start, end, file_size = entry["offset"], entry["offset"] + entry["size"], os.path.getsize(shard)
        if end > file_size:
            raise ValueError(f"{shard} ends at byte {file_size}, the tensor {name} needs bytes {start}..{end}: "
                             "the checkpoint is truncated")
        count = int(np.prod(shape, dtype=np.int64))
        if entry["dtype"] == _DT_STRING:
            with open(shard, "rb") as f:
                f.seek(start)
                data = memoryview(f.read(entry["size"]))
            try:
                values = _strings(data, count) if count else np.empty(0, object)
            except (IndexError, ValueError) as e:
                raise ValueError(f"{shard}: the string tensor {name} is damaged ({e})") from None
        else:
            stored = np.dtype(_STORED_DTYPES[entry["dtype"]])
            if count * stored.itemsize != entry["size"]:
                raise ValueError(f"{shard}: the tensor {name} of shape {shape} has {entry['size']} bytes, "
                                 f"expected {count * stored.itemsize}")
            values = np.fromfile(shard, dtype=stored, count=count, offset=start).view(dtypes[name])
        values = values.reshape(shape)
        return values[()] if shape == () else values  # a scalar as a NumPy scalar (bytes for a string), as TF

    return {name: entry["shape"] for name, entry in tensors.items()}, dtypes, read


# ------------------------------------------------------------------------------------------------- writing

_HEADER = bytes([1 << 3, 1, 3 << 3 | 2, 2, 1 << 3, 1])  # num_shards 1, little-endian (0: omitted), version {producer 1}
_DTYPE_CODES = {np.dtype(stored): code for code, stored in _STORED_DTYPES.items() if code != _DT_BFLOAT16}


def _dtype_code(name, value):
    """The TensorFlow dtype code of the array `value` (strings: an object, bytes or str array)."""
    if value.dtype == object or value.dtype.kind in "SU":
        return _DT_STRING
    if value.dtype.name == "bfloat16":
        return _DT_BFLOAT16
    code = _DTYPE_CODES.get(value.dtype.newbyteorder("<"))
    if code is None:
        raise ValueError(f"the tensor {name} has dtype {value.dtype}, which a TensorFlow checkpoint cannot hold")
    return code


def _stored(code, value):
    """(the bytes a bundle stores for the array `value` of dtype code `code`, their checksum for the entry).

    Numbers: the little-endian values, checksummed as they are. Strings: the varint lengths, the masked
    CRC32C of the lengths, then the strings; TensorFlow checksums each length as a little-endian uint32 (uint64
    from 4 GiB: older checkpoints had uint32 lengths), not as its varint, so both checksums cover that form."""
    if code != _DT_STRING:
        data = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()
        return data, masked_crc32c(data)
    strings = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in value.reshape(-1).tolist()]
    checked = b"".join(struct.pack("<I" if len(s) <= 0xFFFFFFFF else "<Q", len(s)) for s in strings)
    length_checksum = struct.pack("<I", masked_crc32c(checked))
    data = b"".join(encode_varint(len(s)) for s in strings) + length_checksum + b"".join(strings)
    return data, masked_crc32c(checked + length_checksum + b"".join(strings))


def _entry(code, shape, offset, size, checksum):
    """The BundleEntryProto of a tensor stored in `size` bytes at `offset` of shard 0."""
    dims = b"".join(message_field(2, varint_field(1, dim)) for dim in shape)
    return (varint_field(1, code) + message_field(2, dims) + varint_field(4, offset) + varint_field(5, size)
            + bytes([6 << 3 | 5]) + struct.pack("<I", checksum))


def _open_new(path):
    try:
        return open(path, "wb", buffering=0)
    except OSError as e:
        raise atomic_io.disk_error(e, path, "create") from None


def write_bundle(prefix, tensors):
    """Writes {name: array} as a one-shard bundle at `prefix`, the tensors in name order: the files TensorFlow's
    SaveV2 writes for them, byte for byte. Not atomic by itself: the caller writes under a temporary prefix
    (`checkpoint_paths.write_bundle`). ValueError for a dtype a checkpoint cannot hold (before any file is
    made); OSError naming the file that could not be written."""
    prefix = os.fspath(prefix)
    arrays = {name: np.asarray(tensors[name]) for name in sorted(tensors)}  # code-point order = UTF-8 byte order
    codes = {name: _dtype_code(name, array) for name, array in arrays.items()}
    data_path, index_path = f"{prefix}.data-00000-of-00001", f"{prefix}.index"
    entries, offset = [(b"", _HEADER)], 0
    with _open_new(data_path) as f:
        for name, array in arrays.items():
            data, checksum = _stored(codes[name], array)
            atomic_io.write_all(f, data, data_path)
            entries.append((name.encode("utf-8"), _entry(codes[name], array.shape, offset, len(data), checksum)))
            offset += len(data)
    with _open_new(index_path) as f:
        atomic_io.write_all(f, leveldb_table.table_bytes(entries), index_path)
