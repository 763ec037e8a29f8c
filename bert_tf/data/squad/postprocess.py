"""From start/end logits to SQuAD answers, as the original `run_squad.py` (`write_predictions`) does.

Per example, over all its windows: the `n_best_size` best start and end positions of each window make the
candidate spans; a span is kept if both ends are context tokens, the start is a "max context" token of
that window, end >= start and it is at most `max_answer_length` pieces long. Candidates are ranked by
start + end logit; each is mapped back to the original context (`get_final_text`) and duplicates of the
same text are dropped. SQuAD 2.0 adds the null answer, scored by the *smallest* [CLS] start + end logit
over the windows; the answer is "" when null score - best non-null score > `null_score_diff_threshold`,
and that difference is the question's entry in `null_odds.json`.

One case the original does not handle (it crashes): with SQuAD 2.0 and no non-null candidate at all (an
empty context), the best non-null entry is the text "empty" with logits 0.0, the nonce the original uses
for SQuAD 1.1 when there is no candidate.
"""

import collections
import contextlib
import json
import math
import os

import numpy as np
from absl import logging

from bert_tf import atomic_io
from bert_tf.tokenization import BasicTokenizer

RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])
"""One window's model output: unique_id int, start_logits and end_logits sequences of float [T]."""

PREDICTIONS_FILE, NBEST_FILE, NULL_ODDS_FILE = "predictions.json", "nbest_predictions.json", "null_odds.json"
EVAL_RESULTS_FILE = "eval_results.json"
# The prediction set (`write_predictions`) in the order it is published: predictions.json, the mark of a
# complete set, last.
PREDICTION_SET = (EVAL_RESULTS_FILE, NULL_ODDS_FILE, NBEST_FILE, PREDICTIONS_FILE)
NO_CANDIDATE_TEXT = "empty"

_Candidate = collections.namedtuple("_Candidate", ["feature_index", "start_index", "end_index", "start_logit",
                                                   "end_logit"])
_Entry = collections.namedtuple("_Entry", ["text", "start_logit", "end_logit"])


def best_indexes(logits, n_best_size):
    """Indexes (list of int) of the `n_best_size` largest of `logits` (float [T]), largest first, the earlier
    index first on ties."""
    return np.argsort(-np.asarray(logits, np.float64), kind="stable")[:n_best_size].tolist()


def softmax(scores):
    """Softmax of a list of floats (max-subtracted), as a list; [] for []."""
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]
    total = sum(exps)
    return [e / total for e in exps]


def _strip_spaces(text):
    """(text without spaces, {index in it: index in text})."""
    kept, positions = [], {}
    for index, char in enumerate(text):
        if char != " ":
            positions[len(kept)] = index
            kept.append(char)
    return "".join(kept), positions


def get_final_text(pred_text, orig_text, do_lower_case):
    """Projects the detokenized prediction `pred_text` onto `orig_text`, the original words it came from.

    E.g. pred_text "steve smith", orig_text "Steve Smith's" -> "Steve Smith". `orig_text` is run through the
    BasicTokenizer, and if it has the same characters as the original once spaces are removed, the characters
    of `pred_text` are mapped back one to one. When that fails (the tokenizer changed the characters, e.g.
    accents stripped with lower-casing, or `pred_text` is not found) `orig_text` is returned whole.
    """
    tok_text = " ".join(BasicTokenizer(do_lower_case=do_lower_case).tokenize(orig_text))
    start = tok_text.find(pred_text)
    if start == -1:
        logging.debug("Unable to find text: %r in %r", pred_text, orig_text)
        return orig_text
    end = start + len(pred_text) - 1
    orig_ns_text, orig_ns_to_s = _strip_spaces(orig_text)
    tok_ns_text, tok_ns_to_s = _strip_spaces(tok_text)
    if len(orig_ns_text) != len(tok_ns_text):
        logging.debug("Length not equal after stripping spaces: %r vs %r", orig_ns_text, tok_ns_text)
        return orig_text
    tok_s_to_ns = {s: ns for ns, s in tok_ns_to_s.items()}
    orig_start = orig_ns_to_s.get(tok_s_to_ns.get(start))
    orig_end = orig_ns_to_s.get(tok_s_to_ns.get(end))
    if orig_start is None or orig_end is None:
        logging.debug("Couldn't map the %s position of %r", "start" if orig_start is None else "end", pred_text)
        return orig_text
    return orig_text[orig_start:orig_end + 1]


def _candidates(features, results, n_best_size, max_answer_length):
    """The valid spans of every window, and the null answer's (feature index, start logit, end logit) at the
    window with the smallest [CLS] start + end logit."""
    candidates, null = [], None
    for feature_index, feature in enumerate(features):
        start_logits, end_logits = results[feature.unique_id]
        if null is None or start_logits[0] + end_logits[0] < null[1] + null[2]:
            null = (feature_index, float(start_logits[0]), float(end_logits[0]))
        end_indexes = best_indexes(end_logits, n_best_size)
        for start in best_indexes(start_logits, n_best_size):
            for end in end_indexes:
                if (start >= len(feature.tokens) or end >= len(feature.tokens)
                        or start not in feature.token_to_orig_map or end not in feature.token_to_orig_map
                        or not feature.token_is_max_context.get(start, False)
                        or end < start or end - start + 1 > max_answer_length):
                    continue
                candidates.append(_Candidate(feature_index, start, end, float(start_logits[start]),
                                             float(end_logits[end])))
    return candidates, null


def _span_text(example, feature, start, end, do_lower_case):
    """The original text of the word pieces [start, end] of a window."""
    tok_text = " ".join(feature.tokens[start:end + 1]).replace(" ##", "").replace("##", "")
    tok_text = " ".join(tok_text.strip().split())
    orig_text = example.words_text(feature.token_to_orig_map[start], feature.token_to_orig_map[end])
    return get_final_text(tok_text, orig_text, do_lower_case)


def compute_predictions(examples, features, results, n_best_size, max_answer_length, do_lower_case,
                        version_2_with_negative, null_score_diff_threshold=0.0):
    """Answers of `examples` from the logits of their windows.

    Args:
      examples: list of SquadExample; features: their SquadFeatures (any order, matched by example_index);
      results: iterable of RawResult, one per feature (matched by unique_id);
      the other arguments as the original's flags of the same names.

    Returns:
      (predictions, nbest, null_odds), OrderedDicts keyed by question id in example order: the answer text;
      the n-best list of {"text", "probability", "start_logit", "end_logit"}; for SQuAD 2.0 the null score
      minus the best non-null score (empty for SQuAD 1.1).
    """
    by_unique_id = {}
    for result in results:
        by_unique_id[int(result.unique_id)] = (np.asarray(result.start_logits, np.float64),
                                               np.asarray(result.end_logits, np.float64))
    by_example = collections.defaultdict(list)
    for feature in features:
        if feature.unique_id not in by_unique_id:
            raise ValueError(f"no logits for feature unique_id={feature.unique_id} (example "
                             f"{examples[feature.example_index].qas_id}); expected one result per feature")
        by_example[feature.example_index].append(feature)
    predictions, all_nbest, null_odds = (collections.OrderedDict() for _ in range(3))
    for example_index, example in enumerate(examples):
        example_features = by_example[example_index]
        if not example_features:
            raise ValueError(f"question {example.qas_id} has no features; expected at least one window")
        candidates, null = _candidates(example_features, by_unique_id, n_best_size, max_answer_length)
        if version_2_with_negative:
            candidates.append(_Candidate(null[0], 0, 0, null[1], null[2]))
        candidates.sort(key=lambda c: c.start_logit + c.end_logit, reverse=True)
        nbest, seen = [], set()
        for candidate in candidates:
            if len(nbest) >= n_best_size:
                break
            text = ""
            if candidate.start_index > 0:
                text = _span_text(example, example_features[candidate.feature_index], candidate.start_index,
                                  candidate.end_index, do_lower_case)
                if text in seen:
                    continue
            seen.add(text)
            nbest.append(_Entry(text, candidate.start_logit, candidate.end_logit))
        if version_2_with_negative and "" not in seen:
            nbest.append(_Entry("", null[1], null[2]))
        if not nbest:
            nbest.append(_Entry(NO_CANDIDATE_TEXT, 0.0, 0.0))
        probabilities = softmax([entry.start_logit + entry.end_logit for entry in nbest])
        all_nbest[example.qas_id] = [
            collections.OrderedDict(text=entry.text, probability=p, start_logit=entry.start_logit,
                                    end_logit=entry.end_logit) for entry, p in zip(nbest, probabilities)]
        if not version_2_with_negative:
            predictions[example.qas_id] = nbest[0].text
            continue
        best = next((entry for entry in nbest if entry.text), _Entry(NO_CANDIDATE_TEXT, 0.0, 0.0))
        score_diff = null[1] + null[2] - best.start_logit - best.end_logit
        null_odds[example.qas_id] = score_diff
        predictions[example.qas_id] = "" if score_diff > null_score_diff_threshold else best.text
    return predictions, all_nbest, null_odds


def write_predictions(output_dir, predictions, nbest, null_odds, evaluation=None):
    """Publishes the prediction set in `output_dir` as one: predictions.json, nbest_predictions.json (the
    original's layout, indent 4), null_odds.json when `null_odds` is not empty (SQuAD 2.0) and
    eval_results.json when `evaluation` is not None. Returns the predictions path.

    **predictions.json's presence marks a complete set**: every file beside it comes from the run that
    wrote it, and the set holds all that run wrote. Every file of the new set is first written under its
    temporary name (`atomic_io.temporary_path`, every write checked); then the previous set goes,
    predictions.json first, its other files too (those this run rewrites and those it does not, e.g. an
    old eval_results.json beside an unlabelled predict file); then the new files are renamed in
    (`atomic_io.publish`: fsync of each, rename, fsync of the folder), predictions.json last. A failed write
    leaves the previous set untouched; a kill after that leaves a folder without predictions.json (the set
    is missing, never mixed) and temporaries that the next run's `atomic_io.remove_leftovers` deletes."""
    os.makedirs(output_dir, exist_ok=True)
    values = {PREDICTIONS_FILE: predictions, NBEST_FILE: nbest, **({NULL_ODDS_FILE: null_odds} if null_odds else {})}
    contents = {name: json.dumps(value, indent=4) + "\n" for name, value in values.items()}  # the original's
    if evaluation is not None:
        contents[EVAL_RESULTS_FILE] = json.dumps(evaluation, indent=2)
    names = [name for name in PREDICTION_SET if name in contents]
    finals = [os.path.join(output_dir, name) for name in names]
    temporaries = [atomic_io.temporary_path(path) for path in finals]
    try:
        for name, tmp, path in zip(names, temporaries, finals):
            _write_unpublished(tmp, contents[name].encode("utf-8"), path)
        for name in reversed(PREDICTION_SET):  # predictions.json first: from here on no set until the new one
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(output_dir, name))
        atomic_io.fsync_path(output_dir)
        atomic_io.publish(temporaries, finals)
    except BaseException:
        for tmp in temporaries:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
        raise
    logging.info("Wrote %s in %s", ", ".join(names), output_dir)
    return finals[-1]


def _write_unpublished(tmp, data, path):
    """Writes `data` (bytes) to `tmp`, every write checked (`publish` fsyncs it); OSError naming `path`."""
    try:
        file = open(tmp, "wb", buffering=0)
    except OSError as e:
        raise atomic_io.disk_error(e, path, "create") from None
    with file:
        atomic_io.write_all(file, data, path)
