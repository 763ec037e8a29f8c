"""bert_tf's models on the JAX and PyTorch backends, each check in a process of its own (KERAS_BACKEND is read
once per process): the layer harness over every layer and model and the dropout checks, every output on real
MiniLM weights within 1e-5 of the TensorFlow backend, twenty training steps with the same losses as TensorFlow,
DataParallel over two host devices (JAX) with the same losses as one device, and a JAX host without TensorFlow.
JAX runs in this Python (jax is a test dependency); PyTorch in a venv of its own (tools/peer_venvs.py, about
1 GB with TensorFlow beside it), in the extended tier. The layer harness on JAX (4.5 minutes), fit on JAX and
the two-device losses are in the extended tier too: the whole models' outputs and training steps on JAX stay in
`make test`."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers.finetuning_scripts import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]
BACKENDS = [pytest.param("jax"), pytest.param("torch", marks=pytest.mark.extended)]


def python_of(backend):
    """The Python that runs `backend`: this one (TensorFlow, JAX) or the PyTorch venv."""
    if backend != "torch":
        return sys.executable
    from tools.peer_venvs import torch_backend_python

    return torch_backend_python()


def on_backend(backend, *args, devices=1, timeout=900):
    """Runs `python *args` in the repository with KERAS_BACKEND=backend (and `devices` host devices for JAX);
    its stderr's tail when it fails."""
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    if devices > 1:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    done = subprocess.run([python_of(backend), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{backend}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """backend_outputs.make's checkpoints (MiniLM + seeded heads, written on TensorFlow)."""
    directory = tmp_path_factory.mktemp("backend_checkpoints")
    on_backend("tensorflow", "-m", "tests.helpers.backend_outputs", "make", str(directory))
    return directory


@pytest.mark.extended
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_layer_harness_and_the_dropout_checks_pass(backend):
    done = on_backend(backend, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_layer_harness.py",
                      "tests/test_dropout.py", timeout=1500)
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
    assert int(summary.split(" passed")[0].split()[-1]) >= 132, summary  # every case but the tokenizers'


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_output_on_real_weights_matches_tensorflow(backend, checkpoints, tmp_path):
    on_backend("tensorflow", "-m", "tests.helpers.backend_outputs", "run", str(checkpoints),
               str(tmp_path / "tensorflow.npz"))
    on_backend(backend, "-m", "tests.helpers.backend_outputs", "run", str(checkpoints), str(tmp_path / "got.npz"))
    expected, got = np.load(tmp_path / "tensorflow.npz"), np.load(tmp_path / "got.npz")
    assert sorted(got) == sorted(expected) and len(expected) == 25  # 15 encoder outputs, the heads', HF's pooled
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=0, atol=1e-5, err_msg=name)


def twenty_step_losses(backend, checkpoints, tmp_path, devices=1):
    """{model: [20 losses]} of tests/helpers/backend_training.py on `backend` (DataParallel over `devices` host
    devices when > 1)."""
    output = tmp_path / f"losses_{backend}_{devices}.json"
    on_backend(backend, "-m", "tests.helpers.backend_training", str(checkpoints), str(output),
               *(["--data_parallel"] if devices > 1 else []), devices=devices)
    losses = json.loads(output.read_text())
    assert losses.pop("devices") == devices
    return losses


@pytest.mark.parametrize("backend", BACKENDS)
def test_twenty_training_steps_give_tensorflows_losses(backend, checkpoints, tmp_path):
    tensorflow, losses = (twenty_step_losses(name, checkpoints, tmp_path) for name in ("tensorflow", backend))
    for model in ("classifier", "pretrainer"):
        got = losses[model]
        assert len(got) == 20 and got[-1] < got[0] / 10, (model, got)  # it learns
        np.testing.assert_allclose(got, tensorflow[model], rtol=0, atol=1e-4, err_msg=model)


@pytest.mark.extended  # two JAX devices in make test: tests/test_jax_runs.py's fine-tuning run
def test_twenty_training_steps_on_two_jax_devices_give_the_losses_of_one(checkpoints, tmp_path):
    one, two = (twenty_step_losses("jax", checkpoints, tmp_path, devices) for devices in (1, 2))
    for model in ("classifier", "pretrainer"):
        assert len(one[model]) == 20, (model, one[model])
        np.testing.assert_allclose(two[model], one[model], rtol=0, atol=1e-5, err_msg=model)


@pytest.mark.extended  # the family's first case in make test: tests/test_finetuning_models.py (TensorFlow)
@pytest.mark.parametrize("backend", BACKENDS)
def test_fit_evaluate_predict_in_both_precisions_with_the_projects_optimizers(backend, tmp_path):
    on_backend(backend, "-m", "tests.helpers.backend_training", "--precisions", str(tmp_path / "runs.json"))
    runs = json.loads((tmp_path / "runs.json").read_text())
    assert sorted(runs) == ["float32 AdamWeightDecay", "float32 Lamb", "mixed_bfloat16 AdamWeightDecay",
                            "mixed_bfloat16 Lamb"]
    for name, run in runs.items():
        losses = run["losses"]
        assert len(losses) == 4 and np.isfinite(losses).all() and losses[-1] < losses[0], (name, losses)
        assert set(run["evaluation"]) == {"loss", "classification_loss", "classification_accuracy"}, name
        assert run["predictions"] == [[16, 2], "float32"], name  # logits stay float32 under mixed_bfloat16


NO_TENSORFLOW_SCRIPT = """
import os, sys
sys.path.insert(0, sys.argv[1])
os.environ["KERAS_BACKEND"] = "jax"
import numpy as np
try:
    import tensorflow  # noqa: F401
    sys.exit("tensorflow is installed here")
except ImportError:
    pass
from bert_tf import BertEncoder, load_checkpoint
from bert_tf.checkpoints import config_of
minilm, saved, inputs_file, output_file = sys.argv[2:]
inputs = dict(np.load(inputs_file))
pooled = {}
for name, checkpoint in (("huggingface", minilm), ("bert_tf", saved)):
    encoder = BertEncoder(config_of(checkpoint))
    encoder(inputs)
    report = load_checkpoint(encoder, checkpoint)
    assert not report.missing, report.missing
    pooled[name] = np.asarray(encoder(inputs)["pooled_output"])
np.savez(output_file, tensorflow_imported=np.asarray("tensorflow" in sys.modules), **pooled)
"""


def test_a_python_without_tensorflow_loads_minilm_and_gives_tensorflows_outputs(tmp_path):
    """Keras on JAX with no TensorFlow installed: bert_tf imports, loads MiniLM from its HuggingFace directory
    and from a bert_tf checkpoint (the TensorFlow bundle read by formats/tensor_bundle.py), and gives the
    pooled output the TensorFlow backend gives, within 1e-5."""
    from bert_tf import BertEncoder, load_checkpoint, save_checkpoint
    from bert_tf.checkpoints import config_of
    from tests.helpers.backend_outputs import text_inputs
    from tools.peer_venvs import jax_host_python
    from tools.pypi_data import minilm_dir

    inputs = text_inputs()
    np.savez(tmp_path / "inputs.npz", **inputs)
    encoder = BertEncoder(config_of(minilm_dir()))
    encoder(inputs)
    load_checkpoint(encoder, minilm_dir())
    save_checkpoint(encoder, str(tmp_path / "saved" / "model.ckpt"), encoder.config)
    expected = encoder(inputs)["pooled_output"].numpy()
    done = subprocess.run([jax_host_python(), "-c", NO_TENSORFLOW_SCRIPT, ROOT, minilm_dir(),
                           str(tmp_path / "saved" / "model.ckpt"), str(tmp_path / "inputs.npz"),
                           str(tmp_path / "pooled.npz")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = np.load(tmp_path / "pooled.npz")
    assert not got["tensorflow_imported"]
    for name in ("huggingface", "bert_tf"):
        np.testing.assert_allclose(got[name], expected, rtol=0, atol=1e-5, err_msg=name)


def test_a_command_on_a_python_without_tensorflow_says_what_to_install_in_one_line():
    """On the JAX host (`pip install ".[jax]"`, no TensorFlow): pip's own view has no TensorFlow package and no
    broken requirement; the training commands start (run_classifier.py --help); the one that is TensorFlow's
    (export_model.py) ends with one `Error:` line naming the package and the pip command, exit status 1, no
    traceback."""
    from tools.peer_venvs import jax_host_python

    python = jax_host_python()
    listed = subprocess.run([python, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                            timeout=300, check=True).stdout
    names = {re.sub(r"[-_.]+", "-", line.split("==")[0]).lower() for line in listed.splitlines()}
    assert not {name for name in names if name.startswith("tensorflow") or name.startswith("tf-")}, listed
    assert {"bert-tf", "jax", "keras", "grain", "tensorboardx", "google-crc32c"} <= names, listed
    checked = subprocess.run([python, "-m", "pip", "check"], capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout
    env = dict(os.environ, KERAS_BACKEND="jax")
    env.pop("BERT_TF_TRACEBACK", None)
    done = subprocess.run([python, os.path.join(ROOT, "run_classifier.py"), "--help"], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0 and "--task_name" in done.stdout, done.stderr[-3000:]
    done = subprocess.run([python, os.path.join(ROOT, "export_model.py"), "--help"], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 1, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: export_model.py needs tensorflow, "), done.stderr
    assert "pip install tensorflow tensorflow-text" in lines[0] and 'pip install ".[jax]"' in lines[0]

