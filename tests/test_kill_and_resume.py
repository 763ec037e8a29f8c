"""SIGKILL at 30 moments of pretraining and fine-tuning (inside the state save, the export of the weights,
the `checkpoint` index, the dev evaluation, the best/ swap, at random times; fine-tuning with shuffled and with
length-grouped batches), then the same command again:
every rerun must end as a run that was never interrupted, with the same final weights, `checkpoint`
naming the final step, best/ holding the best evaluated step, and the same dev evaluations.

Each killed run is a real process killed by SIGKILL (tests/helpers/kill_at.py picks the moment); the rerun is
the plain script. The same on Keras's JAX backend (KERAS_BACKEND=jax) at 13 moments, in processes where TensorFlow
cannot be imported (tests/helpers/without_tensorflow.py): the TF-free path's own writers and input."""

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.helpers import pretraining_records, small_disk, without_tensorflow
from tests.helpers.configs import script_config, write_config

pytestmark = [pytest.mark.slow, pytest.mark.subprocess, pytest.mark.extended]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KILL_AT = os.path.join(ROOT, "tests", "helpers", "kill_at.py")
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}

# A case is one or two moments: the first kills a run of the command, the second (counting the events of the
# rerun's own process) kills the rerun, then the command runs to its end.
# Pretraining: 6 steps, a checkpoint every 2 (states 2, 4, 6), evaluations before training, at 2 and 4 and
# at the end. "out/checkpoint" is the index file of the output dir.
PRETRAINING_CASES = [
    # inside the data-position save of step 2; then inside the state save of step 4
    "before_replace:data_worker_0/ckpt-2.index then before_replace:training_state/ckpt-4.index",
    # data position 2 saved, the state not; then state 4 saved, its weights not exported
    "before_replace:training_state/ckpt-2.data-00000-of-00001 then after_replace:training_state/ckpt-4.index",
    # the state of step 2 written under its temporary name; then the rerun's model.ckpt-2 export likewise
    "checkpoint_written::2 then export_written::1",
    # model.ckpt-4 written under its temporary name; then inside the final export
    "export_written::2 then before_replace:model.ckpt-6.index",
    # inside the export of step 4; then inside the final state save
    "before_replace:model.ckpt-4.index then before_replace:training_state/ckpt-6.index",
    # model.ckpt-4 complete, the index still naming model.ckpt-2; then training done, final export missing
    "before_replace:out/checkpoint:2 then after_replace:training_state/ckpt-6.index",
    # the evaluation at the checkpoint of step 2; then the final export complete, the index naming step 4
    "evaluate::2 then before_replace:out/checkpoint:2",
    "evaluate::4",  # the final evaluation (eval_results.txt)
    "random:1",
]
# Fine-tuning (run_classifier, --best_metric): 6 steps, a checkpoint and a dev evaluation every 2.
FINETUNING_CASES = [
    "before_replace:training_state/ckpt-2.index then after_replace:training_state/ckpt-4.index",
    # the dev evaluation of step 2; then inside the export of step 4
    "predict::1 then before_replace:model.ckpt-4.index",
    # best/ replaced for step 4, the old folder not yet removed; then best/ updated again, not recorded
    "exchanged::1 then before_replace:out/dev_evaluations.jsonl",
    # no atomic exchange: the old best/ moved aside, the new one not in place; then the final export missing
    "moved_aside::1 then after_replace:training_state/ckpt-6.index",
    # best/ updated for step 4, the evaluation not recorded; then inside the final export
    "before_replace:out/dev_evaluations.jsonl:2 then before_replace:model.ckpt-6.index",
    "predict::3",  # the dev evaluation of the last step
    "before_replace:out/checkpoint:3",  # the final export complete, the index naming step 4
    "predict::4",  # the final --do_eval
    "random:2",
]


# The same on Keras's JAX backend (jax_step.JaxSteps, the Grain input): its input position and training state are
# written by tensor_bundle.write_bundle too (export_written counts them: call 1 is the input position of step 2,
# call 2 its state, call 3 model.ckpt-2, ...).
JAX_PRETRAINING_CASES = [
    "before_replace:data_worker_0/ckpt-2.index then before_replace:training_state/ckpt-4.index",
    "before_replace:training_state/ckpt-2.data-00000-of-00001 then after_replace:training_state/ckpt-4.index",
    "export_written::2 then export_written::3",  # the state of step 2, then the rerun's model.ckpt-2, unpublished
    "export_written::6 then before_replace:model.ckpt-6.index",  # model.ckpt-4, unpublished
    "before_replace:model.ckpt-4.index then before_replace:training_state/ckpt-6.index",
    "before_replace:out/checkpoint:2 then after_replace:training_state/ckpt-6.index",
    "evaluate::2 then before_replace:out/checkpoint:2",
    "evaluate::4",
    "random:1",
    "random:3",
]
JAX_FINETUNING_CASES = [
    "predict::1 then before_replace:model.ckpt-4.index",
    "exchanged::1 then before_replace:out/dev_evaluations.jsonl",
    "random:8",  # 0.16 s after step 3: with the Grain input the tiny run ends within random:2's 0.59 s
]
JAX_ENV = {**ENV, "KERAS_BACKEND": "jax", without_tensorflow.VARIABLE: "1"}


def run(command, moment=None, env=ENV):
    """Runs `command` (a script and its flags) with `env` to its end, or SIGKILLed at `moment`; returns (code,
    output). With without_tensorflow.VARIABLE in `env`, in a process where TensorFlow cannot be imported."""
    python = [sys.executable] + ([without_tensorflow.__file__] if env.get(without_tensorflow.VARIABLE) else [])
    if moment is None:
        process = subprocess.run(python + command, capture_output=True, text=True, cwd=ROOT, env=env)
        return process.returncode, process.stdout + process.stderr
    if moment.startswith("random:"):  # killed from outside at a random time after a random training step
        rng = random.Random(moment)
        step, delay = rng.randint(1, 5), rng.uniform(0.0, 1.0)
        process = subprocess.Popen(python + command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, cwd=ROOT, env=env)
        for line in process.stderr:
            if f"step {step}/6 " in line:
                time.sleep(delay)
                process.send_signal(signal.SIGKILL)
                break
        process.stderr.close()
        return process.wait(), f"killed {delay:.2f} s after step {step}"
    process = subprocess.run([sys.executable, KILL_AT, moment] + command, capture_output=True, text=True,
                             cwd=ROOT, env=env)
    return process.returncode, process.stdout + process.stderr


def weights(prefix):
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def outcome(output_dir):
    """What an uninterrupted run leaves: the final weights, the index file, the results, best/, the dev
    evaluations."""
    output_dir = str(output_dir)
    newest = tf.train.latest_checkpoint(output_dir)
    best = os.path.join(output_dir, "best")
    return {
        "newest": os.path.basename(newest),
        "weights": weights(newest),
        "eval_results": read_text(os.path.join(output_dir, "eval_results.txt")),
        "best": read_text(os.path.join(best, "eval_results.txt")) if os.path.isdir(best) else None,
        "best_weights": weights(tf.train.latest_checkpoint(best)) if os.path.isdir(best) else None,
        "evaluations": read_text(os.path.join(output_dir, "dev_evaluations.jsonl"))
        if os.path.exists(os.path.join(output_dir, "dev_evaluations.jsonl")) else None,
        "leftovers": [path for path in small_disk.all_files(output_dir)  # temporaries anywhere in the tree
                      if any(mark in path for mark in (".incomplete", "_temp", ".tempstate", ".previous"))],
    }


def assert_same_outcome(got, expected, label):
    assert got["newest"] == expected["newest"], label
    assert sorted(got["weights"]) == sorted(expected["weights"]), label
    for name, value in expected["weights"].items():
        np.testing.assert_array_equal(got["weights"][name], value, err_msg=f"{label}: {name}")
    for key in ("eval_results", "best", "evaluations", "leftovers"):
        assert got[key] == expected[key], f"{label}: {key}"
    if expected["best_weights"] is not None:
        for name, value in expected["best_weights"].items():
            np.testing.assert_array_equal(got["best_weights"][name], value, err_msg=f"{label}: best/{name}")


def uninterrupted(directory, script, flags, env=ENV):
    """(command: output_dir -> the script's command line with `flags`, the outcome of an uninterrupted run
    of it with `env` in directory/uninterrupted)."""
    def command(output_dir):
        return [script] + [f"--{k}={v}" for k, v in {**flags, "output_dir": output_dir}.items()]

    code, output = run(command(directory / "uninterrupted"), env=env)
    assert code == 0, output[-3000:]
    return command, outcome(directory / "uninterrupted")


def kill_then_rerun(command, case, env=ENV):
    """Runs `command` with `env` killed at each moment of `case` in turn, then to its end; returns the last
    output."""
    for moment in case.split(" then "):
        code, output = run(command, moment, env)
        assert code == -signal.SIGKILL, f"{moment}: the run was not killed (exit {code}): {output[-2000:]}"
    code, output = run(command, env=env)
    assert code == 0, f"{case}: the rerun failed: {output[-3000:]}"
    return output


# ------------------------------------------------------------------------------------------- pretraining

def pretraining_run(tmp_path_factory, env):
    directory = tmp_path_factory.mktemp("kill_pretraining")
    records = pretraining_records.write_records(directory / "train.tfrecord", 64)
    config = write_config(directory / "bert_config.json", script_config())

    return uninterrupted(directory, "run_pretraining.py", {
        "input_file": records, "bert_config_file": config, "max_seq_length": 32, "max_predictions_per_seq": 5,
        "do_train": True, "do_eval": True, "train_batch_size": 8, "eval_batch_size": 8, "learning_rate": 1e-3,
        "num_train_steps": 6, "num_warmup_steps": 2, "save_checkpoints_steps": 2, "iterations_per_loop": 1,
        "max_eval_steps": 2, "seed": 1, "deterministic": True}, env)


@pytest.fixture(scope="module")
def pretraining(tmp_path_factory):
    return pretraining_run(tmp_path_factory, ENV)


@pytest.fixture(scope="module")
def jax_pretraining(tmp_path_factory):
    return pretraining_run(tmp_path_factory, JAX_ENV)


def check_pretraining_case(run_and_outcome, directory, case, env):
    command, expected = run_and_outcome
    assert expected["newest"] == "model.ckpt-6"
    output = kill_then_rerun(command(directory / "out"), case, env)
    assert "step 6/6" in output or "Resumed from" in output and "at step 6" in output, output[-2000:]
    assert_same_outcome(outcome(directory / "out"), expected, case)


@pytest.mark.parametrize("case", PRETRAINING_CASES)
def test_pretraining_killed_then_rerun_ends_as_an_uninterrupted_run(pretraining, tmp_path, case):
    check_pretraining_case(pretraining, tmp_path, case, ENV)


@pytest.mark.parametrize("case", JAX_PRETRAINING_CASES)
def test_pretraining_on_jax_killed_then_rerun_ends_as_an_uninterrupted_run(jax_pretraining, tmp_path, case):
    """The same on Keras's JAX backend: bit-identical final weights (XLA on CPU is deterministic)."""
    check_pretraining_case(jax_pretraining, tmp_path, case, JAX_ENV)


# ------------------------------------------------------------------------------------------- fine-tuning

def finetuning_run(tmp_path_factory, tiny_model_dir, env, group_by_length=False):
    directory = tmp_path_factory.mktemp("kill_finetuning")
    rows = ["label\tmessage", "spam\tWIN a free prize now", "ham\tsee you at five", "spam\tclaim your cash",
            "ham\tok thanks", "ham\tcall me later", "spam\tfree cash now", "ham\tsee you"]
    data = directory / "data"
    data.mkdir()
    (data / "train.tsv").write_text("\n".join(rows[:1] + rows[1:] * 3) + "\n")  # 21 examples
    (data / "dev.tsv").write_text("\n".join(rows[:6]) + "\n")
    return uninterrupted(directory, "run_classifier.py", {
        **tiny_model_dir, "task_name": "custom", "text_a_column": "message", "data_dir": data, "do_train": True,
        "do_eval": True, "max_seq_length": 32, "train_batch_size": 7, "num_train_epochs": 2,
        "save_checkpoints_steps": 2, "iterations_per_loop": 1, "best_metric": "eval_loss", "learning_rate": 1e-3,
        "seed": 1, "group_by_length": group_by_length}, env)


# Each fine-tuning case runs with shuffled batches and with length-grouped ones (--group_by_length: 3 batches an
# epoch, 6 steps cross an epoch's end).
@pytest.fixture(scope="module", params=[False, True], ids=["shuffled", "grouped"])
def finetuning(tmp_path_factory, tiny_model_dir, request):
    return finetuning_run(tmp_path_factory, tiny_model_dir, ENV, request.param)


@pytest.fixture(scope="module", params=[False, True], ids=["shuffled", "grouped"])
def jax_finetuning(tmp_path_factory, tiny_model_dir, request):
    return finetuning_run(tmp_path_factory, tiny_model_dir, JAX_ENV, request.param)


def check_finetuning_case(run_and_outcome, directory, case, env):
    command, expected = run_and_outcome
    assert expected["newest"] == "model.ckpt-6" and expected["evaluations"].count("\n") == 3
    kill_then_rerun(command(directory / "out"), case, env)
    assert_same_outcome(outcome(directory / "out"), expected, case)


@pytest.mark.parametrize("case", FINETUNING_CASES)
def test_finetuning_killed_then_rerun_ends_as_an_uninterrupted_run(finetuning, tmp_path, case):
    check_finetuning_case(finetuning, tmp_path, case, ENV)


@pytest.mark.parametrize("case", JAX_FINETUNING_CASES)
def test_finetuning_on_jax_killed_then_rerun_ends_as_an_uninterrupted_run(jax_finetuning, tmp_path, case):
    check_finetuning_case(jax_finetuning, tmp_path, case, JAX_ENV)
