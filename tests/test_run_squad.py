"""run_squad.py end to end on a tiny model: a few training steps on cloze SQuAD 2.0 made from real prose, then
predictions, n-best, null odds and the official evaluation; a second run reuses the cached features."""

import json
import os
import subprocess
import sys

from tests.helpers.squad_fixtures import ROOT


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

