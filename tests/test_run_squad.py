"""run_squad.py end to end on a tiny model: a few training steps on cloze SQuAD 2.0 made from real prose, then
predictions, n-best, null odds and the official evaluation; a second run reuses the cached features."""

import json
import os
import subprocess
import sys

import pytest

from tools import make_cloze_squad, pypi_data

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_script(*flags):
    return subprocess.run([sys.executable, os.path.join(ROOT, "run_squad.py"), *flags], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    directory = tmp_path_factory.mktemp("run_squad")
    make_cloze_squad.main([f"--output_dir={directory}", "--num_train=40", "--num_dev=12",
                           "--version_2_with_negative", "--max_chars=600"])
    config = {"vocab_size": 30522, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
              "intermediate_size": 37, "max_position_embeddings": 128, "type_vocab_size": 2, "hidden_act": "gelu",
              "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02}
    with open(directory / "bert_config.json", "w") as f:
        json.dump(config, f)
    flags = [f"--vocab_file={os.path.join(pypi_data.minilm_dir(), 'vocab.txt')}",
             f"--bert_config_file={directory / 'bert_config.json'}", "--version_2_with_negative=True",
             "--max_seq_length=96", "--doc_stride=32", "--max_query_length=40", "--predict_batch_size=5"]
    return directory, flags


def test_train_predict_evaluate_then_reuse_the_cache(setup):
    directory, flags = setup
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

