"""bench/gpu_jobs.sh (issue 57's real jobs on a GPU): `--prepare` writes what it carries, and its --dry_run runs
every job's code path on the CPU (bert_tf's commands on Keras's JAX backend, tiny shapes and data) and prints one
JSON line per measurement; no timing is asserted."""

import json
import os
import subprocess
import sys

import pytest

from bench import gpu_jobs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_step_rates_read_the_loops_log_lines():
    log = ("I1207 step 10/60 | loss 7.1 | lr 1e-05 | 3000.5 examples/s | 384064 tokens/s | MFU 25.0%\n"
           "I1207 step 20/60 | loss 6.9 | masked_lm_accuracy 0.1 | lr 2e-05 | 3855.0 examples/s\n")
    assert gpu_jobs.step_rates(log) == [(3000.5, 0.25), (3855.0, None)]


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended  # a benchmark's dry run (tests/helpers/tiers.py)
def test_dry_run_runs_every_job_on_the_cpu(tmp_path):
    data = tmp_path / "carried"
    done = subprocess.run([sys.executable, "-m", "bench.gpu_jobs", "--prepare", f"--data_dir={data}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (data / "sotu.txt.gz").exists() and (data / "data" / "sentiment" / "dev.tsv").exists()
    weights = (data / "models" / "minilm_hf" / "model.safetensors").stat().st_size
    assert 40e6 < weights < 50e6  # bfloat16: half the 91 MB of float32
    done = subprocess.run(["bash", os.path.join(ROOT, "bench", "gpu_jobs.sh"), "--dry_run", f"--data_dir={data}",
                           f"--work_dir={tmp_path / 'work'}"], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0]["platform"] == "cpu" and lines[0]["dry_run"] and lines[-1]["tensorflow_imported"] is False
    assert not [line for line in lines if "error" in line], lines
    pretraining = [line for line in lines if line.get("job") == "pretraining" and "sequences_per_s" in line]
    assert len(pretraining) == 1 and pretraining[0]["sequences_per_s"] > 0, lines
    assert pretraining[0]["input_sequences_per_s"] > 0 and pretraining[0]["mfu_measured"] > 0
    rt = [line for line in lines if line.get("job") == "rt"]
    assert [line["implementation"] for line in rt] == ["bert_tf"] and 0 <= rt[0]["accuracy"] <= 1, rt
    attention = [(line["attention"], line["attention_dropout"]) for line in lines if "attention" in line]
    assert attention == [("xla", 0.1), ("xla", 0.0), ("fused", 0.0)], lines
