"""SQuAD evaluation giving the official v1.1 and v2.0 scripts' numbers, in process or on files.

    bert-tf-evaluate-squad dev-v1.1.json predictions.json          (bert_tf/cli/evaluate_squad.py)
    bert-tf-evaluate-squad dev-v2.0.json predictions.json --na-prob-file null_odds.json

prints the official script's JSON: `{"exact_match", "f1"}` for data without `is_impossible` (v1.1),
otherwise the v2.0 keys `exact`, `f1`, `total`, `HasAns_*`, `NoAns_*` and, with null odds,
`best_exact`, `best_exact_thresh`, `best_f1`, `best_f1_thresh`.

Both official scripts normalise an answer the same way (lower-case, drop ASCII punctuation, drop the words
a/an/the, collapse whitespace) and take the best score over the gold answers; exact match is 0/1 and F1 is
the harmonic mean of token precision and recall. They differ in corner cases, kept here: v1.1 F1 of two
answers that normalise to nothing is 0, v2.0's is 1 (and an unanswerable question's gold is ""); v1.1 scores
a missing prediction 0 (with a message), v2.0 would crash, so here a v2.0 evaluation with missing
predictions raises a ValueError naming them. Errors about the data name its file (`source`).

A question is *labelled* (`is_labelled`) when it has answers to score against: a non-empty `answers` list,
or `is_impossible: true` (SQuAD 2.0: having no answer is its answer, `answers` may be empty or absent).
`missing_answers` says which questions of a file are not, so that run_squad.py can skip the evaluation of
an unlabelled predict file (a test set) instead of failing on it.
"""

import collections
import re
import string

from absl import logging

from bert_tf.data.squad.examples import iterate_questions, load_squad_json, read_json

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
DEFAULT_SOURCE = "the SQuAD data"  # what errors name when the caller gives no file


def normalize_answer(text):
    """Lower-case, drop ASCII punctuation, replace the words a/an/the by a space, collapse whitespace."""
    text = "".join(char for char in text.lower() if char not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction, gold):
    """1 if the normalised answers are equal, else 0."""
    return int(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction, gold, version_2=True):
    """Token-overlap F1 of the normalised answers. With both token lists empty: 1 under v2.0 (both say "no
    answer"), 0 under v1.1; with one of them empty: 0."""
    prediction_tokens, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if version_2 and (not prediction_tokens or not gold_tokens):
        return int(prediction_tokens == gold_tokens)
    common = sum((collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)).values())
    if common == 0:
        return 0
    precision, recall = common / len(prediction_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def is_labelled(qa):
    """True when the question `qa` (a dict of a SQuAD file) carries its answer: a non-empty `answers` list, or
    `is_impossible: true` (SQuAD 2.0, where no answer is the answer)."""
    return qa.get("is_impossible") is True or bool(qa.get("answers"))


MISSING_ANSWERS_NAMED = 5  # how many ids of the questions without answers `missing_answers` names


def missing_answers(dataset, source):
    """None when every question of the SQuAD `data` list `dataset` is labelled (`is_labelled`); otherwise one
    line that names `source` (its file) and says which questions are not: all of them, or their count and
    the first ids."""
    ids, unlabelled = [], []
    for _, qa in iterate_questions(dataset, source):
        ids.append(qa["id"])
        if not is_labelled(qa):
            unlabelled.append(qa["id"])
    if not unlabelled:
        return None
    if len(unlabelled) == len(ids):
        return f"none of the {len(ids)} questions of {source} has answers"
    named = ", ".join(unlabelled[:MISSING_ANSWERS_NAMED]) + (", ..." if len(unlabelled) > MISSING_ANSWERS_NAMED
                                                             else "")
    verb = "has" if len(unlabelled) == 1 else "have"
    return f"{len(unlabelled)} of the {len(ids)} questions of {source} {verb} no answers: {named}"


def _questions(dataset, source):
    """(qa, its gold answer texts) for the questions of a SQuAD `data` list; an `is_impossible: true` question
    without `answers` has none. ValueError naming `source` when `answers` is not a list of {"text": str}."""
    for _, qa in iterate_questions(dataset, source):
        answers = qa.get("answers", [] if qa.get("is_impossible") is True else None)
        if not isinstance(answers, list) or not all(isinstance(a, dict) and isinstance(a.get("text"), str)
                                                    for a in answers):
            raise ValueError(f"{source}: question {qa['id']}: 'answers' must be a list of {{\"text\": str}}, got "
                             f"{answers!r:.80}")
        yield qa, [answer["text"] for answer in answers]


def _check_values(values, kind, what):
    """ValueError naming the questions whose value in `values` is not of type `kind` (bools excluded)."""
    wrong = [qid for qid, value in values.items() if not isinstance(value, kind) or isinstance(value, bool)]
    if wrong:
        raise ValueError(f"{what}: {len(wrong)} question(s) have a value of the wrong type: "
                         f"{', '.join(f'{qid}={values[qid]!r:.40}' for qid in wrong[:10])}")


def is_version_2(dataset, source=DEFAULT_SOURCE):
    """True when any question carries `is_impossible` (SQuAD 2.0 data)."""
    return any("is_impossible" in qa for qa, _ in _questions(dataset, source))


def evaluate_v1(dataset, predictions, source=DEFAULT_SOURCE):
    """The official v1.1 script: {"exact_match", "f1"} in percent over all questions; a question without a
    prediction scores 0 (logged). ValueError naming `source` for a question without answers."""
    total = exact = f1 = 0
    for qa, golds in _questions(dataset, source):
        total += 1
        if qa["id"] not in predictions:
            logging.warning("Unanswered question %s will receive score 0.", qa["id"])
            continue
        if not golds:
            raise ValueError(f"{source}: question {qa['id']} has no answers; SQuAD 1.1 data (no is_impossible) "
                             "needs at least one per question")
        prediction = predictions[qa["id"]]
        exact += max(exact_match(prediction, gold) for gold in golds)
        f1 += max(f1_score(prediction, gold, version_2=False) for gold in golds)
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def _best_threshold(predictions, scores, na_probs, has_answer):
    """The official `find_best_thresh`: the no-answer probability threshold that maximises the total score
    when every question above it is answered "" . Returns (score in percent, threshold)."""
    score = best = sum(1 for qid in has_answer if not has_answer[qid])
    threshold = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            score += scores[qid]
        else:
            score += -1 if predictions[qid] else 0
        if score > best:
            best, threshold = score, na_probs[qid]
    return 100.0 * best / len(scores), threshold


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0, source=DEFAULT_SOURCE):
    """The official v2.0 script: exact/f1/total overall and for HasAns/NoAns questions (a question has an
    answer when its `answers` list is not empty); with `na_probs` ({id: no-answer score}, e.g. null_odds.json)
    also best_exact/best_f1 and their thresholds. A prediction counts as "" (no answer) when its na_prob is
    above `na_prob_thresh`. ValueError naming `source` when a question has no prediction."""
    has_answer = {qa["id"]: bool(golds) for qa, golds in _questions(dataset, source)}
    for what, values in (("prediction", predictions), ("no-answer probability", na_probs or predictions)):
        missing = [qid for qid in has_answer if qid not in values]
        if missing:
            raise ValueError(f"{source}: {len(missing)} question(s) have no {what}: {', '.join(missing[:10])}")
    exact_raw, f1_raw = {}, {}
    for qa, golds in _questions(dataset, source):
        golds = [gold for gold in golds if normalize_answer(gold)] or [""]
        prediction = predictions[qa["id"]]
        exact_raw[qa["id"]] = max(exact_match(prediction, gold) for gold in golds)
        f1_raw[qa["id"]] = max(f1_score(prediction, gold) for gold in golds)
    thresholds = na_probs if na_probs is not None else {qid: 0.0 for qid in predictions}

    def thresholded(raw):
        return {qid: float(not has_answer[qid]) if thresholds[qid] > na_prob_thresh else score
                for qid, score in raw.items()}

    exact, f1 = thresholded(exact_raw), thresholded(f1_raw)

    def summary(qids):
        return {"exact": 100.0 * sum(exact[q] for q in qids) / len(qids),
                "f1": 100.0 * sum(f1[q] for q in qids) / len(qids), "total": len(qids)}

    results = summary(list(exact))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [qid for qid, has in has_answer.items() if has == wanted]
        if qids:
            results.update({f"{prefix}_{key}": value for key, value in summary(qids).items()})
    if na_probs is not None:
        results["best_exact"], results["best_exact_thresh"] = _best_threshold(predictions, exact_raw, na_probs,
                                                                              has_answer)
        results["best_f1"], results["best_f1_thresh"] = _best_threshold(predictions, f1_raw, na_probs, has_answer)
    return results


def evaluate(dataset, predictions, na_probs=None, source=DEFAULT_SOURCE):
    """v2.0 results for SQuAD 2.0 data (`is_version_2`), else v1.1 results (`na_probs` must be None).
    `predictions`: {question id: answer str}; `na_probs`: {question id: float}; `source`: what errors about
    the data name (its file)."""
    _check_values(predictions, str, "predictions")
    if na_probs is not None:
        _check_values(na_probs, (int, float), "no-answer probabilities")
    if is_version_2(dataset, source):
        return evaluate_v2(dataset, predictions, na_probs, source=source)
    if na_probs is not None:
        raise ValueError(f"{source}: null odds were given for SQuAD 1.1 data (no question has is_impossible)")
    return evaluate_v1(dataset, predictions, source)


def _load_json_object(path, what):
    value = read_json(path, what)
    if not isinstance(value, dict):
        raise ValueError(f"{path}: {what} must be a JSON object {{question id: value}}, got {type(value).__name__}")
    return value


def evaluate_files(data_file, predictions_file, na_prob_file=None):
    """`evaluate` on files: a SQuAD JSON file, predictions.json and optionally null_odds.json."""
    na_probs = _load_json_object(na_prob_file, "the no-answer probability file") if na_prob_file else None
    return evaluate(load_squad_json(data_file), _load_json_object(predictions_file, "the predictions file"),
                    na_probs, data_file)
