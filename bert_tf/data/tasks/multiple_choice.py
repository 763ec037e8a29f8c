"""Multiple-choice data in the SWAG format (Zellers et al. 2018): reading and features.

SWAG's CSV files have a header with `sent1` (the context), `sent2` (the start of the continuation),
`ending0` ... `ending3` and, except in the test file, `label` (the right ending's index). As in the BERT
paper (section 4.4), each choice is the pair `[CLS] sent1 [SEP] sent2 ending_i [SEP]`.
"""

import dataclasses
import re

import numpy as np

from bert_tf.data.packing import pack_tokens
from bert_tf.data.tasks.classification import read_rows
from bert_tf.feature_schema import INPUT_IDS, INPUT_MASK, IS_REAL_EXAMPLE, LABEL_IDS, SEGMENT_IDS


@dataclasses.dataclass
class MultipleChoiceExample:
    """guid: `<split>-<row index>`; context: sent1; endings: the choices' texts (sent2 + " " + ending_i);
    label: the right choice's index (int) or None."""
    guid: str
    context: str
    endings: list
    label: int = None


def read_swag(path, split):
    """The examples of a SWAG CSV file (as many choices as `ending<i>` columns).

    Raises:
      ValueError naming `path:line`: a missing column, a row with another number of columns than the header,
      a label that is not the index of an ending; naming `path`: a file without examples.
    """
    rows = read_rows(path, "csv")
    header = next(rows, (1, None))[1]
    if header is None:
        raise ValueError(f"{path}: the file is empty")
    endings = sorted((int(m.group(1)), i) for i, name in enumerate(header) if (m := re.fullmatch(r"ending(\d+)", name)))
    missing = [name for name in ("sent1", "sent2") if name not in header]
    if missing or len(endings) < 2 or [k for k, _ in endings] != list(range(len(endings))):
        raise ValueError(f"{path}:1: the header {header} needs sent1, sent2 and ending0, ending1, ...")
    sent1, sent2 = header.index("sent1"), header.index("sent2")
    label = header.index("label") if "label" in header else None
    examples = []
    for index, (number, row) in enumerate(rows, start=1):
        if len(row) != len(header):
            raise ValueError(f"{path}:{number}: {len(row)} columns, expected {len(header)} as in the header")
        value = None
        if label is not None:
            if row[label] not in {str(k) for k in range(len(endings))}:
                raise ValueError(f"{path}:{number}: label {row[label]!r} is not the index of one of the "
                                 f"{len(endings)} endings")
            value = int(row[label])
        examples.append(MultipleChoiceExample(f"{split}-{index}", row[sent1],
                                              [f"{row[sent2]} {row[i]}" for _, i in endings], value))
    if not examples:
        raise ValueError(f"{path}: no examples in the {split} set")
    return examples


def convert_examples(examples, max_seq_length, tokenizer):
    """Examples -> features for BertMultipleChoice: {"input_ids", "input_mask", "segment_ids": int32
    [N, C, T], "label_ids": int32 [N] (0 without a label), "is_real_example": int32 [N]}. Each pair is
    truncated like the original's pairs (from the end of the longer text)."""
    num_choices = {len(e.endings) for e in examples}
    if len(num_choices) != 1:
        raise ValueError(f"examples have different numbers of choices: {sorted(num_choices)}")
    columns = {k: [] for k in (INPUT_IDS, INPUT_MASK, SEGMENT_IDS)}
    for example in examples:
        context = tokenizer.tokenize(example.context)
        for ending in example.endings:
            packed = pack_tokens(context, tokenizer.tokenize(ending), max_seq_length, tokenizer)
            for key, values in columns.items():
                values.append(getattr(packed, key))
    shape = (len(examples), num_choices.pop(), max_seq_length)
    features = {k: np.asarray(v, np.int32).reshape(shape) for k, v in columns.items()}
    features[LABEL_IDS] = np.asarray([e.label or 0 for e in examples], np.int32)
    features[IS_REAL_EXAMPLE] = np.ones(len(examples), np.int32)
    return features
