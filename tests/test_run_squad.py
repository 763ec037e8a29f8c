"""run_squad.py end to end on a tiny model: a few training steps on cloze SQuAD 2.0 made from real prose, then
predictions, n-best, null odds and the official evaluation; a second run reuses the cached features."""

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
