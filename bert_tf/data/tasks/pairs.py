"""(anchor, positive) text pairs for training sentence embeddings (run_embedder.py): reading and features.

A pair file is a TSV (`anchor<TAB>positive` per line, no header) or JSON lines (`{"anchor": ..., "positive":
...}` per line), chosen by its suffix (.tsv, .jsonl). Each text is its own sequence `[CLS] text [SEP]`.
"""

import numpy as np

from bert_tf.data.packing import pack_tokens
from bert_tf.data.text_lines import parse_json_object, read_lines
from bert_tf.feature_schema import INPUT_IDS, INPUT_MASK, IS_REAL_EXAMPLE, SEGMENT_IDS

SUFFIXES = (".tsv", ".jsonl")


def read_pairs(path):
    """The (anchor, positive) pairs of `path`; ValueError naming `path:line` for a line that is not UTF-8,
    not two non-empty texts, or not a JSON object with "anchor" and "positive" strings; or an empty file."""
    if not path.endswith(SUFFIXES):
        raise ValueError(f"{path}: expected a .tsv (anchor<TAB>positive) or .jsonl ({{\"anchor\", \"positive\"}}) "
                         "pair file")
    pairs = []
    for number, line in read_lines(path):
        if path.endswith(".tsv"):
            fields = line.split("\t")
        else:
            record = parse_json_object(line, path, number)
            fields = [record.get("anchor"), record.get("positive")]
        if len(fields) != 2 or not all(isinstance(f, str) and f.strip() for f in fields):
            raise ValueError(f"{path}:{number}: expected two non-empty texts, the anchor and its positive")
        pairs.append((fields[0].strip(), fields[1].strip()))
    if not pairs:
        raise ValueError(f"{path}: empty file; expected one (anchor, positive) pair per line")
    return pairs


def convert_pairs(pairs, max_seq_length, tokenizer):
    """Pairs -> features for BertSentenceEmbedder: {"input_ids", "input_mask", "segment_ids": int32 [N, 2, T]
    (the anchor, then the positive, each `[CLS] text [SEP]` cut to T), "is_real_example": int32 [N]}."""
    columns = {k: [] for k in (INPUT_IDS, INPUT_MASK, SEGMENT_IDS)}
    for pair in pairs:
        for text in pair:
            packed = pack_tokens(tokenizer.tokenize(text), None, max_seq_length, tokenizer)
            for key, values in columns.items():
                values.append(getattr(packed, key))
    features = {k: np.asarray(v, np.int32).reshape(len(pairs), 2, max_seq_length) for k, v in columns.items()}
    features[IS_REAL_EXAMPLE] = np.ones(len(pairs), np.int32)
    return features
