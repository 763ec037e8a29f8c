"""bench/gpu_check.sh (issue 21's prepared GPU check): its --dry_run runs every shape's code path on the CPU
with the tiny config and prints one JSON line per shape; no timing is asserted."""

import json
import os
import subprocess

import pytest

from bench import gpu_check, gpu_check_jax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_published_peaks_are_found_by_device_name():
    assert gpu_check.published_peak("NVIDIA H200") == ("H200", 989.4e12)
    assert gpu_check.published_peak("NVIDIA A100-SXM4-80GB") == ("A100", 312e12)
    assert gpu_check.published_peak("CPU") == (None, None)


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended  # a benchmark's dry run (tests/helpers/tiers.py)
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


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended  # a benchmark's dry run (tests/helpers/tiers.py)
def test_the_jax_checks_dry_run_measures_every_shape_without_tensorflow():
    """bench/gpu_check_jax.sh --dry_run (KERAS_BACKEND=jax, the tiny config on the CPU): the device line, the
    first batch of each training shape, each inference batch, then the comparison line; TensorFlow never
    imported (the accelerator host has none)."""
    done = subprocess.run(["bash", os.path.join(ROOT, "bench", "gpu_check_jax.sh"), "--dry_run"],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    device, *shapes, summary = [json.loads(line) for line in done.stdout.splitlines()]
    assert device["platform"] == "cpu" and device["measured_bf16_peak"] > 0 and device["published_bf16_peak"] is None
    expected = [("train", "tiny", t, gpu_check_jax.DRY_BATCHES[t][0]) for _, t in gpu_check_jax.DRY_TRAIN_SHAPES]
    expected += [("inference", "tiny", 16, b) for b in gpu_check_jax.INFERENCE_BATCHES]
    assert [(s["task"], s["config"], s["seq"], s["batch"]) for s in shapes] == expected
    for shape in shapes:
        assert "error" not in shape, shape
        assert shape["ms"] > 0 and shape["examples_per_s"] > 0 and shape["mfu_measured"] > 0, shape
    assert summary["tensorflow_imported"] is False and summary["shapes_measured"] == len(expected)
