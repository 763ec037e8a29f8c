"""bench/harness.py, what the benchmark scripts share: a worker process's round trip and its failures, the
interleaved rounds, the error line of a failed process, the parts of a section. No timing is asserted."""

import datetime
import os
import sys
import textwrap

import pytest

from bench import harness

WORKER = textwrap.dedent("""\
    import argparse
    import sys
    import time

    sys.path.insert(0, {root!r})
    from bench import harness


    def run(spec):
        if spec.get("fail"):
            raise ValueError("the spec asked for it")
        time.sleep(spec.get("sleep", 0))
        return {{"double": 2 * spec["x"], "path": sys.path[1:2]}}


    harness.parse_args(argparse.ArgumentParser(), run)
    sys.exit("no --worker")
""")


@pytest.fixture
def worker(tmp_path):
    path = tmp_path / "worker.py"
    path.write_text(WORKER.format(root=harness.ROOT), encoding="utf-8")
    return str(path)


@pytest.mark.subprocess
def test_a_worker_answers_its_spec_and_the_spec_file_is_removed(worker, tmp_path):
    work_dir = tmp_path / "work"
    work_dir.mkdir()
    result = harness.run_worker(worker, {"x": 21}, sys.executable, 60, str(work_dir))
    assert result["double"] == 42
    assert os.listdir(work_dir) == []
    assert harness.run_worker(worker, {"x": 1}, sys.executable, 60, str(work_dir), with_root=True)["double"] == 2


@pytest.mark.subprocess
def test_a_failed_or_late_worker_gives_one_error_line(worker, tmp_path):
    failed = harness.run_worker(worker, {"x": 1, "fail": True}, sys.executable, 60, str(tmp_path))
    assert failed == {"error": "ValueError: the spec asked for it"}
    late = harness.run_worker(worker, {"x": 1, "sleep": 30}, sys.executable, 1, str(tmp_path))
    assert late == {"error": "timed out after 1 s"}
    assert os.listdir(tmp_path) == ["worker.py"]


def test_interleaved_rounds_skip_a_failed_job_and_keep_the_latest_versions(capsys):
    calls = []

    def job(name, failing_call=None):
        def run():
            calls.append(name)
            if len([c for c in calls if c == name]) == failing_call:
                return {"error": f"{name} broke"}
            return {"value": len(calls), "versions": f"{name} {len(calls)}"}
        return run

    jobs = {"a": ("library a", "kind_a", job("a")), "b": ("library b", "kind_b", job("b", failing_call=2)),
            "c": ("library c", "kind_a", job("c"))}
    results, failures, versions = harness.interleaved_rounds(jobs, 3, 0.0, {"first": "given"})
    assert calls == ["a", "b", "c", "a", "b", "c", "a", "c"]
    assert {key: [r["value"] for r in found] for key, found in results.items()} == {
        "a": [1, 4, 7], "b": [2], "c": [3, 6, 8]}
    assert failures == {"b": "b broke"}
    assert versions == {"first": "given", "kind_a": "c 8", "kind_b": "b 2"}
    printed = capsys.readouterr().out.splitlines()
    assert printed[1] == "FAILED library b: b broke"
    assert [line.split(" (")[0] for line in printed if line.startswith("round")] == [
        "round 1/3 done", "round 2/3 done", "round 3/3 done"]


def test_error_line_finds_the_reason():
    absl = ("I0000 some log line\nFATAL Flags parsing error: Unknown command line flag 'tflite_inputs'\n"
            "Pass --helpshort or --helpfull to see help on flags.\n")
    assert harness.error_line(absl) == "FATAL Flags parsing error: Unknown command line flag 'tflite_inputs'"
    traceback = ("Traceback (most recent call last):\n  File \"x.py\", line 1\n"
                 "ImportError: cannot import name 'tflite' from 'bert_tf.export'\n")
    assert harness.error_line(traceback) == "ImportError: cannot import name 'tflite' from 'bert_tf.export'"
    assert harness.error_line("") == "no output"


def test_shown_command_has_no_absolute_paths():
    shown = harness.shown_command(["--model=minilm", "--work_dir=/tmp/x", "--results_file=/a/b.md"],
                                  "bench/bench_serving.py")
    assert shown == "python bench/bench_serving.py --model=minilm --work_dir=$WORK_DIR --results_file=$RESULTS_FILE"


def test_heading_leaves_out_empty_notes():
    today = datetime.date.today().isoformat()
    assert harness.heading("bench_models.py", "") == f"## bench_models.py — {today}"
    assert harness.heading("bench_serving.py", "x", "dry run: not a measurement") == (
        f"## bench_serving.py (x) (dry run: not a measurement) — {today}")
    assert harness.comma_list("a,,b,") == ["a", "b"]
