"""LevelDB tables (the `.index` file of a TensorFlow checkpoint bundle) read and written with the standard library,
byte for byte as TensorFlow's table builder writes them (`tsl/lib/io/table_builder.cc`: no compression, 256 KiB
data blocks, a restart point every 16 entries).

    entries = read_table(path)                  # {key bytes: value bytes}
    table = table_bytes(sorted_items)           # the file's bytes, for [(key, value), ...] in key order

Layout: data blocks of prefix-compressed entries (varints shared key bytes, unshared key bytes, value length;
the unshared key bytes; the value), each block ending with the uint32 offsets of its restart points (entries
that share nothing) and their count, followed by a 5-byte trailer (compression type 0, the masked CRC32C of the
block and that type byte); an empty metaindex block; an index block (restart every entry) mapping a key that
separates each data block from the next to the block's handle (varints offset, size); a 48-byte footer (the
metaindex and index handles, zero-padded to 40 bytes, then the magic number). TensorFlow's reader checks every
block's CRC32C; `read_table` does not (a checkpoint index is small, but this reader is for hosts without a
CRC32C library too).
"""

import struct

from bert_tf.masked_crc import masked_crc32c
from bert_tf.protobuf_wire import encode_varint, varint

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_BYTES = 48
BLOCK_TRAILER_BYTES = 5  # 1 byte compression type + 4 bytes masked CRC32C
BLOCK_SIZE = 256 * 1024  # TensorFlow's table::Options.block_size
RESTART_INTERVAL = 16  # its block_restart_interval (the index block's is 1)
_HANDLE_PADDING = 40  # two BlockHandles at most 20 bytes each


# ------------------------------------------------------------------------------------------------- reading

def block_entries(block):
    """(key, value) of each entry of a table block (its bytes without the trailer), in key order."""
    num_restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    entries_end = len(block) - 4 * (num_restarts + 1)
    key, pos = b"", 0
    while pos < entries_end:
        shared, pos = varint(block, pos)
        unshared, pos = varint(block, pos)
        value_length, pos = varint(block, pos)
        key = key[:shared] + bytes(block[pos: pos + unshared])
        pos += unshared
        yield key, block[pos: pos + value_length]
        pos += value_length


def read_block(path, table, handle):
    """The bytes of the block at BlockHandle bytes `handle` (varints offset, size) of the table `table`."""
    offset, pos = varint(handle, 0)
    size, _ = varint(handle, pos)
    end = offset + size + BLOCK_TRAILER_BYTES
    if end > len(table):
        raise ValueError(f"{path} ends at byte {len(table)}, a block needs bytes {offset}..{end}: "
                         "the checkpoint index is truncated")
    if table[offset + size] != 0:
        raise ValueError(f"{path}: a block is compressed (type {table[offset + size]}); TensorFlow writes "
                         "checkpoint indexes uncompressed, this reader does not decompress")
    return table[offset: offset + size]


def data_block_handles(path, table):
    """The BlockHandle bytes of every data block of the table `table` (the bytes of the file `path`), in
    order: the values of its index block, found through the footer."""
    if len(table) < FOOTER_BYTES or struct.unpack_from("<Q", table, len(table) - 8)[0] != TABLE_MAGIC:
        raise ValueError(f"{path}: not a TensorFlow checkpoint index (no table magic number at its end: "
                         "another file, or a truncated index)")
    footer = table[len(table) - FOOTER_BYTES:]
    _, pos = varint(footer, varint(footer, 0)[1])  # skips the metaindex handle
    return [bytes(handle) for _, handle in block_entries(read_block(path, table, footer[pos:]))]


def read_table(path):
    """{key: value bytes} of every entry of the table at `path`."""
    with open(path, "rb") as f:
        table = memoryview(f.read())
    return {key: bytes(value) for handle in data_block_handles(path, table)
            for key, value in block_entries(read_block(path, table, handle))}


# ------------------------------------------------------------------------------------------------- writing

class _BlockBuilder:
    """One block's entries, prefix-compressed against the previous key, a restart point every `interval`."""

    def __init__(self, interval):
        self.interval = interval
        self.reset()

    def reset(self):
        self.buffer, self.restarts, self.counter, self.last_key = bytearray(), [0], 0, b""

    def add(self, key, value):
        shared = 0
        if self.counter < self.interval:
            limit = min(len(key), len(self.last_key))
            while shared < limit and key[shared] == self.last_key[shared]:
                shared += 1
        else:
            self.restarts.append(len(self.buffer))
            self.counter = 0
        self.buffer += encode_varint(shared) + encode_varint(len(key) - shared) + encode_varint(len(value))
        self.buffer += key[shared:] + value
        self.last_key, self.counter = key, self.counter + 1

    def size_estimate(self):
        return len(self.buffer) + 4 * len(self.restarts) + 4

    def finish(self):
        return bytes(self.buffer) + b"".join(struct.pack("<I", r) for r in self.restarts) + struct.pack(
            "<I", len(self.restarts))


def _shortest_separator(start, limit):
    """A short key k with start <= k < limit (LevelDB's bytewise FindShortestSeparator)."""
    common = 0
    while common < min(len(start), len(limit)) and start[common] == limit[common]:
        common += 1
    if common < min(len(start), len(limit)) and start[common] < 0xFF and start[common] + 1 < limit[common]:
        return start[:common] + bytes([start[common] + 1])
    return start


def _short_successor(key):
    """A short key k >= key (LevelDB's bytewise FindShortSuccessor): the first byte that is not 0xff, plus 1."""
    for i, byte in enumerate(key):
        if byte != 0xFF:
            return key[:i] + bytes([byte + 1])
    return key


def table_bytes(items):
    """The bytes of a table of `items` ([(key bytes, value bytes)], keys strictly increasing), as TensorFlow's
    table builder writes them."""
    out = bytearray()

    def write_block(block):
        contents = block.finish() + b"\x00"  # no compression
        handle = encode_varint(len(out)) + encode_varint(len(contents) - 1)
        out.extend(contents + struct.pack("<I", masked_crc32c(contents)))
        block.reset()
        return handle

    data, index = _BlockBuilder(RESTART_INTERVAL), _BlockBuilder(1)
    pending, last_key = None, None
    for key, value in items:
        if last_key is not None and key <= last_key:
            raise ValueError(f"table keys must increase: {key!r} after {last_key!r}")
        if pending is not None:
            index.add(_shortest_separator(last_key, key), pending)
            pending = None
        data.add(key, value)
        last_key = key
        if data.size_estimate() >= BLOCK_SIZE:
            pending = write_block(data)
    if data.buffer:
        pending = write_block(data)
    metaindex = write_block(_BlockBuilder(RESTART_INTERVAL))
    if pending is not None:
        index.add(_short_successor(last_key), pending)
    handles = metaindex + write_block(index)
    out.extend(handles + b"\x00" * (_HANDLE_PADDING - len(handles)) + struct.pack("<Q", TABLE_MAGIC))
    return bytes(out)
