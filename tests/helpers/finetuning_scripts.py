"""run_classifier.py, run_ner.py, run_swag.py (and the other fine-tuning scripts) as subprocesses on a tiny
model: the real uncased vocab, 2 layers of 32 (configs.script_config)."""

import os
import subprocess

import keras

from bert_tf import BertEncoder, save_checkpoint
from tests.helpers import without_tensorflow
from tests.helpers.configs import script_config, write_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_tiny_model_dir(directory, vocab_file):
    """Writes bert_config.json and bert_model.ckpt (seeded random weights: the same in every session, so
    training runs are reproducible) into `directory`; returns the flags that name them and `vocab_file`."""
    config = script_config()
    write_config(directory / "bert_config.json", config)
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(config)
    encoder.build()
    save_checkpoint(encoder, str(directory / "bert_model.ckpt"))
    return {"vocab_file": vocab_file, "bert_config_file": directory / "bert_config.json",
            "init_checkpoint": directory / "bert_model.ckpt"}


def start(script, model_dir, env=None, tensorflow=True, **flags):
    """Starts `script` with the flags of `model_dir` (make_tiny_model_dir's), short defaults and `flags`, `env`
    added to the environment (`tensorflow=False`: in a process where TensorFlow cannot be imported); returns its
    Popen (text stdout and stderr pipes)."""
    flags = {**model_dir, "max_seq_length": 32, "train_batch_size": 2, "num_train_epochs": 1, **flags}
    args = [f"--{k}={v}" for k, v in flags.items()]
    return subprocess.Popen([*without_tensorflow.command(script, tensorflow), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **(env or {})})


def run(script, model_dir, env=None, tensorflow=True, **flags):
    """Runs `script` as `start` does and waits for it: a CompletedProcess with its stdout and stderr."""
    process = start(script, model_dir, env, tensorflow, **flags)
    stdout, stderr = process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def results(output_dir):
    """eval_results.txt of `output_dir` as {key: float}."""
    with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as f:
        return {k: float(v) for k, v in (line.strip().split(" = ") for line in f)}


def rotten_tomatoes(directory, train_rows, dev_rows):
    """Writes Rotten Tomatoes snippets in SST-2's layout into `directory` (tools/make_finetuning_data.py
    sentiment), train.tsv and dev.tsv cut to their first `train_rows` and `dev_rows` rows; returns `directory`."""
    from tools import make_finetuning_data

    directory.mkdir(parents=True, exist_ok=True)
    make_finetuning_data.make_sentiment(str(directory), 0.2, 12345)
    for name, rows in (("train", train_rows), ("dev", dev_rows)):
        lines = (directory / f"{name}.tsv").read_text(encoding="utf-8").splitlines()[:rows + 1]
        (directory / f"{name}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def write_files(directory, files):
    """Writes {relative path: text} under `directory`; returns `directory`."""
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return directory


def load_checkpoint_tensors(output_dir):
    """{name: array} of the newest model.ckpt-N of `output_dir`."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(output_dir)))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
