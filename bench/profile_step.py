"""Where the time of one bert_tf step goes: TensorFlow's profiler over a few calls, summed by op type.

    python bench/profile_step.py [--config=base] [--task=inference|train] [--batch_size=8] [--seq_length=128]
        [--dtype=bfloat16] [--steps=3] [--top=15] [--note="..."] [--results_file=bench/RESULTS.md]
    python bench/profile_step.py --job="run_classifier.py --do_train ..." [--start_step=30] [--steps=20] ...

The step is bench_models.py's own (`bench_models.bert_tf_step`: the encoder's forward pass for `inference`,
the real `Trainer` pretraining step, MLM + NSP with AdamW, for `train`; XLA off, the CPU default), on its
random inputs. After 2 untimed calls it times `--steps` calls without the profiler (the wall-clock ms per
step), then runs `--steps` more under `tf.profiler.experimental` and reads the trace (`*.xplane.pb`): every
executed TensorFlow op is an event named `<node>:<op type>` on a host thread; their durations are summed
per op type and divided by `--steps`. Function-call ops (`PartitionedCall`, `StatefulPartitionedCall`) are
left out, since their time is that of the ops inside them, which are counted. With two inter-op threads
the op times of a step add up to more than its wall-clock time.

`--job`: the training steps of a real command of this repository instead (run in this process, its flags as
given; its input, shapes and precision are its own): steps 1 .. start_step - 1 run unprofiled (their wall clock
from step 10 on is the figure; a step is one `TfSteps.run` call of one step, as the loop makes on one worker),
the next `--steps` under the profiler; then the command is stopped (give it at least start_step + steps - 1
training steps).

Prints and appends (to `--results_file`; "" appends nothing) a table: per op type, ms per step, calls per
step and the share of all op time, and the matmul share (`MatMul`/`BatchMatMul` kinds, oneDNN's fused ones included).
"""

import argparse
import collections
import glob
import math
import os
import shlex
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import bench_models, harness  # noqa: E402  (after the path)
from bench.results import RESULTS_FILE, append_results  # noqa: E402

CALL_OPS = {"PartitionedCall", "StatefulPartitionedCall"}


def op_times(trace_dir):
    """{op type: total ms} and {op type: count} of the TF op events in the newest trace under trace_dir."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2
    paths = sorted(glob.glob(os.path.join(trace_dir, "plugins", "profile", "*", "*.xplane.pb")))
    if not paths:
        raise RuntimeError(f"the profiler wrote no trace under {trace_dir}")
    space = xplane_pb2.XSpace()
    with open(paths[-1], "rb") as f:
        space.ParseFromString(f.read())
    total, count = collections.Counter(), collections.Counter()
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if name.count(":") != 1 or " " in name:
                    continue  # not a TF op event (`<node>:<type>`)
                op_type = name.split(":")[1]
                if op_type in CALL_OPS or not op_type:
                    continue
                total[op_type] += event.duration_ps / 1e9
                count[op_type] += 1
    return total, count


class _Profiled(BaseException):
    """Stops a --job command once its profiled steps ran (not an Exception: the command's handlers pass it on)."""


def profile_job(job, start_step, steps, trace_dir):
    """(wall ms per unprofiled step from step 10 on, the profiled steps' count, their op times) of the command
    line `job`, run in this process until at least its step start_step + steps - 1. The loop runs a call of
    one or a few steps at a time (about a second each): the profiler starts at the first call after step
    start_step - 1 and stops after the call that reaches the last step, so a few more steps may be profiled."""
    import runpy

    import tensorflow as tf

    from bert_tf.training import tf_steps
    argv = shlex.split(job)
    run, walls, profiled = tf_steps.TfSteps.run, [], []  # walls: (steps, seconds) of each unprofiled call

    def profiled_run(self, iterator, num_steps):
        done = sum(n for n, _ in walls) + sum(profiled)
        if done >= start_step - 1 and not profiled:
            tf.profiler.experimental.start(trace_dir)
        began = time.perf_counter()
        sums = run(self, iterator, num_steps)
        if profiled or done >= start_step - 1:
            profiled.append(num_steps)
        else:
            walls.append((num_steps, time.perf_counter() - began))
        if profiled and done + num_steps >= start_step + steps - 1:
            tf.profiler.experimental.stop()
            raise _Profiled
        return sums

    tf_steps.TfSteps.run = profiled_run
    sys.argv = argv
    try:
        runpy.run_path(os.path.join(ROOT, argv[0]), run_name="__main__")
    except _Profiled:
        pass
    else:
        raise SystemExit(f"--job ran {sum(n for n, _ in walls) + sum(profiled)} training steps; it needs "
                         f"--start_step + --steps - 1 = {start_step + steps - 1}")
    finally:
        tf_steps.TfSteps.run = run
    timed, first = [], 0  # per-step seconds of the unprofiled calls from step 10 on
    for n, seconds in walls:
        first += n
        if first >= 10:
            timed += [seconds / n] * n
    return 1e3 * float(np.median(timed)), sum(profiled), op_times(trace_dir)


def is_matmul(op_type):
    return "MatMul" in op_type


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="base", help="as bench_models.py")
    parser.add_argument("--task", choices=("inference", "train"), default="inference")
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="bfloat16")
    parser.add_argument("--steps", type=int, default=3,
                        help="Timed steps, then as many profiled steps (--job: the profiled steps).")
    parser.add_argument("--job", default="",
                        help='A training command of this repository, "run_classifier.py --flag=...": its own steps.')
    parser.add_argument("--start_step", type=int, default=30, help="--job: the first profiled step (>= 11).")
    parser.add_argument("--top", type=int, default=15, help="Op types listed (the rest summed in one row).")
    parser.add_argument("--note", default="", help="Added to the section heading.")
    parser.add_argument("--results_file", default=RESULTS_FILE,
                        help='Markdown file to append to ("": print only).')
    args = parser.parse_args()
    if args.steps < 1 or args.top < 1:
        parser.error(f"--steps and --top must be >= 1 (got {args.steps}, {args.top})")
    if args.job and args.start_step < 11:
        parser.error(f"--start_step={args.start_step} must be >= 11 (steps 10 .. start_step - 1 are timed)")

    import tensorflow as tf

    load_start, command = os.getloadavg()[0], harness.command_line("profile_step.py")
    if args.job:
        job = shlex.split(args.job)
        shown_job = harness.shown_command(job[1:], job[0])  # its paths as placeholders
        command = (f'python bench/profile_step.py --job="{shown_job[len("python "):]}" --start_step={args.start_step} '
                   f'--steps={args.steps} --top={args.top}')
        with tempfile.TemporaryDirectory() as trace_dir:
            wall_ms, args.steps, (total, count) = profile_job(args.job, args.start_step, args.steps, trace_dir)
        what = (f"`{shown_job}`: {args.steps} "
                f"training steps from step {args.start_step} on profiled (wall clock: the median step from step 10 "
                f"to the profiled ones, unprofiled)")
    else:
        from bert_tf.config import BertConfig
        config, config_path = bench_models.load_config(args.config)
        case = {"task": args.task, "dtype": args.dtype, "xla": False, "batch_size": args.batch_size}
        features = bench_models.random_inputs(args.batch_size, args.seq_length, math.ceil(0.15 * args.seq_length),
                                              config["vocab_size"])
        call = bench_models.bert_tf_step(case, BertConfig.from_dict(config), features)
        wall_ms = 1e3 * float(np.median(harness.timed_calls(call, 2, args.steps)))
        with tempfile.TemporaryDirectory() as trace_dir:
            tf.profiler.experimental.start(trace_dir)
            try:
                for _ in range(args.steps):
                    call()
            finally:
                tf.profiler.experimental.stop()
            total, count = op_times(trace_dir)
        what = (f"bert_tf {args.task} step, {os.path.relpath(config_path, ROOT)}, batch {args.batch_size} x seq "
                f"{args.seq_length}, {args.dtype} (XLA off; wall clock: the median of {args.steps}, unprofiled)")
    all_ms = sum(total.values()) / args.steps
    matmul_ms = sum(ms for op, ms in total.items() if is_matmul(op)) / args.steps
    rows = total.most_common(args.top)
    rest = sum(total.values()) - sum(ms for _, ms in rows)
    table = ["| op type | ms per step | calls per step | share of op time |", "|---|---:|---:|---:|"]
    table += [f"| {op} | {ms / args.steps:.1f} | {count[op] / args.steps:.0f} | {ms / args.steps / all_ms:.1%} |"
              for op, ms in rows]
    if rest > 0:
        table.append(f"| (the other {len(total) - len(rows)} types) | {rest / args.steps:.1f} | | "
                     f"{rest / args.steps / all_ms:.1%} |")
    text = "\n".join([
        "", harness.heading("profile_step.py", args.note), "",
        f"`{command}`", "",
        f"{what}; {harness.cpu_model()}, {os.cpu_count()} CPU cores (load average {load_start:.1f} at "
        f"the start, {os.getloadavg()[0]:.1f} at the end), TF {tf.__version__}. Wall clock {wall_ms:.1f} ms per step; "
        f"op time {all_ms:.1f} ms per step, of which matmuls "
        f"{matmul_ms:.1f} ms ({matmul_ms / all_ms:.1%}).", "", *table, ""])
    if args.results_file:
        append_results(text, args.results_file)
    print(text)


if __name__ == "__main__":
    main()
