"""Reads a TensorFlow checkpoint bundle (`prefix.index` + `prefix.data-SSSSS-of-NNNNN`) with the standard
library and NumPy only: Google's TF1 checkpoints and bert_tf's own on a host without TensorFlow (JAX, PyTorch).

The `.index` file is a LevelDB table (data blocks of prefix-compressed key/value entries with restart points,
each followed by a 5-byte trailer: compression type and masked CRC32C; an index block of data block handles;
a metaindex block; a 48-byte footer ending in a magic number). Its entry with the empty key is a
BundleHeaderProto, every other key is a tensor name whose value is a BundleEntryProto: where the tensor's
bytes lie in which data shard. Both protos are decoded here by hand (no protobuf).

CRC32C checksums (the blocks' and each tensor's) are not verified: TensorFlow's reader does, but a pure-Python
CRC over a checkpoint of gigabytes is too slow. A bit-flipped tensor is read as it is; a truncated file is not.
"""

import os
import struct

import numpy as np

_TABLE_MAGIC = 0xDB4775248B80FB57
_FOOTER_BYTES = 48
_BLOCK_TRAILER_BYTES = 5  # 1 byte compression type + 4 bytes masked CRC32C
_DT_STRING, _DT_BFLOAT16 = 7, 14
# TensorFlow's DataType enum -> the little-endian NumPy dtype of its stored bytes (bfloat16's are read as uint16,
# then viewed as ml_dtypes.bfloat16; DT_STRING is decoded apart).
_STORED_DTYPES = {1: "<f4", 2: "<f8", 3: "<i4", 4: "u1", 5: "<i2", 6: "i1", 8: "<c8", 9: "<i8", 10: "?",
                  _DT_BFLOAT16: "<u2", 17: "<u2", 18: "<c16", 19: "<f2", 22: "<u4", 23: "<u8"}


def _varint(buf, pos):
    """(the unsigned varint at buf[pos], the position after it)."""
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _proto_fields(buf):
    """(field number, value) of each field of a serialized protobuf message: an int for varint and fixed
    fields, bytes for length-delimited ones (nested messages, strings, packed repeated)."""
    pos = 0
    while pos < len(buf):
        tag, pos = _varint(buf, pos)
        wire_type = tag & 7
        if wire_type == 0:
            value, pos = _varint(buf, pos)
        elif wire_type == 1:
            value, pos = struct.unpack_from("<Q", buf, pos)[0], pos + 8
        elif wire_type == 2:
            length, pos = _varint(buf, pos)
            value, pos = bytes(buf[pos: pos + length]), pos + length
        elif wire_type == 5:
            value, pos = struct.unpack_from("<I", buf, pos)[0], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire_type}")
        yield tag >> 3, value


def _block_entries(block):
    """(key, value) of each entry of a table block (its bytes without the trailer), in key order. An entry is
    varints (shared key bytes, unshared key bytes, value length), the unshared key bytes, then the value; the
    block ends with the uint32 offsets of its restart points (entries sharing nothing) and their count."""
    num_restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    entries_end = len(block) - 4 * (num_restarts + 1)
    key, pos = b"", 0
    while pos < entries_end:
        shared, pos = _varint(block, pos)
        unshared, pos = _varint(block, pos)
        value_length, pos = _varint(block, pos)
        key = key[:shared] + bytes(block[pos: pos + unshared])
        pos += unshared
        yield key, block[pos: pos + value_length]
        pos += value_length


def _read_block(path, table, handle):
    """The bytes of the block at BlockHandle bytes `handle` (varints offset, size) of the table `table`."""
    offset, pos = _varint(handle, 0)
    size, _ = _varint(handle, pos)
    end = offset + size + _BLOCK_TRAILER_BYTES
    if end > len(table):
        raise ValueError(f"{path} ends at byte {len(table)}, a block needs bytes {offset}..{end}: "
                         "the checkpoint index is truncated")
    if table[offset + size] != 0:
        raise ValueError(f"{path}: a block is compressed (type {table[offset + size]}); TensorFlow writes "
                         "checkpoint indexes uncompressed, this reader does not decompress")
    return table[offset: offset + size]


def _data_block_handles(path, table):
    """The BlockHandle bytes of every data block of the table `table` (the bytes of the file `path`), in
    order: the values of its index block, found through the footer."""
    if len(table) < _FOOTER_BYTES or struct.unpack_from("<Q", table, len(table) - 8)[0] != _TABLE_MAGIC:
        raise ValueError(f"{path}: not a TensorFlow checkpoint index (no table magic number at its end: "
                         "another file, or a truncated index)")
    footer = table[len(table) - _FOOTER_BYTES:]
    _, pos = _varint(footer, _varint(footer, 0)[1])  # skips the metaindex handle
    return [bytes(handle) for _, handle in _block_entries(_read_block(path, table, footer[pos:]))]


def _table_entries(path):
    """{key: value bytes} of every entry of the LevelDB table at `path`."""
    with open(path, "rb") as f:
        table = memoryview(f.read())
    return {key: bytes(value) for handle in _data_block_handles(path, table)
            for key, value in _block_entries(_read_block(path, table, handle))}


def _tensor_entry(serialized):
    """A BundleEntryProto as {"dtype", "shape" (a tuple), "shard_id", "offset", "size", "unsupported" (why this
    reader cannot read the tensor, or None)}."""
    entry = {"dtype": 0, "shape": (), "shard_id": 0, "offset": 0, "size": 0, "unsupported": None}
    for field, value in _proto_fields(serialized):
        if field == 2:  # TensorShapeProto: repeated dim (2) {size (1), int64}; unknown_rank (3)
            sizes = [dict(_proto_fields(dim)).get(1, 0) for f, dim in _proto_fields(value) if f == 2]
            entry["shape"] = tuple(size - (1 << 64) if size >= 1 << 63 else size for size in sizes)
            if any(f == 3 and v for f, v in _proto_fields(value)):
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
        length, pos = _varint(data, pos)
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
        entries = _table_entries(index_path)
        header = dict(_proto_fields(entries.pop(b"")))
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
