"""The masked CRC-32C that TFRecord files (each record's length and data) and LevelDB tables (each block, under a
TensorFlow checkpoint's index) carry: the CRC-32C (Castagnoli) rotated right by 15 bits plus a constant, so that a
CRC stored inside checksummed data does not checksum to itself. google-crc32c computes the CRC (its C extension,
the CPU's CRC instruction where there is one), imported when a CRC is first computed: the readers that check
none (checkpoint bundles) need no CRC library.

    masked_crc32c(b"...")     # int in [0, 2**32)
"""

_MASK_DELTA = 0xA282EAD8


def masked_crc32c(data):
    """The masked CRC-32C of `data` (bytes-like)."""
    import google_crc32c

    crc = google_crc32c.value(bytes(data))
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF
