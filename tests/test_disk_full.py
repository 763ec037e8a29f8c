"""The scripts on a full disk (a real small tmpfs): exit status 1, one `Error:` line naming the path and the
disk's error, no traceback, nothing half-written left behind, and nothing that a later run would trust.

Mounting the tmpfs needs root: without it every test here is skipped with small_disk.NEEDS_ROOT ("needs root to
mount a tmpfs (run as root; CI runs as root)"), before its fixtures are built."""

import errno
import os
import subprocess
import sys

import pytest

from bert_tf.data.pretraining.corpus import prepare_corpus
from tests.helpers import pretraining_records, small_disk
from tests.helpers.configs import script_config, write_config
from tests.helpers.sotu_speeches import SPEECHES

pytestmark = [pytest.mark.subprocess, pytest.mark.skipif(os.geteuid() != 0, reason=small_disk.NEEDS_ROOT)]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_SPACE = os.strerror(errno.ENOSPC)
TEMPORARY_NAMES = (".incomplete", "_temp", ".tempstate", ".previous")


def run(script, **flags):
    command = [sys.executable, os.path.join(ROOT, script)] + [f"--{k}={v}" for k, v in flags.items()]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return result.returncode, result.stdout + result.stderr


def assert_one_disk_error(code, output, path):
    assert code == 1, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, output[-3000:]
    assert NO_SPACE in errors[0] and path in errors[0], errors[0]
    assert "Traceback" not in output, output[-3000:]
    return errors[0]


def assert_no_temporaries(directory):
    left = [p for p in small_disk.all_files(directory) if any(mark in p for mark in TEMPORARY_NAMES)]
    assert not left, left


def assert_no_state_to_resume_from(directory):
    """No training state or exported weights: the state of step 2 did not fit (the data position, a small
    complete bundle written first, may be there: without a state it is never read)."""
    bundles = [p for p in small_disk.all_files(directory) if p.endswith(".index") and "data_worker_" not in p]
    assert not bundles, bundles


@pytest.mark.parametrize("workers", [1, 2])
def test_create_pretraining_data_on_a_full_disk(tmp_path, minilm_dir, workers):
    corpus = tmp_path / "corpus.txt"
    prepare_corpus(SPEECHES[:20], str(corpus))
    with small_disk.mounted(tmp_path / "disk", "256k") as disk:
        output = os.path.join(disk, "out.tfrecord")
        code, log = run("create_pretraining_data.py", input_file=corpus, output_file=output,
                        vocab_file=os.path.join(minilm_dir, "vocab.txt"), num_workers=workers, dupe_factor=2)
        assert_one_disk_error(code, log, output)
        assert small_disk.all_files(disk) == []  # no output file: nothing to mistake for a complete one


@pytest.mark.slow
@pytest.mark.extended
def test_run_pretraining_on_a_full_disk(tmp_path):
    records = pretraining_records.write_records(tmp_path / "train.tfrecord", 32)
    config = write_config(tmp_path / "bert_config.json", script_config())
    flags = dict(input_file=records, bert_config_file=config, max_seq_length=32, max_predictions_per_seq=5,
                 do_train=True, train_batch_size=8, num_train_steps=2, num_warmup_steps=1,
                 save_checkpoints_steps=2, iterations_per_loop=1)
    with small_disk.mounted(tmp_path / "disk", "2m") as disk:  # the training state (~16 MB) does not fit
        code, log = run("run_pretraining.py", output_dir=disk, **flags)
        assert_one_disk_error(code, log, os.path.join(disk, "training_state"))
        assert_no_temporaries(disk)
        assert_no_state_to_resume_from(disk)


@pytest.mark.slow
def test_run_classifier_on_a_full_disk(tmp_path, tiny_model_dir):
    rows = ["label\tmessage", "spam\tWIN a free prize now", "ham\tsee you at five", "spam\tclaim your cash",
            "ham\tok thanks"]
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.tsv").write_text("\n".join(rows) + "\n")
    with small_disk.mounted(tmp_path / "disk", "2m") as disk:
        code, log = run("run_classifier.py", **tiny_model_dir, task_name="custom", text_a_column="message",
                        data_dir=data, output_dir=disk, do_train=True, max_seq_length=32, train_batch_size=2,
                        num_train_epochs=1)
        assert_one_disk_error(code, log, os.path.join(disk, "training_state"))
        assert_no_temporaries(disk)
        assert_no_state_to_resume_from(disk)


@pytest.mark.slow
@pytest.mark.extended
def test_export_model_on_a_full_disk(tmp_path, tiny_model_dir):
    with small_disk.mounted(tmp_path / "disk", "1m") as disk:  # the tiny model's SavedModel takes ~4 MB
        code, log = run("export_model.py", vocab_file=tiny_model_dir["vocab_file"],
                        bert_config_file=tiny_model_dir["bert_config_file"],
                        init_checkpoint=tiny_model_dir["init_checkpoint"],
                        max_seq_length=16, export_dir=disk)
        assert_one_disk_error(code, log, os.path.join(disk, "1"))
        assert small_disk.all_files(disk) == []  # no partial version folder for TF Serving to load


def test_convert_checkpoint_to_a_keras_hub_preset_on_a_full_disk(tmp_path, minilm_dir):
    """h5py reports the full disk in several lines (its file, buffer and offsets): the Error line is one line,
    naming the output folder and the disk's error; nothing is left."""
    with small_disk.mounted(tmp_path / "disk", "1m") as disk:  # MiniLM's weights take ~90 MB
        out = os.path.join(disk, "preset")
        code, log = run("convert_checkpoint.py", init_checkpoint=minilm_dir, output_dir=out, output_format="keras_hub")
        error = assert_one_disk_error(code, log, out)
        assert error == f"Error: [Errno {errno.ENOSPC}] cannot write {out}: {NO_SPACE}", error
        assert small_disk.all_files(disk) == []
