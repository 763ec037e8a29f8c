"""bert_tf's models on the JAX backend, each check in a process of its own (KERAS_BACKEND is read once per
process): the layer harness over every layer and model, every output on real MiniLM weights within 1e-5 of
the TensorFlow backend, twenty training steps with the same losses as TensorFlow, and DataParallel over two
host devices with the same losses as one device."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers.finetuning_scripts import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


def on_backend(backend, *args, devices=1, timeout=900):
    """Runs `python *args` in the repository with KERAS_BACKEND=backend (and `devices` host devices for JAX);
    its stderr's tail when it fails."""
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    if devices > 1:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{backend}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """backend_outputs.make's checkpoints (MiniLM + seeded heads, written on TensorFlow)."""
    directory = tmp_path_factory.mktemp("backend_checkpoints")
    on_backend("tensorflow", "-m", "tests.helpers.backend_outputs", "make", str(directory))
    return directory


def test_the_layer_harness_passes_on_jax():
    done = on_backend("jax", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                      "tests/test_layer_harness.py", timeout=1200)
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
    assert int(summary.split(" passed")[0].split()[-1]) >= 120, summary  # every case but the tokenizers'


def test_every_output_on_real_weights_matches_tensorflow_on_jax(checkpoints):
    on_backend("tensorflow", "-m", "tests.helpers.backend_outputs", "run", str(checkpoints),
               str(checkpoints / "tensorflow.npz"))
    on_backend("jax", "-m", "tests.helpers.backend_outputs", "run", str(checkpoints), str(checkpoints / "jax.npz"))
    expected, got = np.load(checkpoints / "tensorflow.npz"), np.load(checkpoints / "jax.npz")
    assert sorted(got) == sorted(expected) and len(expected) == 25  # 15 encoder outputs, the heads', HF's pooled
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=0, atol=1e-5, err_msg=name)


def test_twenty_training_steps_give_tensorflows_losses_on_jax_and_on_two_devices(checkpoints):
    for backend, devices in (("tensorflow", 1), ("jax", 1), ("jax", 2)):
        output = checkpoints / f"losses_{backend}_{devices}.json"
        on_backend(backend, "-m", "tests.helpers.backend_training", str(checkpoints), str(output),
                   *(["--data_parallel"] if devices > 1 else []), devices=devices)
    losses = {run: json.loads((checkpoints / f"losses_{run}.json").read_text())
              for run in ("tensorflow_1", "jax_1", "jax_2")}
    assert losses["jax_2"]["devices"] == 2 and losses["jax_1"]["devices"] == 1
    for model in ("classifier", "pretrainer"):
        tensorflow, jax, two_devices = (losses[run][model] for run in ("tensorflow_1", "jax_1", "jax_2"))
        assert len(jax) == 20 and jax[-1] < jax[0] / 10, (model, jax)  # it learns
        np.testing.assert_allclose(jax, tensorflow, rtol=0, atol=1e-4, err_msg=model)
        np.testing.assert_allclose(two_devices, jax, rtol=0, atol=1e-5, err_msg=model)


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
    from tools.peer_venvs import jax_without_tensorflow_python
    from tools.pypi_data import minilm_dir

    inputs = text_inputs()
    np.savez(tmp_path / "inputs.npz", **inputs)
    encoder = BertEncoder(config_of(minilm_dir()))
    encoder(inputs)
    load_checkpoint(encoder, minilm_dir())
    save_checkpoint(encoder, str(tmp_path / "saved" / "model.ckpt"), encoder.config)
    expected = encoder(inputs)["pooled_output"].numpy()
    done = subprocess.run([jax_without_tensorflow_python(), "-c", NO_TENSORFLOW_SCRIPT, ROOT, minilm_dir(),
                           str(tmp_path / "saved" / "model.ckpt"), str(tmp_path / "inputs.npz"),
                           str(tmp_path / "pooled.npz")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = np.load(tmp_path / "pooled.npz")
    assert not got["tensorflow_imported"]
    for name in ("huggingface", "bert_tf"):
        np.testing.assert_allclose(got[name], expected, rtol=0, atol=1e-5, err_msg=name)
