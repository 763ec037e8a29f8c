"""Text files line by line: UTF-8 lines with file:line errors, JSON-lines objects. Pure Python.

Every reader of user text (corpora, task data, sentences to embed or extract features from) reads it here, so
a bad byte or a bad JSON line is reported the same way everywhere: one line naming `file:line`, and a UTF-8 byte
order mark that an editor put at the start of a file is dropped everywhere (not read as part of a header, a
JSON object or a first word).
"""

import json

BYTE_ORDER_MARK = "\ufeff"


def decode_line(raw, path, number):
    """The text of line `number` (1-based) of `path`, given its raw bytes, without the line end (and, on line 1,
    without a leading byte order mark).

    Raises:
      ValueError naming `path:number` and the bytes around the error, if the line is not UTF-8.
    """
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}:{number}: invalid UTF-8 at byte {e.start} of the line ({e.reason}: "
                         f"{raw[max(0, e.start - 10):e.end + 10]!r})") from None
    return text.removeprefix(BYTE_ORDER_MARK) if number == 1 else text


def read_lines(path):
    """Yields (line number from 1, text without its line end) of a UTF-8 file; ValueError naming `path:line`
    for a line that is not UTF-8 (`CorpusReader` can skip such lines instead)."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            yield number, decode_line(raw, path, number)


def parse_json_object(text, path, number):
    """The dict that line `number` of `path` holds (JSON lines); ValueError naming `path:number` if the
    line is not valid JSON or not an object."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{number}: not valid JSON ({e})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
    return record
