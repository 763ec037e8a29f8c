"""run_squad.py end to end on a tiny model: a few training steps on cloze SQuAD 2.0 made from real prose, then
predictions, n-best, null odds and the official evaluation; a second run reuses the cached features. Predict
files without answers are predicted, not evaluated; a rerun replaces the whole prediction set."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.squad_fixtures import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


def run_script(*flags):
    return subprocess.run([sys.executable, os.path.join(ROOT, "run_squad.py"), *flags], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def test_train_predict_evaluate_then_reuse_the_cache(squad_setup):
    directory, flags = squad_setup
    output = directory / "out"
    first = run_script(*flags, "--do_train=True", "--do_predict=True", f"--train_file={directory}/train-v2.0.json",
                       f"--predict_file={directory}/dev-v2.0.json", f"--output_dir={output}",
                       "--train_batch_size=8", "--num_train_epochs=0.6", "--iterations_per_loop=3",
                       "--save_checkpoints_steps=3", "--learning_rate=1e-3", "--seed=1")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "step 3/3" in first.stderr and "span_accuracy" in first.stderr
    files = set(os.listdir(output))
    assert {"predictions.json", "nbest_predictions.json", "null_odds.json", "eval_results.json",
            "model.ckpt-3.index", "bert_config.json"} <= files
    with open(output / "predictions.json") as f:
        predictions = json.load(f)
    with open(output / "null_odds.json") as f:
        null_odds = json.load(f)
    with open(output / "eval_results.json") as f:
        results = json.load(f)
    assert len(predictions) == len(null_odds) == results["total"] == 12
    assert {"exact", "f1", "HasAns_exact", "NoAns_exact", "best_f1_thresh"} <= set(results)

    second = run_script(*flags, "--do_predict=True", f"--predict_file={directory}/dev-v2.0.json",
                        f"--output_dir={output}")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "reusing" in second.stderr and "model.ckpt-3" in second.stderr
    with open(output / "predictions.json") as f:
        assert json.load(f) == predictions  # the same weights, from the checkpoint in output_dir


@pytest.mark.extended
def test_best_metric_keeps_the_best_dev_f1(squad_setup):
    """SQuAD trains through the shared fine-tuning runner: --best_metric evaluates the predict file after
    every checkpoint and keeps the best weights in best/; run_squad.py has no --do_eval."""
    directory, flags = squad_setup
    output = directory / "best_run"
    done = run_script(*flags, "--do_train=True", f"--train_file={directory}/train-v2.0.json",
                      f"--predict_file={directory}/dev-v2.0.json", f"--output_dir={output}", "--train_batch_size=8",
                      "--num_train_epochs=0.6", "--save_checkpoints_steps=1", "--learning_rate=1e-3", "--seed=1",
                      "--best_metric=f1")
    assert done.returncode == 0, done.stderr[-3000:]
    with open(output / "dev_evaluations.jsonl") as f:
        evaluations = {entry["step"]: entry["results"] for entry in map(json.loads, f)}
    assert sorted(evaluations) == [1, 2, 3] and all("f1" in r and "exact" in r for r in evaluations.values())
    best_step = max(sorted(evaluations), key=lambda step: evaluations[step]["f1"])  # the first of equal ones
    with open(output / "best" / "eval_results.txt") as f:
        kept = dict(line.rstrip("\n").split(" = ") for line in f)
    assert int(kept["global_step"]) == best_step and float(kept["f1"]) == evaluations[best_step]["f1"]
    assert (output / "best" / f"model.ckpt-{best_step}.index").exists()

    no_eval = run_script(*flags, "--do_eval=True", f"--predict_file={directory}/dev-v2.0.json",
                         f"--output_dir={output}")
    assert no_eval.returncode == 1 and "--do_eval is not a mode of this script" in no_eval.stderr


def predict_only(squad_setup, tiny_model_dir, predict_file, output, *flags):
    """run_squad.py --do_predict of `predict_file` into `output` with the seeded tiny model (64 positions)."""
    _, setup_flags = squad_setup
    return run_script(*setup_flags, f"--bert_config_file={tiny_model_dir['bert_config_file']}",
                      f"--init_checkpoint={tiny_model_dir['init_checkpoint']}", "--max_seq_length=64",
                      "--do_predict=True", f"--predict_file={predict_file}", f"--output_dir={output}", *flags)


def squad_variant(squad_setup, name, change):
    """A copy of the setup's dev-v2.0.json (12 questions, every third unanswerable) named `name`, with
    `change(qa)` applied to each question, or the question dropped when it returns False."""
    directory, _ = squad_setup
    with open(directory / "dev-v2.0.json", encoding="utf-8") as f:
        dataset = json.load(f)
    for article in dataset["data"]:
        for paragraph in article["paragraphs"]:
            paragraph["qas"] = [qa for qa in paragraph["qas"] if change(qa) is not False]
    with open(directory / name, "w", encoding="utf-8") as f:
        json.dump(dataset, f)
    return directory / name


def not_evaluating_lines(stderr):
    return [line for line in stderr.splitlines() if "Not evaluating" in line]


def test_a_predict_file_without_answers_is_predicted_not_evaluated(squad_setup, tiny_model_dir):
    """A test set (SQuAD 1.1, `"answers": []`): the predictions are written and one line says why there is no
    evaluation, as the original's predict mode never reads answers. SQuAD 2.0 with some answers missing: the
    count and the first ids; an `is_impossible: true` question needs no answers (its answer is none)."""
    directory, _ = squad_setup

    def unlabelled(qa):
        qa.pop("is_impossible")
        qa["answers"] = []

    test_set = squad_variant(squad_setup, "test-v1.1.json", unlabelled)
    done = predict_only(squad_setup, tiny_model_dir, test_set, directory / "test_out",
                        "--version_2_with_negative=False")
    assert done.returncode == 0, done.stderr[-3000:]
    files = set(os.listdir(directory / "test_out"))
    assert {"predictions.json", "nbest_predictions.json"} <= files
    assert not {"eval_results.json", "null_odds.json"} & files
    with open(directory / "test_out" / "predictions.json") as f:
        assert len(json.load(f)) == 12
    [line] = not_evaluating_lines(done.stderr)
    assert line.endswith(f"Not evaluating the predictions: none of the 12 questions of {test_set} has answers")

    def partly_labelled(qa):
        if qa["is_impossible"] or qa["id"] in ("dev000002", "dev000005", "dev000008"):
            del qa["answers"]

    partial = squad_variant(squad_setup, "partial-v2.0.json", partly_labelled)
    done = predict_only(squad_setup, tiny_model_dir, partial, directory / "partial_out")
    assert done.returncode == 0, done.stderr[-3000:]
    assert {"predictions.json", "nbest_predictions.json", "null_odds.json"} <= set(os.listdir(
        directory / "partial_out")) and not (directory / "partial_out" / "eval_results.json").exists()
    [line] = not_evaluating_lines(done.stderr)
    assert line.endswith(f"3 of the 12 questions of {partial} have no answers: dev000002, dev000005, dev000008")


def test_a_rerun_replaces_the_whole_prediction_set_and_removes_leftovers(squad_setup, tiny_model_dir):
    """A SQuAD 2.0 run (with null_odds.json), then a SQuAD 1.1 rerun into the same folder: the old
    null_odds.json does not stay beside the new predictions, nor do the temporaries of a killed run."""
    directory, _ = squad_setup
    output = directory / "rerun_out"
    first = predict_only(squad_setup, tiny_model_dir, directory / "dev-v2.0.json", output)
    assert first.returncode == 0, first.stderr[-3000:]
    assert set(os.listdir(output)) >= {"predictions.json", "nbest_predictions.json", "null_odds.json",
                                       "eval_results.json"}
    killed = subprocess.Popen([sys.executable, "-c", ""])
    killed.wait()  # its pid is now that of a process that has ended
    leftovers = [f"predictions.json.incomplete-{killed.pid}", f"nbest_predictions.json.incomplete-{killed.pid}"]
    for name in leftovers:
        (output / name).write_text("{", encoding="utf-8")

    def answerable_only(qa):
        return not qa.pop("is_impossible")  # SQuAD 1.1: the 8 answerable questions

    answerable = squad_variant(squad_setup, "answerable-v1.1.json", answerable_only)
    second = predict_only(squad_setup, tiny_model_dir, answerable, output, "--version_2_with_negative=False")
    assert second.returncode == 0, second.stderr[-3000:]
    files = set(os.listdir(output))
    assert {"predictions.json", "nbest_predictions.json", "eval_results.json"} <= files
    assert "null_odds.json" not in files and not files & set(leftovers)
    with open(output / "predictions.json") as f, open(output / "eval_results.json") as g:
        assert len(json.load(f)) == 8 and set(json.load(g)) == {"exact_match", "f1"}
