"""SQuAD post-processing: gold logits give EM 100; predictions, n-best and null odds equal the original's;
the prediction files are published as one set (a cut anywhere or a full disk never mixes two runs)."""

import errno
import json
import os

import numpy as np
import pytest

from bert_tf.data.squad import examples as squad
from bert_tf.data.squad import postprocess
from bert_tf.data.squad.postprocess import RawResult, compute_predictions, get_final_text, write_predictions
from bert_tf.evaluation.squad import evaluate
from tests.helpers import small_disk
from tests.helpers.squad_fixtures import gold_logits, make_hard_squad, original_run_squad, space_out_cjk


def _features(path, tokenizer, version_2, is_training, settings):
    examples = squad.read_squad_examples(path, is_training, version_2).examples
    return examples, list(squad.convert_examples_to_features(examples, tokenizer, is_training=is_training,
                                                             **settings))


@pytest.mark.parametrize("version_2,settings,size", [
    (False, {"max_seq_length": 128, "doc_stride": 32, "max_query_length": 16}, (2, 300)),
    (True, {"max_seq_length": 128, "doc_stride": 32, "max_query_length": 16}, (2, 300)),
    (True, {"max_seq_length": 384, "doc_stride": 128, "max_query_length": 64}, (3, 450)),  # original defaults
], ids=["v1.1-128", "v2.0-128", "v2.0-384"])
def test_gold_logits_give_exact_match_100(tmp_path, tokenizer, version_2, settings, size):
    """Long contexts (10+ windows per question at 128, 3-4 at 384), answers on window borders, unicode, odd
    whitespace, answers cut inside words; unanswerable questions for v2.0."""
    path = str(tmp_path / "hard.json")
    dataset = make_hard_squad(path, tokenizer, version_2, num_contexts=size[0], min_words=size[1], **settings)
    _, training_features = _features(path, tokenizer, version_2, True, settings)
    examples, features = _features(path, tokenizer, version_2, False, settings)
    windows = np.bincount([f.example_index for f in features])
    assert windows.min() >= (3 if settings["max_seq_length"] == 384 else 10)
    predictions, nbest, null_odds = compute_predictions(examples, features, gold_logits(training_features), 20, 30,
                                                        True, version_2)
    results = evaluate(dataset["data"], predictions, null_odds or None)
    if version_2:
        assert results["HasAns_total"] > 150 and results["NoAns_total"] > 40
        assert (results["exact"], results["f1"], results["best_exact"]) == (100.0, 100.0, 100.0)
        assert all(odds < 0 if predictions[qid] else odds > 0 for qid, odds in null_odds.items())
    else:
        assert len(predictions) > 150
        assert results == {"exact_match": 100.0, "f1": 100.0}
    # Beyond EM: the text itself is recovered (up to whitespace) through accents, CJK, odd whitespace and
    # answers cut inside a word. Not for words with an [UNK] piece (emoji, fullwidth): there the original
    # returns the whole words, trailing punctuation included.
    golds = [qa["answers"][0]["text"] for p in dataset["data"][0]["paragraphs"] for qa in p["qas"] if qa["answers"]]
    ids = [qa["id"] for p in dataset["data"][0]["paragraphs"] for qa in p["qas"] if qa["answers"]]
    hard = [(qid, gold) for qid, gold in zip(ids, golds) if any(c in gold for c in "\t\n\u202füö東")
            and not any(c in gold for c in "😀Ａ")]
    assert len(hard) >= 5 and all(predictions[qid].split() == gold.split() for qid, gold in hard)


@pytest.mark.parametrize("version_2,threshold", [(False, 0.0), (True, 0.0), (True, -1.5)])
def test_random_logits_give_the_originals_files_byte_for_byte(tmp_path, tokenizer, version_2, threshold):
    settings = {"max_seq_length": 64, "doc_stride": 16, "max_query_length": 12}
    path = str(tmp_path / "hard.json")
    make_hard_squad(path, tokenizer, version_2, seed=2, num_contexts=1, min_words=120, **settings)
    # The original joins its words with spaces: it gives bert_tf's texts where spaces surround each CJK character.
    path = space_out_cjk(path, str(tmp_path / "spaced.json"))
    examples, features = _features(path, tokenizer, version_2, False, settings)
    rng = np.random.default_rng(0)
    results = [RawResult(f.unique_id, rng.normal(0, 3, 64).tolist(), rng.normal(0, 3, 64).tolist())
               for f in features]
    ours = str(tmp_path / "ours")
    write_predictions(ours, *compute_predictions(examples, features, results, 7, 5, True, version_2, threshold))

    original = original_run_squad()
    original.FLAGS.version_2_with_negative = version_2
    original.FLAGS.null_score_diff_threshold = threshold
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    files = ["predictions.json", "nbest_predictions.json"] + (["null_odds.json"] if version_2 else [])
    original.write_predictions(examples, features, results, 7, 5, True, *[str(theirs / n) for n in
                                                                        ("predictions.json", "nbest_predictions.json",
                                                                         "null_odds.json")])
    assert sorted(os.listdir(ours)) == sorted(files)
    for name in files:
        with open(os.path.join(ours, name), encoding="utf-8") as a, open(theirs / name, encoding="utf-8") as b:
            assert a.read() == b.read(), name
    with open(os.path.join(ours, "predictions.json"), encoding="utf-8") as f:
        answers = json.load(f)
    assert len(answers) == len(examples) and sum(a == "" for a in answers.values()) < len(answers)


def test_get_final_text_matches_the_original():
    original = original_run_squad()
    cases = [
        ("steve smith", "Steve Smith's", True),  # the original's example -> "Steve Smith"
        ("1895", "(1895-1943).", True),
        ("zurich", "Zürich,", True),  # accents stripped by lower-casing, same length: mapped back
        ("cafe", "«Café»", True),
        ("東", "東京", True),
        ("ﬁnal", "ﬁnal.", True),
        ("abc", "ＡＢＣ", True),  # fullwidth lower-cased, not "abc": not found, the whole text
        ("million", "$4.5\u00a0million", True),  # U+00A0 is dropped by the tokenizer: lengths differ
        ("Steve", "Steve Smith's", False),
        ("steve", "Steve Smith's", False),  # cased: "steve" is not found
        ("x", "", True),
    ]
    ours = [get_final_text(*case) for case in cases]
    assert ours == [original.get_final_text(*case) for case in cases]
    assert ours[:6] == ["Steve Smith", "1895", "Zürich", "Café", "東", "ﬁnal"]
    assert ours[6:8] == ["ＡＢＣ", "$4.5\u00a0million"]


def test_empty_context_and_no_candidates_give_the_nonce_answer(tmp_path, tokenizer):
    path = str(tmp_path / "empty.json")
    with open(path, "w") as f:
        json.dump({"data": [{"paragraphs": [{"context": " ", "qas": [{"id": "e", "question": "Who?"}]}]}]}, f)
    examples = squad.read_squad_examples(path, False).examples
    features = list(squad.convert_examples_to_features(examples, tokenizer, 32, 8, 8, False))
    results = [RawResult(features[0].unique_id, [2.0] + [0.0] * 31, [1.0] + [0.0] * 31)]
    predictions, nbest, null_odds = compute_predictions(examples, features, results, 20, 30, True, False)
    assert predictions == {"e": "empty"} and null_odds == {}  # the original's nonce
    for threshold, expected in ((0.0, ""), (5.0, "empty")):
        predictions, nbest, null_odds = compute_predictions(examples, features, results, 20, 30, True, True,
                                                            threshold)
        assert predictions == {"e": expected} and null_odds == {"e": 3.0}
        assert [entry["text"] for entry in nbest["e"]] == [""]
    with pytest.raises(ValueError, match="no logits for feature unique_id=1000000000 \\(example e\\)"):
        compute_predictions(examples, features, [], 20, 30, True, False)


# A SQuAD 2.0 run with its evaluation, then a SQuAD 1.1 run without (an unlabelled predict file): the second
# set has neither null_odds.json nor eval_results.json, so an old one left beside it would be misreported.
OLD_RUN = ({"q1": "old answer"}, {"q1": [{"text": "old answer", "probability": 1.0}]}, {"q1": -2.5},
           {"exact": 50.0, "f1": 60.0, "total": 2})
NEW_RUN = ({"q1": "new answer"}, {"q1": [{"text": "new answer", "probability": 1.0}]}, {}, None)


def _prediction_set(directory):
    """{name: text} of the files of the prediction set in `directory`."""
    return {name: (directory / name).read_text(encoding="utf-8") for name in postprocess.PREDICTION_SET
            if (directory / name).exists()}


class _Killed(BaseException):
    """The process died here: nothing after it runs (no cleanup either)."""


def _kill_at(monkeypatch, step):
    """os.replace and os.remove as in a process killed before its `step`-th rename or removal (from 0)."""
    done = [0]

    def cut(real):
        def call(*args, **kwargs):
            if done[0] >= step:
                raise _Killed
            done[0] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(os, "replace", cut(os.replace))
    monkeypatch.setattr(os, "remove", cut(os.remove))


def test_a_kill_anywhere_leaves_one_complete_set_or_none(tmp_path, monkeypatch):
    """Killed before each rename or removal of a rerun in turn: whenever predictions.json is there, the files
    beside it are the complete set of the run that wrote it."""
    sets = {}
    for run, values in (("old", OLD_RUN), ("new", NEW_RUN)):
        write_predictions(tmp_path / f"{run}_alone", *values)
        sets[run] = _prediction_set(tmp_path / f"{run}_alone")
    assert set(sets["old"]) == set(postprocess.PREDICTION_SET)
    assert set(sets["new"]) == {"predictions.json", "nbest_predictions.json"}
    seen = []
    for step in range(20):
        directory = tmp_path / f"cut_{step}"
        write_predictions(directory, *OLD_RUN)
        _kill_at(monkeypatch, step)
        try:
            write_predictions(directory, *NEW_RUN)
            finished = True
        except _Killed:
            finished = False
        monkeypatch.undo()
        files = _prediction_set(directory)
        marker = files.get(postprocess.PREDICTIONS_FILE)
        run = next((run for run in sets if sets[run][postprocess.PREDICTIONS_FILE] == marker), None)
        assert marker is None or files == sets[run], (step, sorted(files))
        seen.append(run)
        if finished:
            break
    assert finished and seen[0] == "old" and seen[-1] == "new" and None in seen  # the cuts reached every phase
    assert sorted(os.listdir(directory)) == sorted(sets["new"])  # and no temporary


@pytest.mark.subprocess  # mounts a tmpfs
def test_a_full_disk_keeps_the_previous_set_and_leaves_no_temporary(tmp_path):
    with small_disk.mounted(tmp_path / "disk", "1m") as disk:
        directory = tmp_path / "disk" / "out"
        write_predictions(directory, *OLD_RUN)
        before = _prediction_set(directory)
        big_nbest = {"q1": [{"text": "new answer " * 200_000, "probability": 1.0}]}  # 2 MiB: more than the disk
        with pytest.raises(OSError, match=f"cannot write {directory}/nbest_predictions.json: "
                                          f"{os.strerror(errno.ENOSPC)}"):
            write_predictions(directory, NEW_RUN[0], big_nbest, *NEW_RUN[2:])
        names = sorted(postprocess.PREDICTION_SET)
        assert _prediction_set(directory) == before and sorted(os.listdir(directory)) == names
        assert small_disk.all_files(disk) == ["out"] + [f"out/{name}" for name in names]  # no temporary
