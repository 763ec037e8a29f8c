"""extract_features.py as a subprocess, with the original README's flags."""

import os
import subprocess

from tests.helpers import without_tensorflow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_SEQ_LENGTH = 32


def run_script(*flags, backend=None):
    """extract_features.py with `flags`; `backend="jax"`: on Keras's JAX backend in a process where TensorFlow
    cannot be imported."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **({"KERAS_BACKEND": backend} if backend else {})}
    return subprocess.run([*without_tensorflow.command("extract_features.py", backend != "jax"), *flags],
                          capture_output=True, text=True, cwd=ROOT, env=env)


def readme_flags(model_dir, input_file, output_file, **overrides):
    """The README's flags for a Google checkpoint directory `model_dir` (vocab.txt, bert_config.json,
    bert_model.ckpt), layers -1..-4, seq MAX_SEQ_LENGTH, batch 8; `overrides` replace any."""
    flags = {"input_file": input_file, "output_file": output_file, "vocab_file": f"{model_dir}/vocab.txt",
             "bert_config_file": f"{model_dir}/bert_config.json",
             "init_checkpoint": f"{model_dir}/bert_model.ckpt", "layers": "-1,-2,-3,-4",
             "max_seq_length": str(MAX_SEQ_LENGTH), "batch_size": "8"}
    flags.update(overrides)
    return [f"--{k}={v}" for k, v in flags.items()]
