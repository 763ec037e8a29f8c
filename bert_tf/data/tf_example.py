"""tf.train.Example records parsed and written without TensorFlow: what the input reads from pretraining and SQuAD
feature records on a host without it, the same values as `tf.io.parse_example` gives, and what SQuAD's feature
records are written as (pretraining instances have their own faster encoder: `pretraining/example_codec.py`).

    parse_example(serialized)          # {name: int64 [n] | float32 [n] | object [n] of bytes}
    parse_fixed(serialized, {"input_ids": (128, np.int64), ...})   # each feature checked for its length
    encode_example({"input_ids": [101, 2023], "tokens": [b"[CLS]", b"this"]})   # serialized bytes

Wire format: Example{features(1): Features{feature(1): repeated map entry{key(1): string, value(2):
Feature{bytes_list(1) | float_list(2) | int64_list(3): {value(1): repeated}}}}}; numbers are packed (as
TensorFlow writes them) or not (both are valid protobuf). Packed varints are decoded with NumPy at once.
"""

import numpy as np

from bert_tf.protobuf_wire import encode_varint, fields, message_field

_INT64_MASK = (1 << 64) - 1


def packed_varints(payload):
    """int64 NumPy [n]: the packed varints of `payload` (bytes); negative int64s are 10-byte varints."""
    data = np.frombuffer(payload, np.uint8)
    ends = data < 0x80
    if ends.all():
        return data.astype(np.int64)  # every value < 128: one byte each
    if len(data) and not ends[-1]:
        raise ValueError("a packed varint is cut")
    starts = np.flatnonzero(np.concatenate([[True], ends[:-1]]))
    group = np.cumsum(np.concatenate([[0], ends[:-1]]))
    shifts = (7 * (np.arange(len(data)) - starts[group])).astype(np.uint64)
    return np.add.reduceat((data & 0x7F).astype(np.uint64) << shifts, starts).view(np.int64)


def _values(kind, payload):
    """The values of a BytesList (1), FloatList (2) or Int64List (3) message."""
    chunks = []
    for number, value in fields(payload):
        if number != 1:
            continue
        if kind == 1:
            chunks.append(np.array([value], dtype=object))
        elif kind == 2:
            chunks.append(np.frombuffer(value, "<f4") if isinstance(value, bytes)
                          else np.array([value], np.uint32).view("<f4"))
        else:
            chunks.append(packed_varints(value) if isinstance(value, bytes)
                          else np.array([value], np.uint64).view(np.int64))
    dtype = {1: object, 2: np.float32, 3: np.int64}[kind]
    return np.concatenate(chunks).astype(dtype) if chunks else np.zeros([0], dtype)


def parse_example(serialized):
    """{feature name: values} of a serialized tf.train.Example: int64 [n], float32 [n] or an object array of
    bytes [n]. ValueError for bytes that are not an Example."""
    features = {}
    try:
        for number, example_field in fields(serialized):
            if number != 1:
                continue
            for entry_number, entry in fields(example_field):
                if entry_number != 1:
                    continue
                parts = dict(fields(entry))
                name = parts.get(1, b"").decode("utf-8")
                kinds = [(kind, payload) for kind, payload in fields(parts.get(2, b"")) if kind in (1, 2, 3)]
                features[name] = _values(*kinds[-1]) if kinds else np.zeros([0], np.float32)
    except (IndexError, TypeError, UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"not a tf.train.Example ({e})") from None
    return features


def parse_fixed(serialized, spec, where="a record"):
    """{name: values of dtype and length} for spec {name: (length, NumPy dtype)}, as tf.io.FixedLenFeature
    parses: ValueError naming `where` and the feature when one is missing or has another length."""
    parsed = parse_example(serialized)
    out = {}
    for name, (length, dtype) in spec.items():
        values = parsed.get(name)
        if values is None:
            raise ValueError(f"{where}: no feature {name} (it has {', '.join(sorted(parsed)) or 'none'})")
        if len(values) != length:
            raise ValueError(f"{where}: feature {name} has {len(values)} values, expected {length}")
        out[name] = values.astype(dtype, copy=False)
    return out


def encode_example(features):
    """The serialized tf.train.Example of `features` {name: list of ints (an Int64List, packed as TensorFlow
    writes it; negative values as 10-byte varints) or list of bytes (a BytesList)}; an empty list is an empty
    Int64List."""
    entries = []
    for name, values in features.items():
        if values and isinstance(values[0], bytes):
            feature = message_field(1, b"".join(message_field(1, value) for value in values))
        else:
            packed = b"".join(encode_varint(int(value) & _INT64_MASK) for value in values)
            feature = message_field(3, message_field(1, packed) if packed else b"")
        entries.append(message_field(1, message_field(1, name.encode("utf-8")) + message_field(2, feature)))
    return message_field(1, b"".join(entries))
