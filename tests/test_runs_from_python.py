"""The fine-tuning runs of bert_tf.training called from Python, as a notebook calls them, write what their
commands write with the same settings: run_ner, run_swag, run_squad and run_embedder against run_ner.py,
run_swag.py, run_squad.py and run_embedder.py on the tiny model and real text (run_classifier:
test_finetuning_scripts.py). The options are given once, by name: the commands' flags and the runs' options
have the same names. `make test` runs run_embedder's, the extended tier the others."""

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers.finetuning_scripts import ROOT, load_checkpoint_tensors, run, write_files
from tests.helpers.task_data import SWAG_HEADER, SWAG_ROWS
from tests.helpers.tiers import first_in_make_test

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

PYTHON_RUNS = """
import json
import sys

from bert_tf import BertConfig
from bert_tf.training import embedder_run, ner_run, squad_run, swag_run
from bert_tf.training.finetuning import FineTuningOptions
from bert_tf.training.finetuning_run import RunOptions

RUNS = {"run_ner.py": (ner_run.run_ner, ner_run.TaggingTask), "run_swag.py": (swag_run.run_swag, swag_run.SwagTask),
        "run_squad.py": (squad_run.run_squad, squad_run.SquadTask),
        "run_embedder.py": (embedder_run.run_embedder, embedder_run.PairsTask)}
for job in json.loads(sys.argv[1]):
    run, task_class = RUNS[job["script"]]
    options = RunOptions(config=BertConfig.from_json_file(job["config"]), training=FineTuningOptions(**job["training"]),
                         **job["options"])
    print("RESULTS", job["script"], run(options, task_class(**job["task"])))
"""

# The files each command writes besides its checkpoints, compared byte for byte.
OUTPUTS = {"run_ner.py": ["eval_results.txt", "labels.txt", "eval_predictions.txt", "test_predictions.txt"],
           "run_swag.py": ["eval_results.txt", "test_results.tsv"],
           "run_squad.py": ["predictions.json", "nbest_predictions.json", "null_odds.json", "eval_results.json"],
           "run_embedder.py": ["eval_results.txt", "modules.json", "sentence_bert_config.json",
                               "1_Pooling/config.json"]}


def jobs(tmp_path, tiny_model_dir, squad_setup):
    """{script: {config, options, training, task}}: each run's settings by name, its command's flags too."""
    from tools import make_pairs

    sentences = "Paris B-geo-loc\nis O\nnice O\n\nI O\nmet O\nAnna B-person\nSmith I-person\n\n"
    ner = write_files(tmp_path / "ner", {"train.txt": sentences * 2, "dev.txt": sentences,
                                         "test.txt": "Hello\nBerlin\n"})
    test = SWAG_HEADER.replace(",label", "") + SWAG_ROWS.replace(",0\n", "\n").replace(",2\n", "\n")
    swag = write_files(tmp_path / "swag", {"train.csv": SWAG_HEADER + SWAG_ROWS * 2,
                                           "val.csv": SWAG_HEADER + SWAG_ROWS, "test.csv": test})
    make_pairs.main([f"--output_dir={tmp_path / 'pairs'}", "--num_train=24", "--num_dev=12"])
    squad_dir, squad_flags = squad_setup
    squad = dict(flag[2:].split("=", 1) for flag in squad_flags)
    tiny = {"vocab_file": str(tiny_model_dir["vocab_file"]), "init_checkpoint": str(tiny_model_dir["init_checkpoint"]),
            "max_seq_length": 32, "do_train": True, "do_eval": True, "seed": 3, "train_batch_size": 2,
            "num_train_epochs": 1}
    return {
        "run_ner.py": {**tiny, "do_predict": True, "data_dir": str(ner)},
        "run_swag.py": {**tiny, "do_predict": True, "data_dir": str(swag)},
        "run_embedder.py": {**tiny, "data_dir": str(tmp_path / "pairs"), "train_batch_size": 4, "pooling": "max"},
        "run_squad.py": {"vocab_file": squad["vocab_file"], "config": squad["bert_config_file"],
         "version_2_with_negative": True, "max_seq_length": 96, "doc_stride": 32, "max_query_length": 40,
         "predict_batch_size": 5, "do_train": True, "do_predict": True, "train_file": f"{squad_dir}/train-v2.0.json",
         "predict_file": f"{squad_dir}/dev-v2.0.json", "train_batch_size": 8, "num_train_epochs": 0.3,
         "learning_rate": 1e-3, "seed": 1},
    }


TRAINING = {"train_batch_size", "num_train_epochs", "learning_rate", "seed"}  # FineTuningOptions' fields here
RUN_OPTIONS = {"vocab_file", "init_checkpoint", "max_seq_length", "do_train", "do_eval", "do_predict",
               "predict_batch_size"}


@pytest.mark.parametrize("script", first_in_make_test(OUTPUTS, 1))  # run_embedder.py in make test
def test_fine_tuning_runs_from_python_give_the_commands_outputs(script, tiny_model_dir, squad_setup, tmp_path):
    job = jobs(tmp_path, tiny_model_dir, squad_setup)[script]
    config = job.pop("config", str(tiny_model_dir["bert_config_file"]))
    command_dir, python_dir = tmp_path / "command", tmp_path / "python"
    done = run(script, {}, bert_config_file=config, output_dir=command_dir, **job)
    assert done.returncode == 0, f"{script}: {done.stderr[-3000:]}"
    python_job = {
        "script": script, "config": config,
        "options": {"output_dir": str(python_dir), **{k: v for k, v in job.items() if k in RUN_OPTIONS}},
        "training": {k: v for k, v in job.items() if k in TRAINING},
        "task": {k: v for k, v in job.items() if k not in RUN_OPTIONS | TRAINING}}
    called = subprocess.run([sys.executable, "-c", PYTHON_RUNS, json.dumps([python_job])], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert called.returncode == 0, called.stderr[-3000:]
    assert called.stdout.count("RESULTS ") == 1
    for name in OUTPUTS[script]:
        assert (python_dir / name).read_bytes() == (command_dir / name).read_bytes(), f"{script}: {name}"
    weights = [load_checkpoint_tensors(directory) for directory in (command_dir, python_dir)]
    assert sorted(weights[0]) == sorted(weights[1]) and len(weights[0]) > 20, script
    for name in weights[0]:
        if isinstance(weights[0][name], bytes):  # the embedded config
            assert weights[0][name] == weights[1][name], f"{script}: {name}"
        else:
            np.testing.assert_allclose(weights[0][name], weights[1][name], rtol=1e-5, atol=1e-6,
                                       err_msg=f"{script}: {name}")
