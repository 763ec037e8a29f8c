"""One run per output folder (bert_tf/run_lock.py, taken by every command through scripting.run): a second
run on the same --output_dir stops at once naming the first, and a lock left by a killed run is taken over;
a lock path that is not a regular file is refused untouched, and what a lock file held is quoted only as a
holder line."""

import contextlib
import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest
from absl import logging

from bert_tf import run_lock
from tests.helpers.finetuning_scripts import ROOT, results, run, start, write_files
from tests.helpers.task_data import GLUE


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


@pytest.mark.subprocess
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
@pytest.mark.subprocess
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


@contextlib.contextmanager
def deadline(seconds):
    """TimeoutError in this (the main) thread after `seconds`: a test that would wait forever fails instead."""

    def expire(signum, frame):
        raise TimeoutError(f"still waiting after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("kind, what", [("symlink", "is a symbolic link"),
                                        ("dangling symlink", "is a symbolic link"),
                                        ("hard link", "has 2 hard links")])
def test_a_lock_path_that_is_a_link_is_refused_and_what_it_names_left_alone(tmp_path, kind, what):
    """A run used to truncate the file a symlinked lock named, write its holder line into it, quote its content
    and remove the link; through a dangling link it created the target."""
    folder, victim = tmp_path / "out", tmp_path / "victim.txt"
    folder.mkdir()
    lock_file = folder / run_lock.LOCK_FILE
    if kind == "dangling symlink":
        lock_file.symlink_to(victim)
    else:
        victim.write_text("precious data\n")
        lock_file.symlink_to(victim) if kind == "symlink" else os.link(victim, lock_file)
    with pytest.raises(OSError, match=rf"^\[Errno \d+\] cannot lock the output folder {re.escape(str(folder))}: "
                                      rf"{re.escape(str(lock_file))} {what}; expected a regular file"):
        with run_lock.hold(str(folder), "test"):
            pass
    assert run_lock.describe_holder(str(lock_file)) == "unknown"
    if kind == "dangling symlink":
        assert not victim.exists() and lock_file.is_symlink()
    else:
        assert victim.read_text() == "precious data\n"
        assert lock_file.is_symlink() if kind == "symlink" else lock_file.read_text() == "precious data\n"


@pytest.mark.parametrize("kind, what", [("fifo", "is not a regular file"), ("directory", "is a directory")])
def test_a_fifo_or_a_directory_at_the_lock_path_is_refused_at_once(tmp_path, kind, what):
    """A FIFO used to keep the run waiting forever on its read; a directory gave "Is a directory" without
    naming the lock file."""
    folder = tmp_path / "out"
    folder.mkdir()
    lock_file = folder / run_lock.LOCK_FILE
    os.mkfifo(lock_file) if kind == "fifo" else lock_file.mkdir()
    with deadline(10), pytest.raises(OSError, match=f"{re.escape(str(lock_file))} {what}; expected a regular file"):
        with run_lock.hold(str(folder), "test"):
            pass
    assert os.path.lexists(lock_file)  # left in place
    with deadline(10):
        assert run_lock.describe_holder(str(lock_file)) == "unknown"


@pytest.mark.parametrize("content, quoted", [
    (random.Random(0).randbytes(100_000), "(unrecognised content, 100000 bytes)"),
    (b"pid=12 host=h since=2024-01-01T00:00:00 command=\x1b[2Jx\n", "(unrecognised content, 54 bytes)"),
    (b"pid=12 host=h since=2024-01-01T00:00:00 command=run_classifier.py\n",
     "(pid=12 host=h since=2024-01-01T00:00:00 command=run_classifier.py)"),
], ids=["random bytes", "terminal escapes", "a holder line"])
def test_a_taken_over_lock_is_quoted_only_as_a_holder_line(tmp_path, caplog, content, quoted):
    """The warning of a takeover used to print the old content whole: 4 KB of binary for a lock of random bytes,
    terminal escapes as they were."""
    folder = tmp_path / "out"
    folder.mkdir()
    lock_file = folder / run_lock.LOCK_FILE
    lock_file.write_bytes(content)
    assert f"({run_lock.describe_holder(str(lock_file))})" == quoted
    with caplog.at_level(logging.WARNING), run_lock.hold(str(folder), "test"):
        assert f"pid={os.getpid()} " in lock_file.read_text()
    assert f"no longer running {quoted}" in caplog.text
    assert caplog.text.replace("\n", "").isprintable(), caplog.text[:200]
    assert not lock_file.exists()
