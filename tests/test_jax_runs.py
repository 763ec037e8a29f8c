"""The commands on Keras's JAX backend (subprocesses with KERAS_BACKEND=jax): run_pretraining.py and
run_classifier.py over two host devices on real data, their checkpoints read back by the TensorFlow backend
with the same evaluation, and the same losses as the TensorFlow loop step by step."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import finetuning_scripts, pretraining_records, without_tensorflow
from tests.helpers.configs import script_config, write_config
from tests.helpers.pretraining_script import ROOT, base_args, run
from tests.helpers.training import summary_losses

pytestmark = pytest.mark.subprocess

JAX = {"KERAS_BACKEND": "jax"}
TWO_DEVICES = {**JAX, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
TENSORFLOW = {"KERAS_BACKEND": "tensorflow"}


def eval_results(output_dir):
    with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as f:
        return {key: float(value) for key, value in (line.strip().split(" = ") for line in f)}


def step_losses(output):
    """{step: loss} of the metric lines of a run's log."""
    return {int(step): float(loss) for step, loss in re.findall(r"step (\d+)/\d+ \| loss ([\d.]+)", output)}


@pytest.mark.slow
@pytest.mark.extended  # two devices in make test: the fine-tuning case below
def test_pretraining_on_two_jax_devices_and_its_checkpoint_on_tensorflow(pretraining_data, tmp_path):
    """run_pretraining.py on JAX, DataParallel over 2 host devices: trains, evaluates, writes model.ckpt-6 and
    the `checkpoint` index; the TensorFlow backend evaluates that checkpoint (an eval-only run from it) with
    the JAX run's final results within 1e-5."""
    output_dir = str(tmp_path / "jax")
    output = run(base_args(pretraining_data, output_dir, distribution_strategy="mirrored"), env=TWO_DEVICES)
    assert "Devices mirrored on JAX: 2 cpu device(s)" in output and "on 2 replica(s)" in output, output[-3000:]
    assert re.search(r"step 6/6 \| loss [\d.]+ \| masked_lm_accuracy .*examples/s \| \d+ tokens/s \| MFU", output)
    with open(os.path.join(output_dir, "checkpoint"), encoding="utf-8") as f:
        assert f.readline().strip() == 'model_checkpoint_path: "model.ckpt-6"'
    on_jax = eval_results(output_dir)
    assert on_jax["global_step"] == 6
    tf_dir = str(tmp_path / "tensorflow")
    run(base_args(pretraining_data, tf_dir, do_train=False, init_checkpoint=os.path.join(output_dir, "model.ckpt-6")),
        env=TENSORFLOW)
    on_tensorflow = eval_results(tf_dir)
    for key in ("masked_lm_loss", "masked_lm_accuracy", "next_sentence_loss", "next_sentence_accuracy", "loss"):
        assert on_tensorflow[key] == pytest.approx(on_jax[key], rel=1e-5, abs=1e-6), key


@pytest.mark.slow
def test_pretraining_on_jax_without_tensorflow(pretraining_data, tmp_path):
    """run_pretraining.py on JAX in a process where `import tensorflow` fails: the Grain input, the JAX steps, the
    checkpoint bundles, the `checkpoint` index and the TensorBoard events all written without TensorFlow.
    TensorFlow's own reader reads every variable of model.ckpt-6 and the events' losses; a rerun to 8 steps
    resumes at step 6 from the state and input position it left."""
    import tensorflow as tf

    output_dir = str(tmp_path / "out")

    def train(steps):
        flags = [f"--{k}={v}" for k, v in base_args(pretraining_data, output_dir, num_train_steps=steps).items()]
        done = subprocess.run([*without_tensorflow.command("run_pretraining.py"), *flags], cwd=ROOT,
                              env={**os.environ, **JAX}, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stderr

    output = train(6)
    assert "; input grain" in output and "step 6/6" in output, output[-3000:]
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(output_dir))
    assert reader.get_variable_to_shape_map().keys() >= {"bert/embeddings/word_embeddings",
                                                          "cls/predictions/output_bias"}
    values = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}  # CRC32Cs checked
    assert all(np.isfinite(v).all() for v in values.values() if isinstance(v, np.ndarray) and v.dtype.kind == "f")
    assert sorted(summary_losses(output_dir)) == [3, 6]
    assert eval_results(output_dir)["global_step"] == 6
    resumed = train(8)
    assert re.search(r"Resumed from \S+training_state/ckpt-6 at step 6", resumed) and "step 8/8" in resumed, \
        resumed[-3000:]


@pytest.mark.slow
@pytest.mark.extended
def test_fifty_steps_give_the_tensorflow_loops_losses(tmp_path):
    """Dropout off, the same initial weights (a checkpoint) and the same batches (the records' tf.data reader,
    which the loop takes on either backend): 50 steps of the loop with the JAX steps and with the TensorFlow
    steps, the loss of every step within 1e-3."""
    records = pretraining_records.write_records(tmp_path / "train.tfrecord", 64)
    common = [sys.executable, "-m", "tests.helpers.train_worker", f"--records={records}", "--batch_size=8",
              "--dropout=0.0", "--learning_rate=1e-4"]

    def train(backend, *args):
        done = subprocess.run([*common, *args], cwd=ROOT, env={**os.environ, "KERAS_BACKEND": backend},
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]

    train("tensorflow", f"--model_dir={tmp_path / 'first'}", "--steps=2")
    losses = {}
    for backend in ("jax", "tensorflow"):
        train(backend, f"--model_dir={tmp_path / backend}", "--steps=50", "--save_every=50",
              f"--init_checkpoint={tmp_path / 'first' / 'model.ckpt-2'}")
        losses[backend] = summary_losses(tmp_path / backend)
    assert sorted(losses["jax"]) == list(range(1, 51)) and sorted(losses["tensorflow"]) == list(range(1, 51))
    differences = [abs(losses["jax"][s] - losses["tensorflow"][s]) for s in range(1, 51)]
    assert max(differences) <= 1e-3, (max(differences), losses)
    assert losses["jax"][50] < losses["jax"][1]


@pytest.mark.slow
def test_fine_tuning_on_two_jax_devices_and_its_checkpoint_on_tensorflow(tiny_model_dir, tmp_path):
    """run_classifier.py on JAX over 2 host devices in a process where TensorFlow cannot be imported, Rotten
    Tomatoes snippets (SST-2 layout): trains (the Grain input), evaluates and predicts; the TensorFlow backend
    evaluates its model.ckpt-N with the same results (1e-5)."""
    data = finetuning_scripts.rotten_tomatoes(tmp_path / "data", 64, 24)
    (data / "test.tsv").write_text("index\tsentence\n0\ta gripping, funny film\n1\ta dull mess\n", encoding="utf-8")
    flags = {**tiny_model_dir, "task_name": "sst-2", "data_dir": data, "max_seq_length": 32, "train_batch_size": 8,
             "eval_batch_size": 8, "learning_rate": 1e-3, "num_train_epochs": 2}
    out = tmp_path / "jax"
    done = classifier(dict(flags, output_dir=out, do_train=True, do_eval=True, do_predict=True,
                           distribution_strategy="mirrored"), TWO_DEVICES, tensorflow=False)
    assert "Devices mirrored on JAX: 2 cpu device(s)" in done.stderr and "; input grain" in done.stderr, \
        done.stderr[-3000:]
    on_jax = finetuning_scripts.results(out)
    assert on_jax["global_step"] == 16 and (out / "model.ckpt-16.index").exists()
    assert len((out / "test_results.tsv").read_text().splitlines()) == 2
    done = classifier(dict(flags, output_dir=tmp_path / "tensorflow", do_eval=True,
                           init_checkpoint=out / "model.ckpt-16"), TENSORFLOW)
    on_tensorflow = finetuning_scripts.results(tmp_path / "tensorflow")
    for key in ("eval_accuracy", "eval_loss"):
        assert on_tensorflow[key] == pytest.approx(on_jax[key], rel=1e-5, abs=1e-6), key


def classifier(flags, env, tensorflow=True):
    """run_classifier.py with `flags` and `env` (`tensorflow=False`: in a process where TensorFlow cannot be
    imported): its CompletedProcess, checked to exit 0."""
    done = subprocess.run([*without_tensorflow.command("run_classifier.py", tensorflow),
                           *[f"--{k}={v}" for k, v in flags.items()]],
                          capture_output=True, text=True, cwd=ROOT, timeout=600, env=dict(os.environ, **env))
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.parametrize("script", ["run_ner.py", "run_swag.py", "run_squad.py", "run_embedder.py"])
def test_the_other_fine_tuning_commands_on_jax(script, tiny_model_dir, tmp_path):
    """run_ner.py (CoNLL tags), run_swag.py, run_squad.py (cloze SQuAD 2.0 from real prose: its feature records
    written and read without TensorFlow) and run_embedder.py (real pairs) train, evaluate and write their
    results on the JAX backend, in a process where TensorFlow cannot be imported."""
    from tests.helpers import squad_fixtures
    from tests.helpers.task_data import SWAG_HEADER, SWAG_ROWS
    from tools import make_pairs

    out, flags = tmp_path / "out", {"output_dir": tmp_path / "out", "do_train": True, "do_eval": True}
    model_dir = tiny_model_dir
    if script == "run_ner.py":
        sentences = "Paris B-geo-loc\nis O\nnice O\n\nI O\nmet O\nAnna B-person\nSmith I-person\n\n"
        flags["data_dir"] = finetuning_scripts.write_files(tmp_path, {"train.txt": sentences * 2,
                                                                      "dev.txt": sentences})
    elif script == "run_swag.py":
        flags["data_dir"] = finetuning_scripts.write_files(tmp_path, {"train.csv": SWAG_HEADER + SWAG_ROWS * 2,
                                                                      "val.csv": SWAG_HEADER + SWAG_ROWS})
    elif script == "run_embedder.py":
        make_pairs.main([f"--output_dir={tmp_path / 'pairs'}", "--num_train=16", "--num_dev=8"])
        flags.update(task="pairs", data_dir=tmp_path / "pairs", train_batch_size=8)
    else:  # random weights of squad_fixtures' config (128 positions), as tests/test_run_squad.py trains
        (tmp_path / "squad").mkdir()
        directory, squad_flags = squad_fixtures.make_squad_setup(tmp_path / "squad")
        model_dir = {}
        flags = {**dict(flag[2:].split("=", 1) for flag in squad_flags), "output_dir": out, "do_train": True,
                 "do_predict": True, "train_file": directory / "train-v2.0.json",
                 "predict_file": directory / "dev-v2.0.json", "train_batch_size": 8, "num_train_epochs": 0.4}
    done = finetuning_scripts.run(script, model_dir, JAX, tensorflow=False, **flags)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"step \d+/\d+ \| loss [\d.]+", done.stderr), done.stderr[-3000:]
    assert os.path.exists(out / ("eval_results.json" if script == "run_squad.py" else "eval_results.txt"))


@pytest.mark.slow
@pytest.mark.extended
def test_accumulation_and_bfloat16_on_jax(pretraining_data, tmp_path):
    """run_pretraining.py on JAX, dropout off: batch 8 in 4 micro-batches ends with the weights of batch 8 at once
    (1e-5), and mixed bfloat16 trains with finite, falling losses."""
    config = write_config(tmp_path / "bert_config.json", script_config(hidden_dropout_prob=0.0,
                                                                       attention_probs_dropout_prob=0.0))
    weights = []
    for accumulation in (1, 4):
        output_dir = tmp_path / f"accumulation{accumulation}"
        run(base_args(pretraining_data, str(output_dir), bert_config_file=config, do_eval=False, seed=2,
                      num_accumulation_steps=accumulation), env=JAX)
        weights.append(finetuning_scripts.load_checkpoint_tensors(output_dir))
    assert sorted(weights[0]) == sorted(weights[1])
    for name, value in weights[0].items():  # the weights; the embedded config and format marker are equal
        if np.asarray(value).dtype.kind == "f":
            np.testing.assert_allclose(weights[1][name], value, atol=1e-5, err_msg=name)
        else:
            assert weights[1][name] == value, name
    output = run(base_args(pretraining_data, str(tmp_path / "bfloat16"), bert_config_file=config, do_eval=False,
                           mixed_precision="bfloat16", num_train_steps=9, iterations_per_loop=3), env=JAX)
    losses = step_losses(output)
    assert sorted(losses) == [3, 6, 9] and losses[9] < losses[3], output[-3000:]


@pytest.mark.extended
def test_tpu_on_jax_without_a_cluster_says_what_to_set(tiny_model_dir, tmp_path):
    """It used to end with JAX's own "coordinator_address should be defined."."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, os.path.join(ROOT, "run_classifier.py"), "--use_tpu", "--task_name=sst-2",
                           f"--data_dir={tmp_path}", f"--output_dir={out}", "--do_train",
                           *[f"--{k}={v}" for k, v in tiny_model_dir.items()]],
                          capture_output=True, text=True, cwd=ROOT, timeout=600, env=dict(os.environ, **JAX))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith(
        "Error: --distribution_strategy=tpu on JAX runs every process of a cluster, and this process found none "
        "(coordinator_address should be defined.); on a Cloud TPU VM JAX finds it by itself, elsewhere set "
        "KERAS_DISTRIBUTION_JOB_ADDRESSES"), done.stderr[-2000:]
    assert not out.exists()
