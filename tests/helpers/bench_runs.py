"""A benchmark script's dry run, as the bench tests check it: `python bench/<script> --dry_run --work_dir=DIR`
exits 0, says it is no measurement, shows the work directory as $WORK_DIR (no machine path) and leaves
bench/RESULTS.md as it was (byte for byte)."""

import hashlib
import os
import subprocess
import sys

from bench.results import RESULTS_FILE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def dry_run(script, work_dir, timeout=600):
    """The stdout of `script` (a file of bench/) run with --dry_run in `work_dir`, checked as the module says."""
    before = digest(RESULTS_FILE)
    result = subprocess.run([sys.executable, os.path.join(ROOT, "bench", script), "--dry_run",
                             f"--work_dir={work_dir}"], capture_output=True, text=True, timeout=timeout,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "(dry run: not a measurement)" in result.stdout and "--work_dir=$WORK_DIR" in result.stdout, result.stdout
    assert digest(RESULTS_FILE) == before
    return result.stdout
