"""Bad input to every script ends in one clear `Error: ...` line that names the flag or the file, exit status 1,
no traceback, and before any model is built or trained: batch sizes below 1, a --max_seq_length that holds no
text, a truncated TFRecord file (the byte offset named), an NER tag that only the dev or test file has.

Each case runs the real script as a subprocess (a few seconds: the error comes before any model), on the
tiny model and MiniLM vocab of the fine-tuning script tests and the pretraining records of
test_run_pretraining (the fixtures tiny_model_dir and pretraining_data).
"""

import pytest
import tensorflow as tf

from tests.helpers import pretraining_script
from tests.helpers.exports import export_script
from tests.helpers.extract_features_script import readme_flags
from tests.helpers.extract_features_script import run_script as run_extract_features
from tests.helpers.finetuning_scripts import run, write_files
from tests.helpers.pretraining_script import base_args
from tests.helpers.task_data import GLUE, SWAG_HEADER, SWAG_ROWS

pytestmark = pytest.mark.subprocess

SINGLE_TEXTS = {"train.tsv": "label\tmessage\nspam\tWIN a free prize now\nham\tsee you at five\n",
                "dev.tsv": "label\tmessage\nham\tok thanks\n"}
NER_TRAIN = "Paris B-geo-loc\nis O\nnice O\n\nWe O\nlike O\nRome B-geo-loc\n"


def error_line(returncode, output):
    """The one `Error: ` line of a script's output, after checking that it failed cleanly."""
    assert returncode == 1, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "Traceback" not in output, output[-3000:]
    return errors[0]


def script_error(script, tiny_model_dir, **flags):
    """(Error line, whole output) of a fine-tuning script (finetuning_scripts.run) that must fail."""
    done = run(script, tiny_model_dir, **flags)
    output = done.stdout + done.stderr
    return error_line(done.returncode, output), output


@pytest.mark.parametrize("flags, message", [
    ({"do_train": True, "train_batch_size": 0}, "--train_batch_size=0 must be >= 1"),
    ({"do_eval": True, "eval_batch_size": 0}, "--eval_batch_size=0 must be >= 1"),
    ({"do_train": True, "max_seq_length": 2},
     "--max_seq_length=2 must be >= 3 (room for [CLS], a word piece of the text and [SEP])"),
], ids=["train_batch_size", "eval_batch_size", "max_seq_length"])
def test_classifier_flags(tiny_model_dir, tmp_path, flags, message):
    data = write_files(tmp_path, SINGLE_TEXTS)
    error, output = script_error("run_classifier.py", tiny_model_dir, task_name="custom",
                                 text_a_column="message", data_dir=data, output_dir=tmp_path / "out", **flags)
    assert error == f"Error: {message}" and "Loaded " not in output  # before the model took its weights


def test_classifier_pairs_need_room_for_both_texts(tiny_model_dir, tmp_path):
    """MRPC is sentence pairs: --max_seq_length=4 would keep a piece of one sentence only. Evaluation alone
    fails as early: the dev file is read before the model is built."""
    data = write_files(tmp_path, {k[len("MRPC/"):]: v for k, v in GLUE.items() if k.startswith("MRPC/")})
    error, output = script_error("run_classifier.py", tiny_model_dir, task_name="MRPC", data_dir=data,
                                 output_dir=tmp_path / "out", do_eval=True, max_seq_length=4)
    assert error == ("Error: --max_seq_length=4 must be >= 5 (room for [CLS], a word piece of each of the 2 texts "
                     "and a [SEP] after each)") and "Loaded " not in output


def test_swag_pairs_need_room_for_both_texts(tiny_model_dir, tmp_path):
    data = write_files(tmp_path, {"train.csv": SWAG_HEADER + SWAG_ROWS})
    error, _ = script_error("run_swag.py", tiny_model_dir, data_dir=data, output_dir=tmp_path / "out",
                            do_train=True, max_seq_length=4)
    assert error.startswith("Error: --max_seq_length=4 must be >= 5 (")


def test_ner_batch_size(tiny_model_dir, tmp_path):
    data = write_files(tmp_path, {"train.txt": NER_TRAIN, "test.txt": "Hello\nBerlin\n"})
    error, _ = script_error("run_ner.py", tiny_model_dir, data_dir=data, output_dir=tmp_path / "out",
                            do_predict=True, predict_batch_size=0)
    assert error == "Error: --predict_batch_size=0 must be >= 1"


@pytest.mark.parametrize("name, text, line, flags", [
    ("dev.txt", "-DOCSTART- O\n\nI O\nmet O\nAnna B-person\n", 5, {"do_train": True, "do_eval": True}),
    ("test.txt", "Hello O\n\nBerlin B-geo-loc\nis O\nbig B-size\n", 5, {"do_predict": True}),
], ids=["dev", "tagged_test"])
def test_ner_tag_missing_from_the_training_file_fails_before_training(tiny_model_dir, tmp_path, name, text,
                                                                      line, flags):
    data = write_files(tmp_path, {"train.txt": NER_TRAIN, name: text})
    error, output = script_error("run_ner.py", tiny_model_dir, data_dir=data, output_dir=tmp_path / "out",
                                 **flags)
    tag = "B-person" if name == "dev.txt" else "B-size"
    assert error == f"Error: {data / name}:{line}: tag '{tag}' is not one of the training tags (O B-geo-loc)"
    assert "Loaded " not in output and not list((tmp_path / "out").glob("model.ckpt*"))


def test_squad_batch_size(tiny_model_dir, tmp_path):
    error, _ = script_error("run_squad.py", tiny_model_dir, output_dir=tmp_path / "out", do_train=True,
                            train_batch_size=-8)
    assert error == "Error: --train_batch_size=-8 must be >= 1"


def test_extract_features_batch_size(tmp_path):
    done = run_extract_features(*readme_flags(tmp_path, tmp_path / "input.txt", tmp_path / "out.jsonl",
                                              batch_size="0"))
    assert error_line(done.returncode, done.stdout + done.stderr) == "Error: --batch_size=0 must be >= 1"


def test_export_max_seq_length(tmp_path):
    process = export_script(f"--vocab_file={tmp_path}/vocab.txt", f"--init_checkpoint={tmp_path}",
                            f"--export_dir={tmp_path}/export", "--max_seq_length=2")
    output = process.communicate(timeout=240)[0]
    assert error_line(process.returncode, output).startswith("Error: --max_seq_length=2 must be >= 3 (")


@pytest.mark.parametrize("flag, value", [("train_batch_size", -8), ("eval_batch_size", 0)])
def test_pretraining_batch_sizes(pretraining_data, tmp_path, flag, value):
    error = pretraining_script.run(base_args(pretraining_data, str(tmp_path / "out"), **{flag: value}),
                                   expect_error=True)
    assert error == f"Error: --{flag}={value} must be >= 1"


@pytest.mark.parametrize("keep, detail", [(12 + 30, "a record of {length} bytes starts there"),
                                          (5, "its 12-byte header is cut after 5 bytes")],
                         ids=["cut_in_the_data", "cut_in_the_header"])
def test_pretraining_truncated_records(pretraining_data, tmp_path, keep, detail):
    """TensorFlow's reader would fail mid-training (a cut in the data) or take the file as complete (a cut
    in the last record's 12-byte header); the framing walk names the file and the record's offset first."""
    records = pretraining_data["records"]
    lengths = [len(record) for record in tf.data.TFRecordDataset(records).as_numpy_iterator()]
    last = sum(length + 16 for length in lengths[:-1])  # where the last record starts
    cut = tmp_path / "cut.tfrecord"
    with open(records, "rb") as f:
        cut.write_bytes(f.read()[:last + keep])
    error = pretraining_script.run(base_args(pretraining_data, str(tmp_path / "out"), input_file=cut),
                                   expect_error=True)
    assert error.startswith(f"Error: {cut}: ends inside a record at byte {last} ({detail.format(length=lengths[-1])}")
    assert error.endswith("; the file is truncated: recreate it")
