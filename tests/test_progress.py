"""bert_tf.progress: the progress line of long jobs (rate, ETA; a redrawn line on a terminal, plain log lines
otherwise), with a fake clock; and a fine-tuning run under a pseudo-terminal and with its output redirected."""

import io
import logging as python_logging
import os
import pty
import select
import subprocess
import sys
import time

import pytest
from absl import logging

from bert_tf import progress as progress_module
from bert_tf.progress import Progress
from tests.helpers.finetuning_scripts import ROOT, run, write_files
from tests.helpers.task_data import GLUE

CLEAR = "\r\x1b[K"


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(progress_module, "_drawn_on", None)
    return Terminal()


def test_terminal_redraws_one_line_with_rate_and_eta(clock, terminal):
    job = Progress("training", 350, "steps", stream=terminal, clock=clock)
    clock.now = 3.0  # the first update: start-up (tracing) took 3 s, so no rate yet
    job.update(1)
    assert terminal.getvalue() == CLEAR + "training  1/350 steps  0%"
    clock.now = 3.2
    job.update(3)
    assert terminal.getvalue().count(CLEAR) == 1  # at most one redraw per half second
    clock.now = 4.0
    job.update(11)  # 10 steps in the 1 s since the first update (start-up left out)
    assert terminal.getvalue().endswith(CLEAR + "training  11/350 steps  3%  10.0 steps/s  ETA 0:00:33")
    assert "\n" not in terminal.getvalue()
    clock.now = 38.0
    job.update(350)  # the last 30 s: 339 steps in 34 s (from the update at 4 s)
    assert terminal.getvalue().endswith(CLEAR + "training  350/350 steps  100%  9.97 steps/s")  # no ETA when done
    job.close()
    assert terminal.getvalue().endswith(CLEAR + "training  350/350 steps  100%  9.21 steps/s  in 0:00:38\n")


def test_a_log_record_clears_the_line_and_the_next_update_redraws_it(clock, terminal):
    job = Progress("prediction", 1000, "examples", stream=terminal, clock=clock)
    clock.now = 2.0
    job.update(100)
    record = python_logging.LogRecord("absl", python_logging.INFO, __file__, 1, "step 1", None, None)
    assert logging.get_absl_handler().filter(record)  # the filter that Progress installed lets it through
    assert terminal.getvalue().endswith("examples  10%" + CLEAR)
    clock.now = 2.1  # within half a second of the last draw, but the line is gone: drawn again
    job.update(150)
    assert terminal.getvalue().endswith(CLEAR + CLEAR + "prediction  150/1000 examples  15%  500 examples/s  "
                                        "ETA 0:00:01")


def test_redirected_output_gets_plain_log_lines_every_30_seconds(clock, caplog):
    caplog.set_level(python_logging.INFO, logger="absl")  # whatever verbosity an earlier test set
    stream = io.StringIO()
    job = Progress("data creation", 200.0, "MB", stream=stream, clock=clock)
    for second in range(1, 101):
        clock.now = float(second)
        job.advance(2.0, f"{second * 10:,} documents")
    job.close()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("data creation")]
    assert lines == ["data creation  60.0/200.0 MB  30%  2.00 MB/s  ETA 0:01:10  300 documents",
                     "data creation  120.0/200.0 MB  60%  2.00 MB/s  ETA 0:00:40  600 documents",
                     "data creation  180.0/200.0 MB  90%  2.00 MB/s  ETA 0:00:10  900 documents",
                     "data creation  200.0/200.0 MB  100%  2.00 MB/s  in 0:01:40  1,000 documents"]
    assert stream.getvalue() == ""


def test_a_dumb_terminal_gets_the_plain_lines(clock, caplog, monkeypatch):
    monkeypatch.setenv("TERM", "dumb")
    caplog.set_level(python_logging.INFO, logger="absl")  # whatever verbosity an earlier test set
    stream = Terminal()
    job = Progress("evaluation", 10, "batches", stream=stream, clock=clock)
    clock.now = 5.0
    job.update(10)
    job.close()
    assert stream.getvalue() == ""
    assert [r.getMessage() for r in caplog.records] == ["evaluation  10/10 batches  100%  2.00 batches/s  in 0:00:05"]


def test_a_job_within_its_first_second_shows_nothing(clock, terminal, caplog):
    caplog.set_level(python_logging.INFO, logger="absl")  # whatever verbosity an earlier test set
    for stream in (terminal, io.StringIO()):
        with Progress("prediction", 8, "examples", stream=stream, clock=clock) as job:
            clock.now += 0.9
            job.update(8)
        clock.now += 5
    assert terminal.getvalue() == "" and not caplog.records


def test_the_rate_follows_the_last_30_seconds(clock):
    job = Progress("training", 10_000, "steps", stream=io.StringIO(), clock=clock)
    for second in range(1, 61):
        clock.now = float(second)
        job.advance(10)
    assert job.rate() == pytest.approx(10.0)
    for second in range(61, 101):
        clock.now = float(second)
        job.advance(2)
    assert job.rate() == pytest.approx(2.0)
    assert job.text().endswith("2.00 steps/s  ETA 1:17:40")  # (10000 - 680) / 2 s


def test_leaving_by_an_exception_clears_the_line(clock, terminal):
    with pytest.raises(ValueError):
        with Progress("training", 10, "steps", stream=terminal, clock=clock) as job:
            clock.now = 2.0
            job.update(1)
            raise ValueError("bad input")
    assert terminal.getvalue() == CLEAR + "training  1/10 steps  10%" + CLEAR


# ------------------------------------------------------------------------------- fine-tuning runs

def mrpc_flags(model_dir, tmp_path, epochs):
    """run_classifier.py on GLUE's two MRPC training lines, batch 2: `epochs` steps."""
    data = write_files(tmp_path / "data", {k[len("MRPC/"):]: v for k, v in GLUE.items() if k.startswith("MRPC/")})
    return {**model_dir, "task_name": "MRPC", "data_dir": data, "output_dir": tmp_path / "out", "do_train": True,
            "max_seq_length": 32, "train_batch_size": 2, "num_train_epochs": epochs}


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_fine_tuning_on_a_terminal_shows_an_eta_within_seconds_of_the_first_step(tiny_model_dir, tmp_path):
    """2000 steps with one metric line per 1000 (--iterations_per_loop's default), stdout and stderr on a
    pseudo-terminal. Training starts when its first step is done (that step traces and compiles the loop),
    which the first progress line shows: a line with an ETA follows within 10 s, long before the first
    metric line. The run is stopped once it has been seen."""
    flags = mrpc_flags(tiny_model_dir, tmp_path, 2000)
    args = [sys.executable, os.path.join(ROOT, "run_classifier.py")] + [f"--{k}={v}" for k, v in flags.items()]
    controller, child = pty.openpty()
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=child, stderr=child, cwd=ROOT,
                               env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "TERM": "xterm"})
    os.close(child)
    output, first_step, eta = "", None, None
    deadline = time.monotonic() + 300
    try:
        while eta is None and time.monotonic() < deadline:
            if not select.select([controller], [], [], 1.0)[0]:
                if process.poll() is not None:
                    break
                continue
            try:
                data = os.read(controller, 65536).decode("utf-8", "replace")
            except OSError:  # the child has closed the terminal
                break
            now, output = time.monotonic(), output + data
            if first_step is None and CLEAR + "training  " in output:
                first_step = now
            if first_step is not None and "ETA " in output[output.index(CLEAR + "training  "):]:
                eta = now
    finally:
        process.kill()
        process.wait()
        os.close(controller)
    assert first_step is not None, output[-3000:]
    assert eta is not None, output[-3000:]
    assert eta - first_step < 10, output[-3000:]
    assert "step 1000/2000" not in output  # the ETA came before the first metric line
    assert "Running training" in output


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_fine_tuning_with_its_output_redirected_writes_no_control_characters(tiny_model_dir, tmp_path):
    """200 steps, then the dev evaluation and the test predictions, stdout and stderr to pipes: plain lines
    only, the metric line and the progress's final line among them."""
    done = run("run_classifier.py", {}, **mrpc_flags(tiny_model_dir, tmp_path, 200), do_eval=True, do_predict=True)
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert "\r" not in output and "\x1b" not in output
    assert "step 200/200 | loss" in output
    assert "training  200/200 steps  100%" in output and " in 0:00:" in output
