"""TFRecord framing without TensorFlow: the bytes `tf.io.TFRecordWriter` writes, and a walk over a file's framing.

A TFRecord file is a sequence of `uint64 length | uint32 masked_crc32c(length bytes) | data |
uint32 masked_crc32c(data)` (little-endian; `masked_crc.masked_crc32c`).

    frame([b"record", ...])         # the records as TFRecord file content (bytes)
    record_spans(path)              # where each record's data lies, after the framing is checked

`record_spans` walks a file's framing (headers only) to find a truncated or damaged file before it is read, and
returns where each record's data lies (random access without TensorFlow: `data/record_source.py`).
"""

import mmap
import os
import struct

import numpy as np

from bert_tf.masked_crc import masked_crc32c

_HEADER = struct.Struct("<QI")  # uint64 length | uint32 masked CRC of the 8 length bytes
_CRC = struct.Struct("<I")
_FRAMING_BYTES = _HEADER.size + 4  # header + the data's CRC


def frame(records):
    """list of bytes -> bytes: the records as TFRecord file content, byte for byte what `tf.io.TFRecordWriter`
    writes (no compression)."""
    out = []
    for record in records:
        length = len(record).to_bytes(8, "little")
        out += [length, _CRC.pack(masked_crc32c(length)), record, _CRC.pack(masked_crc32c(record))]
    return b"".join(out)


def check_framing(path):
    """The number of records in the TFRecord file `path`, after a walk over its framing (`record_spans`)."""
    return len(record_spans(path))


def record_spans(path):
    """int64 NumPy [N, 2]: the byte offset and the length of each record's data in the TFRecord file `path`
    (what a reader needs for random access), after a walk over its framing: each record's 12-byte header is
    read and its CRC checked, the data is skipped (its CRC is left to the reader). TensorFlow's reader fails
    with a DataLossError only when it reaches a record cut in its data, and takes a file cut inside the last
    header for a clean end; this finds both before any training.

    Raises:
      ValueError naming `path` and the byte offset of the record: the file ends inside a record (it is
      truncated), or a length header's CRC does not match (the file is damaged or not a TFRecord file).
    """
    size = os.path.getsize(path)
    if size == 0:
        return np.zeros([0, 2], np.int64)
    spans = []
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        offset = 0
        while offset < size:
            if offset + _HEADER.size > size:
                raise ValueError(f"{path}: ends inside a record at byte {offset} (its {_HEADER.size}-byte header "
                                 f"is cut after {size - offset} bytes); the file is truncated: recreate it")
            length, crc = _HEADER.unpack_from(data, offset)
            if masked_crc32c(data[offset:offset + 8]) != crc:
                raise ValueError(f"{path}: the record header at byte {offset} has a wrong CRC; the file is damaged "
                                 "or not a TFRecord file: recreate it")
            end = offset + length + _FRAMING_BYTES
            if end > size:
                raise ValueError(f"{path}: ends inside a record at byte {offset} (a record of {length} bytes starts "
                                 f"there, the file has {size}); the file is truncated: recreate it")
            spans.append((offset + _HEADER.size, length))
            offset = end
    return np.array(spans, np.int64).reshape(-1, 2)
