"""Sentence and sentence-pair classification data: examples, table files, processors, features.

A processor turns the files of one task into `InputExample`s (the original `run_classifier.py` API:
`get_train_examples(data_dir)`, `get_dev_examples`, `get_test_examples`, `get_labels`); `convert_examples`
turns examples into the original features. Files are read as in GLUE: TSV without quoting (a `"` is an
ordinary character), CSV with standard quoting, or JSON lines. Every problem in a file is a ValueError that
names `path:line`. In JSON lines a text is a string, a label a string or an integer (1 is the label "1"; a
regression score any number), an id a string or an integer; a null label means "no label" where a label may be
missing (a test file) and is refused elsewhere.

The GLUE tasks are in `bert_tf.data.tasks.glue`; `ColumnProcessor` reads a user's own files by column name.
"""

import csv
import dataclasses
import json
import os

import numpy as np
from absl import logging

from bert_tf.data import windows
from bert_tf.data.packing import pack_tokens, truncation_note
from bert_tf.data.text_lines import parse_json_object, read_lines
from bert_tf.feature_schema import INPUT_IDS, INPUT_MASK, IS_REAL_EXAMPLE, LABEL_IDS, SEGMENT_IDS

TRUNCATIONS = ("head", "tail", "head+tail")  # a long single text cut (truncate_single)
WINDOWS = "windows"  # or read whole (convert_documents)
FORMATS = ("tsv", "csv", "jsonl")
# convert_examples logs the examples it truncates as a warning when they are at least this share, else as info.
TRUNCATION_WARNING_SHARE = 0.1


@dataclasses.dataclass
class InputExample:
    """One example. text_b is None for single-text tasks; label is a class name (str), a float (regression)
    or None (unlabelled test data). guid is `<split>-<id>`: the file's id column or the row's 0-based
    index in the file (header included, as the original counts)."""
    guid: str
    text_a: str
    text_b: str = None
    label: object = None


# ------------------------------------------------------------------------------------------------ reading

def read_rows(path, file_format):
    """Yields (line number, row) of a table file: a list of str for "tsv" (split at tabs, no quoting, as
    GLUE's files are written) and "csv" (standard quoting; the number is the row's last line), a dict for
    "jsonl" (one JSON object per line). Blank lines are skipped."""
    if file_format not in FORMATS:
        raise ValueError(f"file format {file_format!r} is not one of {FORMATS}")
    lines = read_lines(path)
    if file_format == "tsv":
        for number, text in lines:
            if text.strip():
                yield number, text.split("\t")
    elif file_format == "csv":
        current = [0]  # the number of the line the csv reader read last

        def texts():
            for current[0], text in lines:
                yield text + "\n"

        for row in csv.reader(texts()):
            if any(field.strip() for field in row):
                yield current[0], row
    else:
        for number, text in lines:
            if not text.strip():
                continue
            yield number, parse_json_object(text, path, number)


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where one split's fields are in its file.

    file: file name inside data_dir. text_a, text_b, label, guid: column names (files with a header row or
    JSON lines) or 0-based column indexes (files without a header, then `num_columns` is the expected
    count); text_b / label / guid None when the file has none.
    """
    file: str
    text_a: object
    text_b: object = None
    label: object = None
    guid: object = None
    num_columns: int = None

    @property
    def has_header(self):
        return self.num_columns is None


def _column_index(header, name, path):
    if name not in header:
        raise ValueError(f"{path}:1: the header {header} has no column {name!r}; is this the right file for "
                         "the task, or does --*_column need to change?")
    return header.index(name)


def _shown(value):
    """A JSON value as the file has it: null, true, 1998, ["110"]."""
    return json.dumps(value, ensure_ascii=False)


def text_field(row, key, where):
    """The text at `key` of a row (a JSON object or a table row); ValueError naming `where` ("path:line") unless it
    is a string: null, a number, a list would be fed to the model as "None", "1998", "['...']"."""
    value = row[key]
    if not isinstance(value, str):
        raise ValueError(f"{where}: \"{key}\" is {_shown(value)}; expected a string (the text)")
    return value


def _example_id(row, key, where):
    value = row[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"{where}: \"{key}\" is {_shown(value)}; expected a string or an integer")
    return value


def read_examples(path, layout, split, file_format="tsv", labels=None, label_optional=False, only=None,
                  text_of=None):
    """The `InputExample`s of one file.

    Args:
      path: the file. layout: its `Layout`. split: name used in the guids ("train", "dev_matched", ...).
      file_format: "tsv", "csv" or "jsonl".
      labels: class names (labels are checked against them), () for regression (labels become floats),
        None to keep labels as read (str).
      label_optional: a file without the label column (or JSON objects without the key, or with a null
        label) is read as unlabelled (label None), e.g. a test file.
      only: (column, value): keep only the rows with this value in this column (XNLI's language).
      text_of: None, or a function (row, "path:line") -> text_a for files whose first text is built from the
        row (CLUE's CSL and CLUEWSC2020); `layout.text_a` is then only required to be there.

    Raises:
      ValueError naming `path:line`: a row with another number of columns than the header (or than
      `num_columns`), a missing column or key, a label not in `labels`, a regression label that is not a
      number, a JSON value of the wrong kind (a null label outside a test file, a text that is not a string:
      see the module docstring); naming `path`: a file without examples.
    """
    rows = read_rows(path, file_format)
    fields = [layout.text_a, layout.text_b, layout.label, layout.guid]
    num_columns, first = layout.num_columns, 0
    if file_format != "jsonl" and layout.has_header:
        header = next(rows, (1, None))[1]
        if header is None:
            raise ValueError(f"{path}: the file is empty")
        if label_optional and layout.label not in header:
            fields[2] = None
        fields = [None if f is None else _column_index(header, f, path) for f in fields]
        num_columns, first = len(header), 1
        if only is not None:
            only = (_column_index(header, only[0], path), only[1])
    text_a, text_b, label, guid = fields
    examples = []
    for index, (number, row) in enumerate(rows, start=first):
        where = f"{path}:{number}"
        if file_format == "jsonl":
            missing = [f for f in fields if f is not None and f not in row and not (label_optional and f == label)]
            if missing:
                raise ValueError(f"{where}: the JSON object has no key {missing[0]!r} (keys: {sorted(row)})")
        elif len(row) != num_columns:
            raise ValueError(f"{where}: {len(row)} columns, expected {num_columns}"
                             + (" (as in the header)" if layout.has_header else "")
                             + "; a stray tab or quote in the text?")
        if only is not None and row[only[0]] != only[1]:
            continue
        value = None if label is None or (file_format == "jsonl" and label not in row) else row[label]
        if value is not None or (label is not None and not label_optional):
            value = _check_label(value, labels, where, label)
        example_id = index if guid is None else _example_id(row, guid, where)
        examples.append(InputExample(f"{split}-{example_id}",
                                     text_of(row, where) if text_of else text_field(row, text_a, where),
                                     None if text_b is None else text_field(row, text_b, where), value))
    if not examples:
        raise ValueError(f"{path}: no examples in the {split} set")
    return examples


def _check_label(value, labels, where, key):
    """The label `value` (of column or key `key`, read at `where`) as the task takes it: a float for regression
    (`labels` ()), else a str that is one of `labels` (any, for labels None). A JSON integer is taken as its
    digits; null, true / false, a list, an object (or a fraction where labels are names) is refused."""
    regression = labels is not None and not labels
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if regression and (is_number or isinstance(value, str)):
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{where}: regression label {value!r} is not a number") from None
    if not regression and (isinstance(value, str) or is_number and isinstance(value, int)):
        value = str(value)
        if labels is not None and value not in labels:
            raise ValueError(f"{where}: label {value!r} is not one of the task's labels {list(labels)}")
        return value
    expected = "a number" if regression else "a label (a string)" if labels is None else f"one of {list(labels)}"
    raise ValueError(f"{where}: \"{key}\" is {_shown(value)}; expected {expected}")


def check_scorable(examples, split):
    """ValueError unless the examples of dev split `split` can be scored: at least one, each with a label (a
    TFDS split can have none: its label -1 is read as no label). Runs call it before building a model."""
    if not examples:
        raise ValueError(f"the {split} set has no examples")
    unlabelled = [example for example in examples if example.label is None]
    if unlabelled:
        raise ValueError(f"the {split} set: {len(unlabelled)} of {len(examples)} examples have no label (the "
                         f"first: {unlabelled[0].guid}); a dev set is scored against its labels")


# --------------------------------------------------------------------------------------------- processors

class DataProcessor:
    """A classification task: its files (`layouts`, {split: Layout}), labels and metrics.

    Attributes:
      labels: class names in label-id order; () for a regression task (one float output).
      metrics: names of `bert_tf.evaluation.glue_metrics` metrics for the dev set.
      file_format: "tsv", "csv" or "jsonl".
      dev_splits, test_splits: the split names (MNLI has matched and mismatched ones); the first is what
        get_dev_examples / get_test_examples read.
    """
    labels = ()
    metrics = ("accuracy",)
    file_format = "tsv"
    layouts = {}
    dev_splits = ("dev",)
    test_splits = ("test",)

    @property
    def is_regression(self):
        return not self.labels

    def get_labels(self):
        return list(self.labels)

    def results_columns(self):
        """What the columns of test_results.tsv hold. The file has no header (the original's format, which
        GLUE's tooling and the original's users read as is), so a run names them in its log: the probability of
        each label, in label-id order (that of labels.txt), or the predicted score of a regression task."""
        if self.is_regression:
            return "the predicted score"
        labels = self.get_labels()
        shown = ", ".join(f"P({label})" for label in labels[:10]) + (f", ... ({len(labels)} labels)"
                                                                     if len(labels) > 10 else "")
        return f"{shown}: the probability of each label in the order of labels.txt"

    @property
    def leaderboard_labels(self):
        """The label names that the GLUE leaderboard files use for label ids 0, 1, ...: the labels."""
        return self.labels

    def get_examples(self, data_dir, split):
        """The examples of `split`, read from `data_dir`."""
        return self._read(data_dir, split, self.labels)

    def _read(self, data_dir, split, labels, **kwargs):
        if split not in self.layouts:
            raise ValueError(f"{type(self).__name__} has no {split!r} set; it has {sorted(self.layouts)}")
        layout = self.layouts[split]
        path = os.path.join(data_dir, layout.file)
        if not os.path.isfile(path):
            raise ValueError(f"{path} does not exist: the {split} set of {type(self).__name__} is expected there")
        return read_examples(path, layout, split, self.file_format, labels, **kwargs)

    def get_train_examples(self, data_dir):
        return self.get_examples(data_dir, "train")

    def get_dev_examples(self, data_dir):
        return self.get_examples(data_dir, self.dev_splits[0])

    def get_test_examples(self, data_dir):
        return self.get_examples(data_dir, self.test_splits[0])


class ColumnProcessor(DataProcessor):
    """A user's own task: `train.<ext>`, `dev.<ext>` and `test.<ext>` in data_dir, ext one of tsv / csv /
    jsonl (the same for all three), with named columns (a header row, or the keys of the JSON objects).

    Args:
      text_a_column, text_b_column (None for single texts), label_column, id_column (None: row index).
      labels: class names in label-id order; None: the sorted distinct labels of the training file
        (read when the first examples are read; they must be the same at training and prediction time).
      regression: labels are numbers and the model has one output (metrics Pearson and Spearman).
    The test file needs no label column.
    """

    def __init__(self, text_a_column="text", text_b_column=None, label_column="label", id_column=None,
                 labels=None, regression=False):
        if regression and labels:
            raise ValueError(f"a regression task has no label list; got labels={labels}")
        self.columns = dict(text_a=text_a_column, text_b=text_b_column, label=label_column, guid=id_column)
        self.labels = () if regression else (None if labels is None else tuple(str(x) for x in labels))
        self.metrics = ("pearson", "spearman") if regression else ("accuracy",)

    @property
    def is_regression(self):
        return self.labels == ()

    def get_labels(self):
        if self.labels is None:
            raise ValueError("the label list comes from the training file: call infer_labels, or pass labels")
        return list(self.labels)

    def infer_labels(self, data_dir):
        """Without a label list: takes the sorted distinct labels of the training file in data_dir."""
        if self.labels is not None:
            return
        train = self._path(data_dir, "train")
        found = read_examples(train, Layout(os.path.basename(train), **self.columns), "train",
                              train.rsplit(".", 1)[1])
        self.labels = tuple(sorted({str(e.label) for e in found}))
        logging.info("Labels read from %s: %s", train, ", ".join(self.labels))

    def _path(self, data_dir, split):
        found = [f"{split}.{ext}" for ext in FORMATS if os.path.isfile(os.path.join(data_dir, f"{split}.{ext}"))]
        if len(found) != 1:
            raise ValueError(f"expected one of {split}.tsv, {split}.csv, {split}.jsonl in {data_dir}; found "
                             f"{found or 'none'}")
        return os.path.join(data_dir, found[0])

    def get_examples(self, data_dir, split):
        self.infer_labels(data_dir)
        path = self._path(data_dir, split)
        return read_examples(path, Layout(os.path.basename(path), **self.columns), split, path.rsplit(".", 1)[1],
                             self.labels, label_optional=split == "test")


# ----------------------------------------------------------------------------------------------- features

def truncate_single(tokens, max_tokens, truncation="head"):
    """Shortens one text's word pieces to `max_tokens`.

    "head" keeps the first max_tokens (the original), "tail" the last, "head+tail" the first quarter and the
    last three quarters (Sun et al. 2019, "How to Fine-Tune BERT for Text Classification?": 128 + 382 of 510).
    """
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation={truncation!r} is not one of {TRUNCATIONS}")
    if len(tokens) <= max_tokens:
        return tokens
    if truncation == "head":
        return tokens[:max_tokens]
    if truncation == "tail":
        return tokens[len(tokens) - max_tokens:]
    head = max_tokens // 4
    return tokens[:head] + tokens[len(tokens) - (max_tokens - head):]


def _label_id(example, labels, label_map):
    """The label id of `example` (0 without a label; the float itself for regression, `labels` empty);
    ValueError naming the example for a label not in `labels`."""
    if example.label is None:
        return 0
    if not labels:
        return float(example.label)
    if example.label not in label_map:
        raise ValueError(f"{example.guid}: label {example.label!r} is not one of {list(labels)}")
    return label_map[example.label]


def convert_documents(examples, labels, max_seq_length, tokenizer, doc_stride, max_windows):
    """Single-text examples read whole: each text's word pieces as windows of max_seq_length - 2 pieces starting
    `doc_stride` apart (`bert_tf.data.windows`), at most `max_windows` of them (a longer document keeps that many,
    spread evenly from its first window to its last), each packed `[CLS] window [SEP]`.

    Returns {"input_ids", "input_mask", "segment_ids": int32 [N, W, T] (W: the most windows of a document; an
    absent window all zeros), "label_ids": int32 [N], "is_real_example": int32 [N]} for BertDocumentClassifier.
    ValueError for a pair, an empty or whitespace text, a stride outside 1 <= N < max_seq_length - 2,
    max_windows < 1, or a label not in `labels` (`labels` empty: regression, refused). Logs how many documents
    took several windows and were capped, and the windows in all.
    """
    windows.check_stride(max_seq_length - 2, doc_stride)
    if max_windows < 1:
        raise ValueError(f"max_windows={max_windows} must be >= 1 (windows read per document)")
    if not labels:
        raise ValueError("windows classify documents into labels; a regression task reads its texts cut")
    label_map = {label: i for i, label in enumerate(labels)}
    documents, label_ids, several, capped = [], [], 0, 0
    for example in examples:
        if example.text_b:
            raise ValueError(f"{example.guid}: a text pair; windows read single texts (truncation=windows)")
        pieces = tokenizer.tokenize(example.text_a)
        if not pieces:
            raise ValueError(f"{example.guid} (<split>-<row or id>): the text is empty or only whitespace; a document "
                             "to classify needs words")
        spans = windows.doc_spans(len(pieces), max_seq_length - 2, doc_stride)
        several += len(spans) > 1
        capped += len(spans) > max_windows
        spans = [spans[i] for i in windows.spread_windows(len(spans), max_windows)]
        documents.append([pack_tokens(pieces[start:start + length], None, max_seq_length, tokenizer)
                          for start, length in spans])
        label_ids.append(_label_id(example, labels, label_map))
    width = max((len(packed) for packed in documents), default=1)
    features = {k: np.zeros((len(documents), width, max_seq_length), np.int32) for k in (INPUT_IDS, INPUT_MASK,
                                                                                          SEGMENT_IDS)}
    for row, packed in enumerate(documents):
        for index, window in enumerate(packed):
            for key in (INPUT_IDS, INPUT_MASK, SEGMENT_IDS):
                features[key][row, index] = getattr(window, key)
    logging.info("%s: read whole in windows of %d word pieces, %d apart: %d windows in all; %d document(s) over "
                 "max_windows=%d read in %d windows spread over them",
                 truncation_note(several, len(examples), "documents", max_seq_length), max_seq_length - 2,
                 doc_stride, sum(map(len, documents)), capped, max_windows, max_windows)
    features[LABEL_IDS] = np.asarray(label_ids, np.int32)
    features[IS_REAL_EXAMPLE] = np.ones(len(documents), np.int32)
    return features


def convert_examples(examples, labels, max_seq_length, tokenizer, truncation="head"):
    """Examples -> the original features, as NumPy arrays.

    Args:
      examples: list of InputExample. labels: the class names (label id = index), () for regression.
      max_seq_length: T. tokenizer: a FullTokenizer.
      truncation: for single texts, which word pieces to keep (`truncate_single`); a pair is always
        truncated like the original (one piece at a time from the end of the longer text).

    Returns:
      {"input_ids", "input_mask", "segment_ids": int32 [N, T], "label_ids": int32 [N] (float32 [N] for
      regression; 0 for examples without a label), "is_real_example": int32 [N] (ones)}.

    Logs how many examples were truncated (`TRUNCATION_WARNING_SHARE`).
    """
    label_map = {label: i for i, label in enumerate(labels)}
    columns = {k: [] for k in (INPUT_IDS, INPUT_MASK, SEGMENT_IDS, LABEL_IDS)}
    truncated = 0
    for index, example in enumerate(examples):
        tokens_a = tokenizer.tokenize(example.text_a)
        tokens_b = (tokenizer.tokenize(example.text_b) if example.text_b else None) or None
        truncated += len(tokens_a) + len(tokens_b or ()) > max_seq_length - (3 if tokens_b else 2)
        if tokens_b:
            if truncation != "head":
                raise ValueError(f"truncation={truncation!r} is for single texts; {example.guid} is a pair")
        else:
            tokens_a = truncate_single(tokens_a, max_seq_length - 2, truncation)
        packed = pack_tokens(tokens_a, tokens_b, max_seq_length, tokenizer)
        for key in (INPUT_IDS, INPUT_MASK, SEGMENT_IDS):
            columns[key].append(getattr(packed, key))
        columns[LABEL_IDS].append(_label_id(example, labels, label_map))
        if index < 2:
            logging.info("Example %s: %s -> label %s", example.guid, " ".join(packed.tokens), columns[LABEL_IDS][-1])
    if truncated:
        log = logging.warning if truncated >= TRUNCATION_WARNING_SHARE * len(examples) else logging.info
        log("%s and were truncated", truncation_note(truncated, len(examples), "examples", max_seq_length))
    features = {k: np.asarray(v, np.int32).reshape(-1, max_seq_length) for k, v in columns.items() if k != LABEL_IDS}
    features[LABEL_IDS] = np.asarray(columns[LABEL_IDS], np.int32 if labels else np.float32)
    features[IS_REAL_EXAMPLE] = np.ones(len(examples), np.int32)
    return features
