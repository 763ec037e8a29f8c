"""TFRecord framing in NumPy, so worker processes write finished TFRecord bytes without TensorFlow.

A TFRecord file is a sequence of `uint64 length | uint32 masked_crc32c(length bytes) | data |
uint32 masked_crc32c(data)` (little-endian). The CRC-32C of many records is computed at once: the records
are left-padded with zero bytes to a common length and processed 4 bytes per step for all of them
("slice-by-4" tables). Zero bytes leave a zero CRC state unchanged, so the padding is harmless when the
CRC starts from 0; the standard initial value 0xFFFFFFFF is added afterwards, by linearity, as the CRC of
L zero bytes (`crc(M) = crc_from_0(M) ^ crc(zeros(L))`).

`record_spans` walks a file's framing (headers only) to find a truncated or damaged file before it is read, and
returns where each record's data lies (random access without TensorFlow: `data/record_source.py`).
"""

import mmap
import os
import struct

import numpy as np

_POLYNOMIAL = 0x82F63B78  # CRC-32C (Castagnoli), reflected
_MASK_DELTA = 0xA282EAD8
_CHUNK_RECORDS = 4096  # records per vectorized step (bounds temporary memory)
_HEADER = struct.Struct("<QI")  # uint64 length | uint32 masked CRC of the 8 length bytes
_FRAMING_BYTES = _HEADER.size + 4  # header + the data's CRC


def _tables():
    """Slice-by-4 tables: [4, 256] uint32; tables[0] is the byte-at-a-time table."""
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLYNOMIAL), table >> 1).astype(np.uint32)
    tables = [table]
    for _ in range(3):
        tables.append((tables[-1] >> 8) ^ table[tables[-1] & 0xFF])
    return np.stack(tables)


class RecordFramer:
    """Frames serialized records (bytes) as TFRecord file content, byte for byte what
    `tf.io.TFRecordWriter` writes (no compression).

    Args:
      max_record_bytes: the longest record to frame.
    """

    def __init__(self, max_record_bytes):
        self.max_record_bytes = max_record_bytes
        self._tables = _tables()
        # CRC-32C of L zero bytes (initial value and final XOR included), for L = 0 .. max_record_bytes.
        zeros_crc = np.empty([max_record_bytes + 1], np.uint32)
        state = 0xFFFFFFFF
        for length in range(max_record_bytes + 1):
            zeros_crc[length] = state ^ 0xFFFFFFFF
            state = int(self._tables[0][state & 0xFF]) ^ (state >> 8)
        self._zeros_crc = zeros_crc

    def masked_crc32c(self, messages):
        """list of bytes (each at most max_record_bytes long) -> uint32 array [N] of masked CRC-32C."""
        lengths = np.fromiter(map(len, messages), np.int64, len(messages))
        if len(messages) and lengths.max() > self.max_record_bytes:
            raise ValueError(f"record of {lengths.max()} bytes; at most {self.max_record_bytes} expected")
        width = -(-int(lengths.max(initial=0)) // 4) * 4
        padded = b"".join([bytes(width - len(m)) + m for m in messages])
        words = np.frombuffer(padded, "<u4").reshape(len(messages), width // 4).T.copy()  # [width/4, N]
        t0, t1, t2, t3 = self._tables
        crc = np.zeros([len(messages)], np.uint32)
        for word in words:
            crc ^= word
            crc = t3[crc & 0xFF] ^ t2[(crc >> 8) & 0xFF] ^ t1[(crc >> 16) & 0xFF] ^ t0[crc >> 24]
        crc ^= self._zeros_crc[lengths]
        return ((crc >> 15) | (crc << 17)) + np.uint32(_MASK_DELTA)

    def frame(self, records):
        """list of bytes -> bytes: the records as TFRecord file content."""
        out = []
        for start in range(0, len(records), _CHUNK_RECORDS):
            chunk = records[start:start + _CHUNK_RECORDS]
            headers = [len(record).to_bytes(8, "little") for record in chunk]
            header_crcs = self.masked_crc32c(headers).astype("<u4").tobytes()
            data_crcs = self.masked_crc32c(chunk).astype("<u4").tobytes()
            out.append(b"".join([headers[i] + header_crcs[4 * i:4 * i + 4] + record + data_crcs[4 * i:4 * i + 4]
                                 for i, record in enumerate(chunk)]))
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
    framer = RecordFramer(8)
    offsets, crcs, spans = [], [], []  # offsets, crcs: the headers not yet CRC-checked
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:

        def check_crcs():
            """ValueError at the first pending header whose CRC does not match; then none is pending."""
            computed = framer.masked_crc32c([data[offset:offset + 8] for offset in offsets])
            bad = np.flatnonzero(computed != np.array(crcs, np.uint32))
            if len(bad):
                raise ValueError(f"{path}: the record header at byte {offsets[bad[0]]} has a wrong CRC; the file "
                                 "is damaged or not a TFRecord file: recreate it")
            offsets.clear()
            crcs.clear()

        offset = 0
        while offset < size:
            if offset + _HEADER.size > size:
                check_crcs()
                raise ValueError(f"{path}: ends inside a record at byte {offset} (its {_HEADER.size}-byte header "
                                 f"is cut after {size - offset} bytes); the file is truncated: recreate it")
            length, crc = _HEADER.unpack_from(data, offset)
            offsets.append(offset)
            crcs.append(crc)
            end = offset + length + _FRAMING_BYTES
            if end > size:
                check_crcs()
                raise ValueError(f"{path}: ends inside a record at byte {offset} (a record of {length} bytes starts "
                                 f"there, the file has {size}); the file is truncated: recreate it")
            if len(offsets) == _CHUNK_RECORDS:
                check_crcs()
            spans.append((offset + _HEADER.size, length))
            offset = end
        check_crcs()
    return np.array(spans, np.int64).reshape(-1, 2)
