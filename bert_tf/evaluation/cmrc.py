"""The CMRC 2018 evaluation (also DRCD's): character-level F1 over the longest common substring, and exact match,
giving the official `cmrc2018_evaluate.py`'s numbers on SQuAD-format data.

    bert-tf-evaluate-squad --metric=cmrc2018 cmrc2018_dev.json predictions.json   (bert_tf/cli/evaluate_squad.py)
    python run_squad.py ... --cmrc2018_evaluation                                 (eval_results.json gets both)

The official script (ymcui/cmrc2018, `squad-style-data/` and `baseline/cmrc2018_evaluate.py`), step by step:

- **Segments** (`segments`, its `mixed_segmentation(text, rm_punc=True)`): the text lower-cased and stripped;
  the characters of `PUNCTUATION` dropped; every character in U+4E00..U+9FA5 (`is_chinese`, its regex
  `[\\u4e00-\\u9fa5]`) is a segment of its own, and each run of the other characters between them (Latin
  letters, digits half- or full-width, spaces, other punctuation, "〇", CJK outside that range) is split by
  NLTK's word tokenizer. Dropping a punctuation character does not end a run: "COVID-19" is the run "covid19",
  one segment.
- **F1** (`f1_score`, its `calc_f1_score` for one gold answer): the length L of the longest common *contiguous*
  run of segments (`longest_common_run`, its `find_lcs`); 0 when L = 0, else the harmonic mean of L / #prediction
  segments and L / #gold segments.
- **EM** (`exact_match`, its `calc_em_score` for one gold answer): 1 when both texts, lower-cased and stripped
  with the `PUNCTUATION` characters removed (`strip_punctuation`, its `remove_punctuation`), are equal. Spaces
  inside stay: "北京 大学" is not an exact match of "北京大学" (its F1 is 1).
- **Totals** (`evaluate`): per question the best F1 and the best EM over its gold answers; F1 and EM are
  100 * their sum / the number of questions, a question without a prediction counting 0 in that number and
  once in SKIP (with a warning, as the script writes "Unanswered question: ID"); AVERAGE = (EM + F1) / 2. The
  script prints `{"AVERAGE": "%.3f", "F1": "%.3f", "EM": "%.3f", "TOTAL": n, "SKIP": n, "FILE": path}`
  (`official_output`); `evaluate` returns the same keys, less FILE, as unrounded floats and ints.

Two differences, both deliberate:

- The script tokenizes a run with `nltk.word_tokenize(run)`, which first splits it into sentences with the
  punkt model, data that nltk downloads at run time (this project downloads nothing). Here each run goes to
  `nltk.word_tokenize(run, preserve_line=True)`: the same Treebank-style tokenizer (`NLTKWordTokenizer`) on the
  whole run, without the sentence split. The two agree on every run in which punkt finds no sentence end. They
  differ where a run holds a sentence end before its last word: a word ending in "." followed by a space and
  more text, e.g. "world. this" (between two Chinese characters): the script's sentence split makes "world"
  "." two segments, here "world." is one (a "." at the end of a run is split off in both; "?" and "!" are
  split off anywhere in both). Chinese sentences end in "。", which the list drops, so in Chinese text a run
  rarely holds an ASCII "." followed by a space and more text.
- The script turns a prediction into text with `str()` and would crash (`max` of nothing) on a question without
  gold answers, and (division by zero) on data without questions; here a prediction must be a string and both
  cases are ValueErrors naming the file (`source`) and the question.

Faithful to the script also where it surprises: its list holds "……" as one entry, which no single character
equals, so "…" is not dropped; "—" (U+2014), "‘" and the ASCII , . ? ! " ' ( ) are not in the list either; a
dropped character does not end a run ("a。b" is the one segment "ab"). Traditional characters (DRCD) are in
U+4E00..U+9FA5 like the simplified ones, so DRCD needs no change. The data is SQuAD's format, which run_squad.py
reads (CMRC 2018's `squad-style-data/`, DRCD); the script's v6 also reads CMRC's own (`context_text`,
`query_id`, answers as strings), which this module does not.
"""

import functools

from absl import logging

from bert_tf.data.squad.examples import load_squad_json
from bert_tf.evaluation.squad import DEFAULT_SOURCE, _check_values, _load_json_object, _questions

NLTK_PIN = "nltk==3.9.1"  # the version the tests ran with
# The official script's `sp_char`, in its order. "……" is one entry of two characters: the script compares
# single characters with it, so it never matches (kept to say so).
PUNCTUATION = frozenset(["-", ":", "_", "*", "^", "/", "\\", "~", "`", "+", "=",
                         "，", "。", "：", "？", "！", "“", "”", "；", "’", "《", "》", "……", "·", "、",
                         "「", "」", "（", "）", "－", "～", "『", "』"])
KEYS = ("AVERAGE", "F1", "EM", "TOTAL", "SKIP")  # what `evaluate` returns, in the script's order


@functools.cache
def _word_tokenize():
    """nltk's word_tokenize, imported on first use; ValueError naming the pip command when nltk is missing."""
    try:
        from nltk.tokenize import word_tokenize
    except ImportError:
        raise ValueError(f"the CMRC 2018 evaluation needs nltk: pip install {NLTK_PIN}") from None
    return word_tokenize


def check_available():
    """ValueError naming the pip command unless nltk can be imported (checked before a long run that ends in
    this evaluation)."""
    _word_tokenize()


def is_chinese(char):
    """True for the characters the script segments one by one: U+4E00..U+9FA5 (CJK Unified Ideographs up to
    Unicode 4.1; simplified and traditional alike)."""
    return "\u4e00" <= char <= "\u9fa5"


def segments(text):
    """The script's `mixed_segmentation(text, rm_punc=True)`: the list of segments (str) of `text` lower-cased and
    stripped, `PUNCTUATION` dropped, each Chinese character one segment, each run of other characters
    word-tokenized by nltk (see the module docstring)."""
    tokenize = _word_tokenize()
    result, run = [], []
    for char in text.lower().strip():
        if char in PUNCTUATION:
            continue
        if is_chinese(char):
            if run:
                result.extend(tokenize("".join(run), preserve_line=True))
                run = []
            result.append(char)
        else:
            run.append(char)
    if run:
        result.extend(tokenize("".join(run), preserve_line=True))
    return result


def strip_punctuation(text):
    """The script's `remove_punctuation`: `text` lower-cased and stripped, without the `PUNCTUATION` characters
    (spaces inside are kept)."""
    return "".join(char for char in text.lower().strip() if char not in PUNCTUATION)


def longest_common_run(first, second):
    """The length of the longest contiguous run of items that the sequences `first` and `second` share (the
    script's `find_lcs`, which also returns the run; only its length is scored)."""
    best, previous = 0, [0] * (len(second) + 1)
    for item in first:
        current = [0] * (len(second) + 1)
        for j, other in enumerate(second):
            if item == other:
                current[j + 1] = previous[j] + 1
                best = max(best, current[j + 1])
        previous = current
    return best


def f1_score(prediction, gold):
    """Segment F1 of one prediction against one gold answer: with L the longest common run of their `segments`,
    0 when L = 0, else 2PR / (P + R) with P = L / #prediction segments, R = L / #gold segments."""
    return _f1_of_segments(segments(prediction), segments(gold))


def _f1_of_segments(prediction_segments, gold_segments):
    common = longest_common_run(gold_segments, prediction_segments)
    if common == 0:
        return 0
    precision, recall = common / len(prediction_segments), common / len(gold_segments)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction, gold):
    """1 when `strip_punctuation` makes the two texts equal, else 0."""
    return int(strip_punctuation(prediction) == strip_punctuation(gold))


def evaluate(dataset, predictions, source=DEFAULT_SOURCE):
    """The official totals (see the module docstring) of `predictions` ({question id: answer str}) on the SQuAD
    `data` list `dataset`: {"AVERAGE", "F1", "EM", "TOTAL", "SKIP"} (percentages as floats, counts as ints).
    ValueError naming `source` (its file) for a question without gold answers or data without questions."""
    _check_values(predictions, str, "predictions")
    total = skipped = f1 = exact = 0
    for qa, golds in _questions(dataset, source):
        total += 1
        if qa["id"] not in predictions:
            logging.warning("Unanswered question: %s", qa["id"])
            skipped += 1
            continue
        if not golds:
            raise ValueError(f"{source}: question {qa['id']} has no answers; the CMRC 2018 evaluation needs at "
                             "least one per question (it has no unanswerable questions)")
        prediction = predictions[qa["id"]]
        prediction_segments = segments(prediction)
        f1 += max(_f1_of_segments(prediction_segments, segments(gold)) for gold in golds)
        exact += max(exact_match(prediction, gold) for gold in golds)
    if not total:
        raise ValueError(f"{source}: no questions to evaluate")
    f1, exact = 100.0 * f1 / total, 100.0 * exact / total
    return dict(zip(KEYS, ((exact + f1) * 0.5, f1, exact, total, skipped)))


def evaluate_files(data_file, predictions_file):
    """`evaluate` on files: a SQuAD-format JSON file (CMRC 2018, DRCD) and predictions.json."""
    return evaluate(load_squad_json(data_file), _load_json_object(predictions_file, "the predictions file"),
                    data_file)


def official_output(results, predictions_file):
    """What the script prints for `evaluate`'s `results` on `predictions_file`: the percentages as "%.3f"
    strings, the counts, and FILE, in its order (a dict for `json.dumps`)."""
    return {**{key: f"{results[key]:.3f}" for key in KEYS[:3]}, **{key: results[key] for key in KEYS[3:]},
            "FILE": predictions_file}
