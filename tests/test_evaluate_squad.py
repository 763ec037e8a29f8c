"""SQuAD evaluation equals the official v1.1 and v2.0 scripts: hand-computed cases, and 240 generated
predictions scored against the official scripts' logic transcribed below (separately from the package)."""

import collections
import json
import random
import re
import runpy
import string
import sys

import pytest

from bert_tf.cli import evaluate_squad
from bert_tf.evaluation.squad import evaluate, exact_match, f1_score, missing_answers, normalize_answer

# ------------------------------------------------------- the official scripts' logic, for reference only

def _official_normalize(s):
    def remove_articles(text):
        return re.sub(re.compile(r"\b(a|an|the)\b", re.UNICODE), " ", text)

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return " ".join(remove_articles(remove_punc(s.lower())).split())


def _official_v1(dataset, predictions):
    def f1(prediction, ground_truth):
        p, g = _official_normalize(prediction).split(), _official_normalize(ground_truth).split()
        num_same = sum((collections.Counter(p) & collections.Counter(g)).values())
        if num_same == 0:
            return 0
        precision, recall = 1.0 * num_same / len(p), 1.0 * num_same / len(g)
        return (2 * precision * recall) / (precision + recall)

    total = em = f = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    continue
                truths = [a["text"] for a in qa["answers"]]
                pred = predictions[qa["id"]]
                em += max(_official_normalize(pred) == _official_normalize(t) for t in truths)
                f += max(f1(pred, t) for t in truths)
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f / total}


def _official_v2(dataset, preds, na_probs=None, na_prob_thresh=1.0):
    def get_tokens(s):
        return _official_normalize(s).split() if s else []

    def compute_f1(a_gold, a_pred):
        gold_toks, pred_toks = get_tokens(a_gold), get_tokens(a_pred)
        num_same = sum((collections.Counter(gold_toks) & collections.Counter(pred_toks)).values())
        if len(gold_toks) == 0 or len(pred_toks) == 0:
            return int(gold_toks == pred_toks)
        if num_same == 0:
            return 0
        precision, recall = 1.0 * num_same / len(pred_toks), 1.0 * num_same / len(gold_toks)
        return (2 * precision * recall) / (precision + recall)

    qas = [qa for article in dataset for p in article["paragraphs"] for qa in p["qas"]]
    has_ans = {qa["id"]: bool(qa["answers"]) for qa in qas}
    exact_raw, f1_raw = {}, {}
    for qa in qas:
        golds = [a["text"] for a in qa["answers"] if _official_normalize(a["text"])] or [""]
        exact_raw[qa["id"]] = max(int(_official_normalize(a) == _official_normalize(preds[qa["id"]])) for a in golds)
        f1_raw[qa["id"]] = max(compute_f1(a, preds[qa["id"]]) for a in golds)
    probs = na_probs if na_probs is not None else {k: 0.0 for k in preds}

    def apply(scores):
        return {q: float(not has_ans[q]) if probs[q] > na_prob_thresh else s for q, s in scores.items()}

    exact, f1 = apply(exact_raw), apply(f1_raw)

    def make(qids):
        return {"exact": 100.0 * sum(exact[k] for k in qids) / len(qids),
                "f1": 100.0 * sum(f1[k] for k in qids) / len(qids), "total": len(qids)}

    out = make(list(exact))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [k for k, v in has_ans.items() if v == wanted]
        if qids:
            out.update({f"{prefix}_{k}": v for k, v in make(qids).items()})
    if na_probs is not None:
        for name, scores in (("exact", exact_raw), ("f1", f1_raw)):
            cur = best = sum(1 for k in has_ans if not has_ans[k])
            best_thresh = 0.0
            for qid in sorted(probs, key=lambda k: probs[k]):
                if qid not in scores:
                    continue
                cur += scores[qid] if has_ans[qid] else (-1 if preds[qid] else 0)
                if cur > best:
                    best, best_thresh = cur, probs[qid]
            out[f"best_{name}"], out[f"best_{name}_thresh"] = 100.0 * best / len(scores), best_thresh
    return out


# ---------------------------------------------------------------------------------------- hand-computed

def test_normalization_and_scores_by_hand():
    assert normalize_answer("The  Quick, brown fox!") == "quick brown fox"
    assert normalize_answer("an anthem") == "anthem"  # articles are whole words only
    assert normalize_answer("«Café» — Zürich") == "«café» — zürich"  # only ASCII punctuation goes, accents stay
    assert normalize_answer("U.S.A.") == "usa"
    assert exact_match("the Broncos", "Broncos.") == 1 and exact_match("Zurich", "Zürich") == 0
    # pred {cat, sat}, gold {cat, sat, on, mat}: P = 2/2, R = 2/4, F1 = 2PR / (P + R) = 2/3
    assert f1_score("the cat sat", "a cat sat on the mat") == pytest.approx(2 / 3, abs=1e-12)
    # repeated tokens count once per match: pred {cat x3}, gold {cat}: P = 1/3, R = 1, F1 = 1/2
    assert f1_score("cat cat cat", "cat") == pytest.approx(0.5, abs=1e-12)
    assert f1_score("dog", "cat") == 0
    # both normalise to nothing: v1.1 gives 0 (no common token), v2.0 gives 1 (both say "no answer")
    assert f1_score("the", "", version_2=False) == 0 and f1_score("the", "") == 1
    assert f1_score("", "Denver") == 0


def _dataset(questions, version_2):
    qas = []
    for qid, answers in questions:
        qa = {"id": qid, "question": "?", "answers": [{"text": a, "answer_start": 0} for a in answers]}
        if version_2:
            qa["is_impossible"] = not answers
        qas.append(qa)
    return [{"title": "t", "paragraphs": [{"context": "c", "qas": qas}]}]


def test_v1_dataset_by_hand(caplog):
    data = _dataset([("q1", ["Denver Broncos", "Broncos"]), ("q2", ["1895"]), ("q3", ["Santa Clara"])], False)
    # q1: "the Broncos" = gold 2 -> EM 1, F1 1; q2: "1895-1943" -> one token "18951943" -> EM 0, F1 0;
    # q3: no prediction -> 0.  EM = 100 * 1/3, F1 = 100 * 1/3.
    results = evaluate(data, {"q1": "the Broncos", "q2": "1895-1943"})
    assert results == pytest.approx({"exact_match": 100 / 3, "f1": 100 / 3}, abs=1e-9)
    assert list(results) == ["exact_match", "f1"]
    assert "Unanswered question q3 will receive score 0." in caplog.text
    with pytest.raises(ValueError, match="question q4 has no answers; SQuAD 1.1 data"):
        evaluate(data + _dataset([("q4", [])], False), {"q4": "x"})


def test_v2_dataset_by_hand():
    data = _dataset([("q1", ["Denver Broncos"]), ("q2", []), ("q3", [])], True)
    predictions = {"q1": "Broncos", "q2": "", "q3": "foo"}
    # raw: q1 EM 0, F1 2/3 (P = 1, R = 1/2); q2 "" vs no answer: 1, 1; q3 "foo" vs no answer: 0, 0.
    expected = {"exact": 100 / 3, "f1": 100 * (2 / 3 + 1) / 3, "total": 3,
                "HasAns_exact": 0.0, "HasAns_f1": 100 * 2 / 3, "HasAns_total": 1,
                "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2}
    results = evaluate(data, predictions)
    assert results == pytest.approx(expected, abs=1e-9) and list(results) == list(expected)
    # Best thresholds, na_probs q1 0.2, q3 0.5, q2 0.9; start at #no-answer = 2, walk by increasing na_prob:
    # exact: q1 +0 -> 2, q3 -1 -> 1, q2 +0 -> 1: best 2 at threshold 0.0 -> 66.67;
    # f1:    q1 +2/3 -> 2.67 (best, threshold 0.2), q3 -1, q2 +0: best_f1 = 100 * 2.67 / 3 = 88.89.
    results = evaluate(data, predictions, {"q1": 0.2, "q2": 0.9, "q3": 0.5})
    assert results == pytest.approx({**expected, "best_exact": 200 / 3, "best_exact_thresh": 0.0,
                                     "best_f1": 100 * (8 / 3) / 3, "best_f1_thresh": 0.2}, abs=1e-9)
    # null odds above na_prob_thresh = 1.0 count as "no answer": q3's 1.5 turns its 0 into 1.
    results = evaluate(data, predictions, {"q1": 0.2, "q2": 0.9, "q3": 1.5})
    assert results["exact"] == pytest.approx(200 / 3) and results["NoAns_exact"] == 100.0
    with pytest.raises(ValueError, match="1 question\\(s\\) have no prediction: q3"):
        evaluate(data, {"q1": "x", "q2": ""})
    with pytest.raises(ValueError, match="have no no-answer probability: q2"):
        evaluate(data, predictions, {"q1": 0.0, "q3": 0.0})
    with pytest.raises(ValueError, match="predictions: 1 question\\(s\\) have a value of the wrong type: q2=None"):
        evaluate(data, {**predictions, "q2": None})


def test_which_questions_are_labelled():
    """A question has answers to score against when its `answers` list is not empty, or (SQuAD 2.0) when it
    is `is_impossible: true`, with `answers` empty or absent; `missing_answers` names the file and the others."""
    v2 = _dataset([("q1", ["Denver Broncos"]), ("q2", []), ("q3", [])], True)
    del v2[0]["paragraphs"][0]["qas"][2]["answers"]  # an unanswerable question needs no answers key
    results = evaluate(v2, {"q1": "Broncos", "q2": "", "q3": "foo"})
    assert (results["HasAns_total"], results["NoAns_total"], results["NoAns_exact"]) == (1, 2, 50.0)
    assert missing_answers(v2, "dev-v2.0.json") is None

    v1 = _dataset([(f"q{i}", []) for i in range(3)], False)
    assert missing_answers(v1, "test.json") == "none of the 3 questions of test.json has answers"
    del v1[0]["paragraphs"][0]["qas"][1]["answers"]
    assert missing_answers(v1, "test.json") == "none of the 3 questions of test.json has answers"
    partly = _dataset([(f"q{i}", ["x"] if i % 3 == 0 else []) for i in range(12)], False)
    assert missing_answers(partly, "dev.json") == "8 of the 12 questions of dev.json have no answers: q1, q2, q4, " \
                                                  "q5, q7, ..."
    impossible_but_not_said = _dataset([("q1", ["x"]), ("q2", [])], True)
    impossible_but_not_said[0]["paragraphs"][0]["qas"][1]["is_impossible"] = False
    assert missing_answers(impossible_but_not_said, "d.json") == "1 of the 2 questions of d.json has no answers: q2"


def test_errors_about_the_data_name_its_file(tmp_path, capsys):
    data_file = _write(tmp_path / "dev-v1.1.json", {"data": _dataset([("q1", ["x"]), ("q2", [])], False)})
    pred_file = _write(tmp_path / "predictions.json", {"q1": "x", "q2": "y"})
    assert evaluate_squad.main([data_file, pred_file]) == 1
    assert capsys.readouterr().err == (f"Error: {data_file}: question q2 has no answers; SQuAD 1.1 data (no "
                                       "is_impossible) needs at least one per question\n")
    v2_file = _write(tmp_path / "dev-v2.0.json", {"data": _dataset([("q1", ["x"]), ("q2", [])], True)})
    assert evaluate_squad.main([v2_file, _write(tmp_path / "p1.json", {"q1": "x"})]) == 1
    assert capsys.readouterr().err == f"Error: {v2_file}: 1 question(s) have no prediction: q2\n"


# -------------------------------------------------------------------------------- 240 generated cases

WORDS = ("Denver Broncos Super Bowl Santa Clara Levi's Stadium 1895 Zürich café naïve 東京 Ångström "
         "the a an of and in it's U.S. co-operation $4.5 million 50th 😀 rock'n'roll").split()


def _generated(rng, version_2):
    """240 questions with 1-3 gold answers (none for v2.0 unanswerable ones) and predictions that are right,
    right up to case/punctuation/articles/whitespace, partly right, wrong, empty or missing tokens."""
    questions, predictions = [], {}
    for i in range(240):
        qid = f"g{i}"
        golds = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(1, 3))]
        if version_2 and i % 4 == 0:
            golds = []
        gold = golds[0] if golds else ""
        kind = i % 8
        if kind == 0:
            prediction = gold
        elif kind == 1:
            prediction = f"The {gold.upper()}!!"
        elif kind == 2:
            prediction = "  ".join(gold.split()[: max(1, len(gold.split()) // 2)]) + " ,"
        elif kind == 3:
            prediction = gold + " " + rng.choice(WORDS)
        elif kind == 4:
            prediction = ""
        elif kind == 5:
            prediction = " ".join(rng.choice(WORDS) for _ in range(3))
        elif kind == 6:
            prediction = "a an the"
        else:
            prediction = "\t".join(reversed(gold.split())) + "."
        questions.append((qid, golds))
        predictions[qid] = prediction
    return _dataset(questions, version_2), predictions


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_240_predictions_equal_the_official_formulas(seed):
    rng = random.Random(seed)
    data, predictions = _generated(rng, False)
    ours, theirs = evaluate(data, predictions), _official_v1(data, predictions)
    assert ours.keys() == theirs.keys() and all(abs(ours[k] - theirs[k]) < 1e-9 for k in ours)
    assert 0 < ours["exact_match"] < ours["f1"] < 100

    data, predictions = _generated(rng, True)
    na_probs = {qid: rng.uniform(-6, 6) for qid in predictions}  # null odds, some above the 1.0 threshold
    for probs in (None, na_probs):
        ours, theirs = evaluate(data, predictions, probs), _official_v2(data, predictions, probs)
        assert list(ours) == list(theirs) and all(abs(ours[k] - theirs[k]) < 1e-9 for k in ours)
        assert ours["total"] == 240 and ours["NoAns_total"] == 60


# --------------------------------------------------------------------------------------- files and CLI

def _write(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False)
    return str(path)


def test_command_line_prints_the_official_json(tmp_path, capsys, monkeypatch):
    data, predictions = _generated(random.Random(5), True)
    na_probs = {qid: float(i % 7 - 3) for i, qid in enumerate(predictions)}
    data_file = _write(tmp_path / "dev.json", {"version": "v2.0", "data": data})
    pred_file = _write(tmp_path / "predictions.json", predictions)
    null_file = _write(tmp_path / "null_odds.json", na_probs)
    assert evaluate_squad.main([data_file, pred_file, "--na-prob-file", null_file]) == 0
    printed = capsys.readouterr().out
    assert printed == json.dumps(_official_v2(data, predictions, na_probs), indent=2) + "\n"

    v1_data, v1_predictions = _generated(random.Random(6), False)
    v1_file = _write(tmp_path / "dev-v1.json", {"version": "1.1", "data": v1_data})
    v1_pred = _write(tmp_path / "p1.json", v1_predictions)
    monkeypatch.setattr(sys, "argv", ["evaluate_squad", v1_file, v1_pred])
    monkeypatch.delitem(sys.modules, "bert_tf.cli.evaluate_squad")  # run afresh, as `python -m` does
    with pytest.raises(SystemExit) as exit_info:  # what `python -m bert_tf.cli.evaluate_squad` runs
        runpy.run_module("bert_tf.cli.evaluate_squad", run_name="__main__")
    printed = capsys.readouterr().out
    assert exit_info.value.code == 0 and printed.count("\n") == 1  # v1.1 prints one line
    assert json.loads(printed) == pytest.approx(_official_v1(v1_data, v1_predictions), abs=1e-9)

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert evaluate_squad.main([data_file, str(bad)]) == 1
    assert "bad.json: the predictions file is not valid JSON" in capsys.readouterr().err
    assert evaluate_squad.main([v1_file, v1_pred, "-n", null_file]) == 1
    assert "null odds were given for SQuAD 1.1 data" in capsys.readouterr().err
    assert evaluate_squad.main([str(bad), pred_file]) == 1
    assert "bad.json: a SQuAD file is not valid JSON" in capsys.readouterr().err

    assert evaluate_squad.main([pred_file, data_file]) == 1  # swapped: a few question ids named, not all
    error = capsys.readouterr().err
    assert error.startswith(f"Error: {pred_file}: expected a SQuAD JSON object") and error.count("\n") == 1
    assert f"with {len(predictions)} key(s)" in error and "the SQuAD file comes first" in error
    assert len(error) < 400 < len(predictions) * 10

    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes('{"q1": "caf\u00e9"}'.encode("latin-1"))
    assert evaluate_squad.main([data_file, str(latin1)]) == 1
    assert f"{latin1}: the predictions file is not UTF-8 text" in capsys.readouterr().err


def test_command_line_cmrc2018_metric_prints_the_official_line(tmp_path, capsys):
    """--metric=cmrc2018: the CMRC 2018 script's one line (bert_tf/evaluation/cmrc.py; its formulas are tested
    in test_cmrc_evaluate.py). q1: EM 1, F1 1; q2: 人民共和国 of 中华人民共和国, P = R = 5/7; q3: unanswered."""
    questions = [("q1", ["《红楼梦》"]), ("q2", ["中华人民共和国"]), ("q3", ["北京"])]
    data_file = _write(tmp_path / "cmrc2018_dev.json", {"version": "v1.0", "data": _dataset(questions, False)})
    pred_file = _write(tmp_path / "predictions.json", {"q1": "红楼梦", "q2": "人民共和国成立"})
    assert evaluate_squad.main(["--metric=cmrc2018", data_file, pred_file]) == 0
    f1, em = 100 * (1 + 5 / 7) / 3, 100 / 3  # 57.142857..., 33.333...
    assert capsys.readouterr().out == (f'{{"AVERAGE": "{(f1 + em) / 2:.3f}", "F1": "57.143", "EM": "33.333", '
                                       f'"TOTAL": 3, "SKIP": 1, "FILE": {json.dumps(pred_file)}}}\n')
    # The default is SQuAD's, which gives nothing here: 《》 are not ASCII punctuation, and an answer without
    # spaces is one token.
    assert evaluate_squad.main([data_file, pred_file]) == 0
    assert json.loads(capsys.readouterr().out) == {"exact_match": 0.0, "f1": 0.0}

    assert evaluate_squad.main(["--metric=cmrc2018", data_file, pred_file, "-n", pred_file]) == 1
    assert capsys.readouterr().err == (f"Error: --na-prob-file={pred_file} is for the SQuAD 2.0 evaluation; "
                                       "--metric=cmrc2018 has no null odds\n")
    no_answers = _write(tmp_path / "test.json", {"data": _dataset([("q1", [])], False)})
    assert evaluate_squad.main(["--metric=cmrc2018", no_answers, pred_file]) == 1
    assert capsys.readouterr().err == (f"Error: {no_answers}: question q1 has no answers; the CMRC 2018 evaluation "
                                       "needs at least one per question (it has no unanswerable questions)\n")
    with pytest.raises(SystemExit) as exit_info:
        evaluate_squad.main(["--metric=drcd", data_file, pred_file])
    assert exit_info.value.code == 2 and "invalid choice: 'drcd'" in capsys.readouterr().err
