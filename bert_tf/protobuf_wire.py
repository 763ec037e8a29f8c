"""The protobuf wire format by hand (no protobuf package): what the checkpoint bundles' protos
(`formats/tensor_bundle.py`), the LevelDB tables under them (`formats/leveldb_table.py`) and the tf.train.Example
records (`data/pretraining/example_codec.py`) are made of. A leaf: imports only the standard library.

    encode_varint(300)                      # b"\\xac\\x02"
    varint(buf, pos)                        # (300, the position after it)
    varint_field(1, 5) + message_field(2, b"...")
    dict(fields(serialized))                # {field number: value} (the last value of a repeated field)
"""

import struct


def encode_varint(value):
    """The bytes of the unsigned varint `value`."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(buf, pos):
    """(the unsigned varint at buf[pos], the position after it)."""
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def varint_field(number, value):
    """A varint field; proto3 writes no field for a zero value."""
    return encode_varint(number << 3) + encode_varint(value) if value else b""


def message_field(number, payload):
    """A length-delimited field (wire type 2: a nested message, a string, a packed repeated field)."""
    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload


def fields(buf):
    """(field number, value) of each field of a serialized message, in order: an int for varint and fixed
    fields, bytes for length-delimited ones (nested messages, strings, packed repeated)."""
    pos = 0
    while pos < len(buf):
        tag, pos = varint(buf, pos)
        wire_type = tag & 7
        if wire_type == 0:
            value, pos = varint(buf, pos)
        elif wire_type == 1:
            value, pos = struct.unpack_from("<Q", buf, pos)[0], pos + 8
        elif wire_type == 2:
            length, pos = varint(buf, pos)
            value, pos = bytes(buf[pos: pos + length]), pos + length
        elif wire_type == 5:
            value, pos = struct.unpack_from("<I", buf, pos)[0], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire_type}")
        yield tag >> 3, value
