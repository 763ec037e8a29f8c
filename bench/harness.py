"""What the benchmark scripts share: timing in one process, worker processes, interleaved rounds, the parts of
a section. bench/results.py writes the sections to bench/RESULTS.md; tools/peer_venvs.py gives the peers'
pythons. Standard library only at import time: the workers in the peers' venvs import it too.

Timing in one process:

    timed_calls(call, warmup, steps)           seconds of each timed call, after untimed ones
    interleaved_latencies(functions, seconds)  every function once per round, until each had `seconds`

Worker processes (one library, one model, one measurement per fresh process; TF and torch in one process
fight over threads): the parent writes the worker's spec as JSON to a file and runs `<script> --worker
<file>` in the python of a peer venv (or this one); the worker prints one line `RESULT <json>`; the parent
gets that JSON, or {"error": the line of the worker's stderr that says why}.

    parse_args(parser, run)                    the script's arguments; in a worker: the RESULT line, exit
    run_worker(script, spec, python, timeout)  the parent's side
    matmul_peaks(dtypes, timeout)              `flops.measure_peak_flops` on /CPU:0, each dtype in a fresh
                                               process of this Python (this file is its worker)

Interleaved rounds (every case once per round, so drifting load on a shared machine hits all cases alike):
`interleaved_rounds(jobs, rounds, begin)`.

The section: `heading(script, *notes)`, `command_line(script)` (the arguments as given), `shown_command(argv,
script)` (absolute paths as placeholders), `git_commit()`, `cpu_model()`; for the scripts with a work
directory and a dry run, `add_run_flags(parser, ...)` and `outputs(args, prefix)`.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from bert_tf.cpu_kernels import prefer_onednn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULT = "RESULT "  # the worker's answer line: RESULT <json>


def comma_list(text):
    """"a,b,,c" -> ["a", "b", "c"]: a flag's comma list."""
    return [t for t in text.split(",") if t]


# ------------------------------------------------------------------------------------ timing in one process

def timed_calls(call, warmup, steps):
    """Seconds of each of `steps` calls of `call()`, after `warmup` untimed ones (XLA compiles there)."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(steps):
        begin = time.perf_counter()
        call()
        times.append(time.perf_counter() - begin)
    return times


def interleaved_latencies(functions, seconds, min_runs=5):
    """{name: function()} -> {name: latencies in seconds (numpy)}: one warm-up call each, then rounds that call
    each function once, for about `seconds` per function (at least `min_runs` rounds). Interleaving keeps the
    comparison fair on a shared machine whose load drifts."""
    import numpy as np
    for function in functions.values():
        function()
    latencies, start = {name: [] for name in functions}, time.perf_counter()
    rounds = 0
    while rounds < min_runs or time.perf_counter() - start < seconds * len(functions):
        for name, function in functions.items():
            begin = time.perf_counter()
            function()
            latencies[name].append(time.perf_counter() - begin)
        rounds += 1
    return {name: np.array(values) for name, values in latencies.items()}


# ---------------------------------------------------------------------------------------- worker processes

def parse_args(parser, run):
    """`parser`'s arguments, with the hidden `--worker <spec file>` flag added. In a worker process (run_worker
    starts it with that flag): prints run(the spec read from the file) as the RESULT line and exits."""
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        with open(args.worker, encoding="utf-8") as f:
            spec = json.load(f)
        print(RESULT + json.dumps(run(spec)), flush=True)
        sys.exit(0)
    return args


def error_line(stderr):
    """The line of a failed process's stderr that says why: an exception or absl's flag error, else the last."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^([\w.]+\.)?\w*(Error|Exception|Exit)\b", line) or line.startswith("FATAL"):
            return line[:300]
    return lines[-1][:300] if lines else "no output"


def run_worker(script, spec, python, timeout, work_dir=None, with_root=False, env=None):
    """Runs `script --worker <spec file>` (parse_args's side) in a fresh process of `python`, in `work_dir` (which
    holds the spec file; default: the repository root, the spec in the temporary directory), with
    TF_CPP_MIN_LOG_LEVEL=2, PYTHONPATH the repository root if `with_root` else empty, `env` added, and in
    bert_tf's own Python the commands' choice of TensorFlow's CPU kernels (bert_tf/cpu_kernels.py). Returns
    the worker's JSON result, or {"error": why} (its stderr's error_line, or the time limit)."""
    path = os.path.join(work_dir or tempfile.gettempdir(), f"spec-{os.getpid()}-{time.monotonic_ns()}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT if with_root else "")
    environment.update(env or {})
    if python == sys.executable:  # bert_tf's own Python (a peer's is its venv's): the commands' CPU kernels
        prefer_onednn(environment)
    try:
        result = subprocess.run([python, os.path.abspath(script), "--worker", path], cwd=work_dir or ROOT,
                                capture_output=True, text=True, timeout=timeout, env=environment)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    finally:
        os.remove(path)
    lines = [line for line in result.stdout.splitlines() if line.startswith(RESULT)]
    if result.returncode or not lines:
        return {"error": error_line(result.stderr)}
    return json.loads(lines[-1][len(RESULT):])


def peak_worker(spec):
    """This file's worker: {"peak": the matmul peak of spec["dtype"] on /CPU:0, FLOP/s}."""
    from bert_tf.training import flops
    return {"peak": flops.measure_peak_flops("/CPU:0", spec["dtype"])}


def matmul_peaks(dtypes, timeout, work_dir=None):
    """{dtype: `flops.measure_peak_flops("/CPU:0", dtype)`, FLOP/s, or 0.0 where its process failed}, each
    measured in a fresh process of this Python."""
    return {dtype: run_worker(__file__, {"dtype": dtype}, sys.executable, timeout, work_dir, True).get("peak", 0.0)
            for dtype in dtypes}


# ------------------------------------------------------------------------------------------------- rounds

def interleaved_rounds(jobs, rounds, begin, versions=None):
    """Runs the jobs ({key: (label, kind, run)}, run() -> a worker's result) in `rounds` interleaved rounds:
    each round runs every job once, in order, but a job whose result was {"error": ...} (printed as `FAILED
    <label>: <error>`) is not run again; after each round prints `round i/N done (<s> s)`, the seconds since
    `begin` (a time.perf_counter()). Returns ({key: its results, one per round}, {key: its error}, `versions`
    (a dict, new if None) with {kind: the "versions" of its latest result} added)."""
    results, failures = {key: [] for key in jobs}, {}
    versions = {} if versions is None else versions
    for round_index in range(rounds):
        for key, (label, kind, run) in jobs.items():
            if key in failures:
                continue
            result = run()
            if "error" in result:
                failures[key] = result["error"]
                print(f"FAILED {label}: {result['error']}", flush=True)
                continue
            results[key].append(result)
            versions[kind] = result["versions"]
        print(f"round {round_index + 1}/{rounds} done ({time.perf_counter() - begin:.0f} s)", flush=True)
    return results, failures, versions


# ---------------------------------------------------------------------------------------------- the section

def heading(script, *notes):
    """`## <script> (<note>)... — <today>`, the section's heading; empty notes are left out."""
    return f"## {script}" + "".join(f" ({note})" for note in notes if note) + \
        f" — {datetime.date.today().isoformat()}"


def command_line(script):
    """`python bench/<script> <this process's arguments>`, as given."""
    return " ".join([f"python bench/{script}", *sys.argv[1:]])


def shown_command(argv, script):
    """The command line of `script` with absolute paths replaced by placeholders (--work_dir=$WORK_DIR, ...)."""
    shown = []
    for arg in argv:
        match = re.match(r"^--(\w+)=(.*)$", arg)
        if match and os.path.isabs(match.group(2)):
            arg = f"--{match.group(1)}=${match.group(1).upper()}"
        shown.append(arg)
    return " ".join([f"python {script}", *shown])


def git_commit():
    """The short commit of the repository and whether the working tree has changes."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return f"{commit}" + (" with uncommitted changes in the working tree" if dirty else " (clean working tree)")


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or "unknown CPU"


def add_run_flags(parser, work_dir_holds, dry_run_does):
    """--note, --work_dir, --results_file, --timeout and --dry_run, as bench_serving.py and bench_embeddings.py
    take them (`outputs` reads them)."""
    parser.add_argument("--note", default="", help="Added to the section heading.")
    parser.add_argument("--work_dir", default=None, help=f"{work_dir_holds} (default: a temporary directory, "
                        "deleted at the end).")
    parser.add_argument("--results_file", default=None, help="Markdown file to append to (default "
                        "bench/RESULTS.md; --dry_run: none).")
    parser.add_argument("--timeout", type=int, default=3600, help="Seconds per process.")
    parser.add_argument("--dry_run", action="store_true", help=f"{dry_run_does}: checks the harness, measures "
                        "nothing.")


def outputs(args, prefix):
    """(the results file or None, the work directory, its tempfile.TemporaryDirectory to clean up at the end or
    None) of add_run_flags's flags: --dry_run appends nothing unless --results_file says where."""
    from bench.results import RESULTS_FILE
    results_file = args.results_file or (None if args.dry_run else RESULTS_FILE)
    temporary = None if args.work_dir else tempfile.TemporaryDirectory(prefix=prefix)
    work_dir = os.path.abspath(args.work_dir or temporary.name)
    os.makedirs(work_dir, exist_ok=True)
    return results_file, work_dir, temporary


def main():
    parse_args(argparse.ArgumentParser(description="The matmul peak worker of matmul_peaks."), peak_worker)
    sys.exit("bench/harness.py runs only as the worker of matmul_peaks (--worker=<spec file>)")


if __name__ == "__main__":
    main()
