"""Corpus files: input patterns, documents (read through `data/text_lines.py`), corpus preparation.

The input format of the original `create_pretraining_data.py`: one sentence per line, blank lines between
documents. `prepare_corpus` makes it from raw text (one document per file) or JSON lines (one document per
line, like a Wikipedia extraction). Pure Python (no TensorFlow calls).
"""

import dataclasses
import glob
import os

from absl import logging

from bert_tf import atomic_io
from bert_tf.data.pretraining.sentences import split_sentences
from bert_tf.data.text_lines import decode_line, parse_json_object

INVALID_UTF8_CHOICES = ("error", "skip")
INVALID_UTF8_HELP = "A line that is not valid UTF-8 is an error naming file:line, or is skipped with a warning."
INPUT_FORMATS = ("text", "jsonl")


def expand_input_patterns(patterns):
    """Comma-separated (or list of) file names and glob patterns -> list of file names.

    Each pattern's matches are sorted; patterns keep their order. Unlike the original (which silently skips
    a pattern that matches nothing), a pattern without a match is an error.

    Raises:
      ValueError: naming the first pattern that matches no file, or when no pattern is given.
    """
    if isinstance(patterns, str):
        patterns = patterns.split(",")
    patterns = [p.strip() for p in patterns if p.strip()]
    if not patterns:
        raise ValueError("no input file given")
    files = []
    for pattern in patterns:
        matches = sorted(path for path in glob.glob(pattern) if os.path.isfile(path))
        if not matches:
            raise ValueError(f"input file pattern {pattern!r} matches no file")
        files.extend(matches)
    return files


@dataclasses.dataclass
class Document:
    """One document of the corpus: its non-blank lines (stripped, each a sentence) and where it starts.

    Attributes:
      lines: list of str, at least one.
      num_bytes: raw input bytes from the end of the previous document to the end of this one (progress
        and the shuffle buffer's size).
      source: "path:line" of its first line, for messages.
    """
    lines: list
    num_bytes: int
    source: str


class CorpusReader:
    """Reads UTF-8 text files line by line, with `path:line` in every error.

    Attributes:
      invalid_utf8: "error" (a line that is not valid UTF-8 raises ValueError naming `path:line`) or
        "skip" (the line is dropped, with a warning).
      skipped_lines: how many lines "skip" dropped so far.
      bytes_read: raw bytes read so far (progress).
    """

    def __init__(self, invalid_utf8="error"):
        if invalid_utf8 not in INVALID_UTF8_CHOICES:
            raise ValueError(f"invalid_utf8={invalid_utf8!r}; expected one of {INVALID_UTF8_CHOICES}")
        self.invalid_utf8 = invalid_utf8
        self.skipped_lines = 0
        self.bytes_read = 0

    def lines(self, path):
        """Yields (line_number, text) for each line of `path`: 1-based numbers, text without its line end.

        Lines end at "\\n" only (like the original's `tf.gfile` reader; a "\\r" before it is dropped too). A
        skipped line is not yielded.
        """
        with open(path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                self.bytes_read += len(raw)
                try:
                    text = decode_line(raw, path, number)
                except ValueError as e:
                    if self.invalid_utf8 == "error":
                        raise ValueError(f"{e}; pass invalid_utf8=skip to drop such lines") from None
                    self.skipped_lines += 1
                    logging.warning("%s; line skipped", e)
                    continue
                yield number, text

    def documents(self, files):
        """Yields the `Document`s of `files` in order.

        As in the original, a line that is blank after `str.strip()` ends a document and lines are
        stripped; unlike the original, the end of a file also ends a document (the original runs a file
        without a final blank line into the next file's first document). Documents without lines are
        dropped.
        """
        for path in files:
            lines, start, start_bytes = [], None, self.bytes_read
            for number, text in self.lines(path):
                text = text.strip()
                if text:
                    if not lines:
                        start = number
                    lines.append(text)
                elif lines:
                    yield Document(lines, self.bytes_read - start_bytes, f"{path}:{start}")
                    lines, start_bytes = [], self.bytes_read
            if lines:
                yield Document(lines, self.bytes_read - start_bytes, f"{path}:{start}")


    def raw_documents(self, path, input_format, text_field="text"):
        """Yields the documents of a raw file as lists of paragraphs (str).

        "text": the file is one document; paragraphs are separated by blank lines, and the lines of a
        paragraph are joined (hard-wrapped text). "jsonl": each non-blank line is a JSON object whose
        `text_field` is one document; each of its non-blank lines is a paragraph.

        Raises:
          ValueError: naming `path:line` for a line that is not a JSON object with a string `text_field`.
        """
        if input_format == "text":
            paragraphs, current = [], []
            for _, line in self.lines(path):
                if line.strip():
                    current.append(line)
                elif current:
                    paragraphs.append(" ".join(current))
                    current = []
            if current:
                paragraphs.append(" ".join(current))
            yield paragraphs
        elif input_format == "jsonl":
            for number, line in self.lines(path):
                if not line.strip():
                    continue
                record = parse_json_object(line, path, number)
                if not isinstance(record.get(text_field), str):
                    raise ValueError(f"{path}:{number}: expected a JSON object with a string field "
                                     f"{text_field!r}, got {sorted(record)}")
                yield [p for p in record[text_field].split("\n") if p.strip()]
        else:
            raise ValueError(f"input_format={input_format!r}; expected one of {INPUT_FORMATS}")


def prepare_corpus(input_files, output_file, input_format="text", text_field="text", invalid_utf8="error"):
    """Writes raw documents as the pretraining input format: one sentence per line (`split_sentences` on
    each paragraph), a blank line after each document. Documents without text are dropped. The file is
    written through `atomic_io.atomic_write` (temporary name, synced, renamed when complete).

    Returns:
      (documents, sentences) written, and the `CorpusReader` (bytes read, lines skipped).
    """
    reader = CorpusReader(invalid_utf8)
    documents = sentences = 0
    with atomic_io.atomic_write(output_file) as out:
        for path in input_files:
            for paragraphs in reader.raw_documents(path, input_format, text_field):
                lines = [s for paragraph in paragraphs for s in split_sentences(paragraph)]
                if lines:
                    out.write("\n".join(lines) + "\n\n")
                    documents += 1
                    sentences += len(lines)
    return documents, sentences, reader
