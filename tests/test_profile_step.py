"""bench/profile_step.py: a real profile of the tiny model's inference and training steps is read back from
TensorFlow's trace and summed by op type; nothing is appended with --results_file="". No timing is asserted."""

import os
import subprocess
import sys

import pytest

from bench.results import RESULTS_FILE
from tests.helpers import tokenizer_data
from tests.helpers.finetuning_scripts import write_files
from tests.helpers.tiers import first_in_make_test

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def table_rows(out):
    """{op type: (ms per step, calls per step)} of the printed table."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 4 and cells[2].isdigit():
            rows[cells[0]] = (float(cells[1]), int(cells[2]))
    return rows


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("task", first_in_make_test(["inference", "train"], 1))
def test_profile_of_the_tiny_model_counts_its_ops(task):
    before = os.path.getsize(RESULTS_FILE)
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "profile_step.py"), "--config=tiny",
                           f"--task={task}", "--batch_size=2", "--seq_length=16", "--steps=1", "--top=40",
                           "--results_file="], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = table_rows(done.stdout)
    matmuls = {op: row for op, row in rows.items() if "MatMul" in op}
    # BERT-Tiny: 2 layers x (4 dense matmuls + 2 of the feed-forward) + the pooler, + 2 attention matmuls each
    assert sum(calls for _, calls in matmuls.values()) >= 2 * 6 + 1 + 2 * 2, done.stdout
    assert sum(ms for ms, _ in matmuls.values()) > 0, done.stdout
    assert not {"PartitionedCall", "StatefulPartitionedCall"} & set(rows), done.stdout
    assert "of which matmuls" in done.stdout
    assert os.path.getsize(RESULTS_FILE) == before


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended  # a benchmark's whole-tool check (tests/helpers/tiers.py)
def test_profile_of_a_commands_own_training_steps(tiny_model_dir, tmp_path):
    """--job: run_classifier.py's own steps on real text (tiny model), profiled from step 11 on; the command is
    stopped after them (it would train 36 steps), and the shown command has placeholders for its paths."""
    texts = [line for line in tokenizer_data.corpus_lines() if line.strip() and "\t" not in line][:72]
    rows = "".join(f"{'spam' if i % 3 else 'ham'}\t{text}\n" for i, text in enumerate(texts))
    data = write_files(tmp_path / "data", {"train.tsv": "label\tmessage\n" + rows})
    flags = " ".join(f"--{name}={value}" for name, value in tiny_model_dir.items())
    job = (f"run_classifier.py --task_name=custom --text_a_column=message --data_dir={data} --do_train {flags} "
           f"--max_seq_length=32 --train_batch_size=2 --num_train_epochs=1 --output_dir={tmp_path / 'out'}")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "profile_step.py"), f"--job={job}",
                           "--start_step=11", "--steps=3", "--top=40", "--results_file="], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = table_rows(done.stdout)
    forward = 2 * 6 + 1 + 2 * 2  # BERT-Tiny's matmuls in the forward pass (the test above)
    assert sum(calls for op, (_, calls) in rows.items() if "MatMul" in op) >= 2 * forward, done.stdout  # + backward
    assert "profiled" in done.stdout and str(tmp_path) not in done.stdout.split("\n\n", 2)[1], done.stdout
    assert not (tmp_path / "out" / "model.ckpt-36.index").exists()  # stopped after the profiled steps
