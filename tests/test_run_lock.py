"""One run per output folder (bert_tf/run_lock.py, taken by every command through scripting.run): a second
run on the same --output_dir stops at once naming the first, and a lock left by a killed run is taken over."""

import os
import signal
import subprocess
import sys
import time

import pytest
from absl import logging

from bert_tf import run_lock
from tests.helpers.finetuning_scripts import ROOT, results, run, start, write_files
from tests.helpers.task_data import GLUE

pytestmark = pytest.mark.subprocess


def wait_for(condition, what, timeout=180):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def holder(folder):
    """A separate Python process that holds the lock of `folder` until it is killed (prints 'held')."""
    code = (f"import sys, time; sys.path.insert(0, {ROOT!r}); from bert_tf import run_lock\n"
            f"with run_lock.hold({str(folder)!r}, 'holder'):\n    print('held', flush=True); time.sleep(600)")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_live_holder_refuses_others_and_a_killed_ones_lock_is_taken_over(tmp_path, caplog):
    folder = tmp_path / "out"
    process = holder(folder)
    lock_file = folder / run_lock.LOCK_FILE
    assert f"pid={process.pid} " in lock_file.read_text()
    with pytest.raises(run_lock.OutputInUse, match=rf"{folder} is in use by another run \(pid={process.pid} "):
        with run_lock.hold(str(folder), "test"):
            pass
    assert f"pid={process.pid} " in lock_file.read_text()  # the refused run changed nothing
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert lock_file.exists()  # a killed run leaves its lock file; the kernel released its flock
    with caplog.at_level(logging.WARNING), run_lock.hold(str(folder), "test"):
        assert f"pid={os.getpid()} " in lock_file.read_text()
    assert f"no longer running (pid={process.pid} " in caplog.text
    assert not lock_file.exists()  # removed when the run ends


@pytest.mark.slow
def test_two_runs_on_one_output_dir_the_second_stops_naming_the_first(tiny_model_dir, tmp_path):
    """Before the lock both exited 0 and eval_results.txt held the last writer's numbers only. The run that
    holds the lock removes the temporary files of killed runs (a predict-only rerun used to keep them)."""
    data = write_files(tmp_path, {k[len("MNLI/"):]: v for k, v in GLUE.items() if k.startswith("MNLI/")})
    out = tmp_path / "out"
    flags = dict(task_name="MNLI", data_dir=data, output_dir=out, do_train=True, do_eval=True, train_batch_size=1,
                 num_train_epochs=2)
    out.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    leftover = out / f"eval_results.txt.incomplete-{int(dead.stdout)}"  # a killed run's temporary file
    leftover.write_text("partial")
    first = start("run_classifier.py", tiny_model_dir, **flags)
    lock_file = out / run_lock.LOCK_FILE
    wait_for(lambda: lock_file.exists() and f"pid={first.pid} " in lock_file.read_text(), "the first run's lock")
    second = run("run_classifier.py", tiny_model_dir, **flags)
    assert second.returncode == 1, second.stderr[-3000:]
    last = second.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Error: {out} is in use by another run (pid={first.pid} "), last
    assert "command=run_classifier.py" in last
    _, stderr = first.communicate(timeout=600)
    assert first.returncode == 0, stderr[-3000:]
    assert results(out)["global_step"] == 4
    assert not lock_file.exists() and not leftover.exists()
