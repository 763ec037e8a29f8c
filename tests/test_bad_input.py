"""Bad input to every script ends in one clear `Error: ...` line that names the flag or the file, exit status 1,
no traceback, and before any model is built or trained: batch sizes below 1, a --max_seq_length that holds no
text, a truncated TFRecord file (the byte offset named), an NER tag that only the dev or test file has.

Each case runs the real script as a subprocess (a few seconds: the error comes before any model), on the
tiny model and MiniLM vocab of the fine-tuning script tests and the pretraining records of
test_run_pretraining (the fixtures tiny_model_dir and pretraining_data).
"""

import json
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from tests.helpers import pretraining_script
from tests.helpers.exports import export_script
from tests.helpers.extract_features_script import readme_flags
from tests.helpers.extract_features_script import run_script as run_extract_features
from tests.helpers.finetuning_scripts import run, write_files
from tests.helpers.pretraining_script import base_args
from tests.helpers.task_data import GLUE, SWAG_HEADER, SWAG_ROWS
from tests.helpers.tiers import first_in_make_test

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


@pytest.mark.parametrize("flags, message", first_in_make_test([
    ({"do_train": True, "train_batch_size": 0}, "--train_batch_size=0 must be >= 1"),
    ({"do_eval": True, "eval_batch_size": 0}, "--eval_batch_size=0 must be >= 1"),
    ({"do_train": True, "max_seq_length": 2},
     "--max_seq_length=2 must be >= 3 (room for [CLS], a word piece of the text and [SEP])"),
], 1, ids=["train_batch_size", "eval_batch_size", "max_seq_length"]))
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


@pytest.mark.parametrize("name, text, line, flags", first_in_make_test([
    ("dev.txt", "-DOCSTART- O\n\nI O\nmet O\nAnna B-person\n", 5, {"do_train": True, "do_eval": True}),
    ("test.txt", "Hello O\n\nBerlin B-geo-loc\nis O\nbig B-size\n", 5, {"do_predict": True}),
], 1, ids=["dev", "tagged_test"]))
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


@pytest.mark.parametrize("flags, message", [
    ({"train_batch_size": -8}, "--train_batch_size=-8 must be >= 1"),
    ({"max_predictions_per_seq": 40}, "--max_predictions_per_seq=40 must be between 1 and --max_seq_length=32"),
], ids=["train_batch_size", "max_predictions_per_seq"])
def test_pretraining_flags(pretraining_data, tmp_path, flags, message):
    """(eval_batch_size has the same check as train_batch_size: test_classifier_flags runs it.)"""
    error = pretraining_script.run(base_args(pretraining_data, str(tmp_path / "out"), **flags), expect_error=True)
    assert error == f"Error: {message}"


@pytest.mark.parametrize("keep, detail", first_in_make_test(
    [(12 + 30, "a record of {length} bytes starts there"), (5, "its 12-byte header is cut after 5 bytes")], 1,
    ids=["cut_in_the_data", "cut_in_the_header"]))
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



# Runs one command of bert_tf/cli/ on several command lines in one process (one TensorFlow start-up for all),
# each through scripting.run as the installed command does; `CASE <i>` on stderr before each case's output.
CASES_RUNNER = """
import importlib, json, sys
from absl import flags
from bert_tf.cli import scripting
command, cases = sys.argv[1], json.loads(sys.argv[2])
module = importlib.import_module("bert_tf.cli." + command)
for index, argv in enumerate(cases):
    print(f"CASE {index}", file=sys.stderr, flush=True)
    flags.FLAGS.unparse_flags()
    sys.argv = [command] + argv
    try:
        scripting.run(module.main)
    except SystemExit as e:
        print(f"EXIT {e.code}", file=sys.stderr, flush=True)
"""


def run_cases(command, cases, tmp_path):
    """{case id: (Error line, that case's output)} of `cases` ({id: {flag: value}}) run by CASES_RUNNER; each
    must fail cleanly, before a model took weights ("Loaded ..."), leaving no output folder behind."""
    argvs = [[f"--{k}={v}" for k, v in flags.items()] for flags in cases.values()]
    done = subprocess.run([sys.executable, "-c", CASES_RUNNER, command, json.dumps(argvs)], capture_output=True,
                          text=True, cwd=tmp_path, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    outputs = re.split(r"^CASE \d+\n", done.stderr, flags=re.M)[1:]
    assert len(outputs) == len(cases), done.stderr[-3000:]
    results = {}
    for (name, flags), output in zip(cases.items(), outputs):
        assert "EXIT 1" in output, f"{name}: {output[-2000:]}"
        results[name] = error_line(1, output), output
        assert "Loaded " not in output, f"{name}: the model took weights before the error"
        for flag in ("output_dir", "export_dir"):
            assert flag not in flags or not os.path.exists(tmp_path / flags[flag]), f"{name}: --{flag} left behind"
    return results


@pytest.mark.slow
def test_files_and_checkpoints_are_checked_before_any_model(tiny_model_dir, tmp_path):
    """Missing or mismatched inputs of each command: one short line naming the user's path, before TensorFlow
    builds a model, and no output folder left (the run created it; it is removed again)."""
    data = write_files(tmp_path / "SST-2", {k[len("SST-2/"):]: v for k, v in GLUE.items() if k.startswith("SST-2/")})
    model = {k: str(v) for k, v in tiny_model_dir.items()}
    tuning = {**model, "task_name": "sst-2", "data_dir": data, "do_train": True, "max_seq_length": 32}
    errors = run_cases("run_classifier", {
        "no_data": {**tuning, "data_dir": "nodir", "output_dir": "out1"},
        "bad_task": {**tuning, "task_name": "sst-9", "output_dir": "out2"},
        "no_checkpoint": {**tuning, "init_checkpoint": "nockpt", "output_dir": "new/out3"},
        "other_size": {**tuning, "bert_config_file": "base", "output_dir": "out4"},
    }, tmp_path)
    assert errors["no_data"][0] == "Error: nodir/train.tsv does not exist: the train set of Sst2Processor is " \
                                   "expected there"
    assert errors["bad_task"][0].startswith("Error: unknown task 'sst-9'; expected one of ax, cola")
    assert errors["no_checkpoint"][0] == "Error: nockpt: checkpoint not found"
    assert not os.path.exists(tmp_path / "new")  # the folder the run would have created above out3 too
    mismatch = errors["other_size"][0]
    assert mismatch.startswith(f"Error: {model['init_checkpoint']} does not fit --bert_config_file=")
    assert "bert_base_uncased.json: hidden_size 32 (checkpoint) vs 768, " in mismatch and len(mismatch) < 400

    (tmp_path / "input.txt").write_text("a sentence\n", encoding="utf-8")
    extract = {**model, "max_seq_length": 32, "layers": "-1", "input_file": "input.txt", "output_file": "x.jsonl"}
    errors = run_cases("extract_features", {"no_input": {**extract, "input_file": "none.txt"},
                                            "no_folder": {**extract, "output_file": "nodir/x.jsonl"}}, tmp_path)
    assert errors["no_input"][0] == "Error: --input_file=none.txt: no such file"
    assert errors["no_folder"][0] == f"Error: --output_file=nodir/x.jsonl: the folder {tmp_path}/nodir does not exist"

    errors = run_cases("export_model", {"no_vocab": {**model, "vocab_file": "novocab", "export_dir": "export",
                                                      "max_seq_length": 32}}, tmp_path)
    assert errors["no_vocab"][0] == "Error: vocab file 'novocab' does not exist"


@pytest.mark.slow
@pytest.mark.extended  # the checks themselves: test_tagging.py and test_chinese_tagging.py, in process
def test_ner_files_that_cannot_train_or_be_scored_fail_before_any_model(tiny_model_dir, tmp_path):
    """run_ner.py refuses, before it builds a model, a dev file without tags (it could not be scored after the
    training), a training file without tags (here a CoNLL file read as People's Daily) and an entity tagger's
    training file without an entity."""
    write_files(tmp_path, {"conll/train.txt": NER_TRAIN, "conll/dev.txt": "Paris\nis\nnice\n",
                           "no_entity/train.txt": "We O\nlike O\n", "no_entity/dev.txt": NER_TRAIN})
    ner = {**{k: str(v) for k, v in tiny_model_dir.items()}, "max_seq_length": 32, "do_train": True, "do_eval": True}
    errors = run_cases("run_ner", {
        "untagged_dev": {**ner, "data_dir": "conll", "output_dir": "out1"},
        "conll_as_peoples_daily": {**ner, "data_dir": "conll", "input_format": "peoples_daily", "output_dir": "out2"},
        "no_entity": {**ner, "data_dir": "no_entity", "output_dir": "out3"},
    }, tmp_path)
    assert errors["untagged_dev"][0] == ("Error: conll/dev.txt:1: the dev file has no tags; expected a tag after "
                                         "each word (`word tag` lines, CoNLL format)")
    assert errors["conll_as_peoples_daily"][0] == (
        "Error: conll/train.txt:1: the training file has no tags; expected `word/TAG` items (People's Daily "
        "format; --input_format=conll reads CoNLL files)")
    assert errors["no_entity"][0] == ("Error: no_entity/train.txt: no entity tags (every tag is O); an entity tagger "
                                      "needs B-X / I-X tags to learn from (--tag_scheme=pos for other tags?)")
