"""SQuAD from TensorFlow Datasets (`tensorflow-datasets`, optional): `squad/v1.1`, `squad/v2.0` (or another
TFDS set with SQuAD's features) written back as SQuAD JSON.

    check_tfds_squad("squad/v2.0", None, version_2_with_negative=True)
    path = write_squad_json("squad/v2.0", "validation", "/tmp/out")    # /tmp/out/squad_v2.0-validation.json

TFDS holds one row per question (`id`, `title`, `context`, `question`, `answers` {`text`, `answer_start`},
SQuAD 2.0 also `is_impossible`), in its own shuffled order. `squad_articles` groups them back into SQuAD's
articles / paragraphs / qas, so the JSON reader (`squad.read_squad_examples`: whitespace splitting, answer
alignment, skipping answers not found in their context), the feature cache (keyed by the file's name, which
carries the TFDS name and split, and its bytes) and the official evaluation read a TFDS split exactly as
they read the downloaded file. TFDS downloads and prepares the data on first use (network needed) into
`data_dir` (TFDS's default when None).
"""

import json
import os
import re

from bert_tf import atomic_io
from bert_tf.data.tasks.tfds import import_tfds

SQUAD_FEATURES = ("id", "title", "context", "question", "answers")


def check_tfds_squad(name, data_dir, version_2_with_negative):
    """ValueError unless the TFDS data set `name` (str, e.g. "squad/v1.1") has SQuAD's features and has
    unanswerable questions (an `is_impossible` feature) exactly when `version_2_with_negative` (bool)."""
    features = import_tfds().builder(name, data_dir=data_dir).info.features
    missing = [feature for feature in SQUAD_FEATURES if feature not in features]
    if missing:
        raise ValueError(f"tfds_name={name} is not a SQuAD data set: it has no {missing[0]!r} feature (it has "
                         f"{sorted(features.keys())}; SQuAD's are {list(SQUAD_FEATURES)})")
    has_negative = "is_impossible" in features
    if has_negative and not version_2_with_negative:
        raise ValueError(f"tfds_name={name} has unanswerable questions (SQuAD 2.0): pass "
                         "version_2_with_negative=True")
    if version_2_with_negative and not has_negative:
        raise ValueError(f"version_2_with_negative=True needs SQuAD 2.0 data, but tfds_name={name} has no "
                         "unanswerable questions (no is_impossible feature): use squad/v2.0, or drop the flag")


def _text(value):
    return value.decode("utf-8")


def _answers(answers):
    """TFDS answers {text: bytes [N], answer_start: int32 [N]} -> SQuAD's [{"text", "answer_start"}]."""
    return [{"text": _text(text), "answer_start": int(start)}
            for text, start in zip(answers["text"], answers["answer_start"])]


def squad_articles(rows):
    """SQuAD JSON's `data` list from TFDS rows (dicts of numpy values, as `tfds.as_numpy` yields them: bytes
    texts, `answers` {text: bytes [N], answer_start: int32 [N]}, optional bool `is_impossible`).

    Returns a list of articles {"title", "paragraphs": [{"context", "qas": [{"id", "question", "answers"
    [, "is_impossible"]}]}]}: the questions grouped by title, then by context, each group in the order of its
    first row.
    """
    articles = {}  # title -> {context: qas}
    for row in rows:
        qa = {"id": _text(row["id"]), "question": _text(row["question"]), "answers": _answers(row["answers"])}
        if "is_impossible" in row:
            qa["is_impossible"] = bool(row["is_impossible"])
        articles.setdefault(_text(row["title"]), {}).setdefault(_text(row["context"]), []).append(qa)
    return [{"title": title, "paragraphs": [{"context": context, "qas": qas} for context, qas in paragraphs.items()]}
            for title, paragraphs in articles.items()]


def write_squad_json(name, split, output_dir, data_dir=None):
    """Writes the `split` (str: "train", "validation") of the TFDS data set `name` as the SQuAD JSON file
    `output_dir/<name>-<split>.json`, `/` and `:` in the name becoming `_` (e.g. squad_v2.0-validation.json),
    with the official files' `version` ("1.1", or "v2.0" when the questions have `is_impossible`). Written
    atomically (`atomic_io.write_file`). Returns its path (str); ValueError when the split is empty."""
    tfds = import_tfds()
    articles = squad_articles(tfds.as_numpy(tfds.load(name, split=split, data_dir=data_dir)))
    if not articles:
        raise ValueError(f"tfds_name={name}: no questions in the {split} split")
    version = "v2.0" if "is_impossible" in articles[0]["paragraphs"][0]["qas"][0] else "1.1"
    path = os.path.join(output_dir, f"{re.sub(r'[/:]', '_', name)}-{split}.json")
    atomic_io.write_file(path, json.dumps({"version": version, "data": articles}))
    return path
