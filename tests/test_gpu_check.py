"""bench/gpu_check.sh (issue 21's prepared GPU check): its --dry_run runs every shape's code path on the CPU
with the tiny config and prints one JSON line per shape; no timing is asserted."""

import json
import os
import subprocess

import pytest

from bench import gpu_check

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_published_peaks_are_found_by_device_name():
    assert gpu_check.published_peak("NVIDIA H200") == ("H200", 989.4e12)
    assert gpu_check.published_peak("NVIDIA A100-SXM4-80GB") == ("A100", 312e12)
    assert gpu_check.published_peak("CPU") == (None, None)


@pytest.mark.slow
@pytest.mark.subprocess
def test_dry_run_prints_one_json_line_per_shape():
    done = subprocess.run(["bash", os.path.join(ROOT, "bench", "gpu_check.sh"), "--dry_run"], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    expected = [("train", b, t) for b, t in gpu_check.DRY_TRAIN_SHAPES] + [
        ("inference", b, t) for b, t in gpu_check.DRY_INFERENCE_SHAPES]
    assert [(line["task"], line["batch"], line["seq"]) for line in lines] == expected
    for line in lines:
        assert "error" not in line, line
        assert line["ms"] > 0 and line["examples_per_s"] > 0 and 0 < line["mfu_measured"], line
        assert line["mfu_published"] is None and line["device"] == "CPU"  # no published peak for a CPU
