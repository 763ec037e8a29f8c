"""bench/profile_step.py: a real profile of the tiny model's inference and training steps is read back from
TensorFlow's trace and summed by op type; nothing is appended with --results_file="". No timing is asserted."""

import os
import subprocess
import sys

import pytest

from bench.results import RESULTS_FILE
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
