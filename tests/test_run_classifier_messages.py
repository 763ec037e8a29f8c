"""What run_classifier.py tells a newcomer: the way out of an unknown task (--task_name=custom) and the columns
of test_results.tsv, which keeps the original's format without a header (its log line names them)."""

import pytest

from tests.helpers.finetuning_scripts import run, write_files

pytestmark = pytest.mark.subprocess

SST2 = {"train.tsv": "sentence\tlabel\na joy to watch\t1\nfar too long\t0\n",
        "test.tsv": "index\tsentence\n0\ta great film\n1\tawful and dull\n2\tfine\n"}


def test_an_unknown_task_names_the_custom_task(tiny_model_dir, tmp_path):
    done = run("run_classifier.py", tiny_model_dir, task_name="sentiment", data_dir=tmp_path,
               output_dir=tmp_path / "out", do_train=True)
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert done.returncode == 1 and len(errors) == 1, done.stderr[-2000:]
    assert errors[0].startswith("Error: unknown task 'sentiment'; expected one of ax, cola, "), errors
    assert "--task_name=custom" in errors[0] and "--text_a_column" in errors[0] and "--label_column" in errors[0]


def test_the_log_names_the_columns_of_test_results(tiny_model_dir, tmp_path):
    data = write_files(tmp_path / "SST-2", SST2)
    done = run("run_classifier.py", tiny_model_dir, task_name="sst-2", data_dir=data, output_dir=tmp_path / "out",
               do_predict=True)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = (tmp_path / "out" / "test_results.tsv").read_text().splitlines()
    assert len(rows) == 3 and all(len(row.split("\t")) == 2 for row in rows)  # the original's format, no header
    assert (tmp_path / "out" / "labels.txt").read_text().splitlines() == ["0", "1"]
    lines = [line for line in done.stderr.splitlines() if "] Wrote test_results.tsv" in line]
    assert len(lines) == 1 and lines[0].endswith(
        "] Wrote test_results.tsv: a line per test example (3), no header; columns: P(0), P(1): the probability "
        "of each label in the order of labels.txt"), done.stderr[-2000:]
