"""bench/bench_finetune.py without running a job: its dry run (every job and implementation's command, nothing
written, no peer venv), one error line per bad flag, and the helpers behind its numbers (the bert_tf log's
timings, the subsets, the metrics computed by the same code for every implementation). No timing is asserted."""

import hashlib
import json
import os
import subprocess
import sys

import pytest

from bench import bench_finetune
from bench.results import RESULTS_FILE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "bench", "bench_finetune.py")


def run(*flags):
    return subprocess.run([sys.executable, SCRIPT, *flags], capture_output=True, text=True, timeout=60, cwd=ROOT)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.mark.subprocess
def test_dry_run_prints_every_command_and_writes_nothing(tmp_path):
    before = digest(RESULTS_FILE)
    work = tmp_path / "work"
    result = run("--dry_run", f"--work_dir={work}", "--train_limit=64", "--dev_limit=32")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert not work.exists() and digest(RESULTS_FILE) == before
    for tool in ("tools/make_finetuning_data.py sentiment", "tools/make_finetuning_data.py ner",
                 "-m tools.make_cloze_squad", "--output_format=keras_hub"):
        assert tool in out
    blocks = {}
    for block in out.split("\n## ")[1:]:
        heading, _, body = block.partition("\n")
        blocks[heading] = body
    for job, spec in bench_finetune.JOBS.items():
        for library, grouped, label in bench_finetune.IMPLEMENTATIONS.values():
            if library == "keras_hub" and job != "rt":
                assert any(h.startswith(f"{job} | {label}: not run: KerasHub has no") for h in blocks), out
                continue
            for precision in ("float32", "bfloat16"):
                command = blocks[f"{job} | {label} | {precision}"]
                if library == "bert_tf":
                    assert command.startswith(f"python {spec['command']} "), command
                    assert f"--mixed_precision={precision}" in command
                    assert ("--group_by_length" in command) == grouped
                    assert f"--max_seq_length={spec['hparams']['max_seq_length']}" in command
                    assert f"{bench_finetune.Work(str(work), 64, 32).data(job)}" in command
                else:
                    assert "bench/finetune_peers.py --worker" in command
                    peer = json.loads(command.split("# spec: ", 1)[1])
                    assert (peer["implementation"], peer["job"], peer["precision"], peer["group_by_length"]) == (
                        library, job, precision, grouped)
                    assert peer["hparams"] == {**spec["hparams"], **spec.get("own_hparams", {}).get(library, {}),
                                               "seed": 1}
                    if job == "squad" and library == "hf":  # run_qa.py's README command and TrainingArguments
                        assert (peer["hparams"]["batch_size"], peer["hparams"]["learning_rate"],
                                peer["hparams"]["epochs"], peer["hparams"]["warmup_proportion"]) == (12, 3e-5, 2, 0)


@pytest.mark.subprocess
@pytest.mark.parametrize("flag, message", [
    ("--jobs=rt,glue", "--jobs: unknown 'glue'; choose from rt, ner, squad"),
    ("--implementations=torch", "--implementations: unknown 'torch'"),
    ("--precisions=float16", "--precisions: unknown 'float16'"),
    ("--jobs=", "--jobs is empty"),
    ("--seeds=1,x", "--seeds=1,x: expected a comma list of integers"),
    ("--seeds=", "--seeds is empty"),
    ("--train_limit=-5", "--train_limit=-5: it must be zero or more"),
    ("--bogus", "unrecognized arguments: --bogus"),
])
def test_a_bad_flag_is_one_error_line(flag, message):
    result = run(flag, "--dry_run")
    assert result.returncode == 2 and not result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench_finetune.py: error: ") and message in lines[0], lines


def test_bert_tf_timings_come_from_its_log():
    log = "\n".join([
        "I1205 16:42:14.685150 140 distribute.py:50] Strategy one_device",
        "I1205 16:42:15.942436 140 finetuning.py:120] ***** Running training: 64 examples, batch size 32, 2 steps "
        "(0 warmup) *****",
        "I1205 16:42:20.000000 140 loop.py:424] step 1/2 | loss 0.7",
        "I1205 16:42:34.350924 140 loop.py:424] step 2/2 | loss 0.6876 | lr 0 | 3.5 examples/s",
        "I1205 16:42:37.246779 140 progress.py:173] training  2/2 steps  100%",
    ])
    start, end, sequences = bench_finetune.bert_tf_timings(log, 2026)
    assert sequences == 64 and end - start == pytest.approx(18.408488, abs=1e-6)
    with pytest.raises(ValueError, match="Running training"):
        bench_finetune.bert_tf_timings("I1205 16:42:14.685150 140 x.py:1] nothing", 2026)


def write_conll(path, sentences):
    path.write_text("\n\n".join("\n".join(f"{w} {t}" for w, t in s) for s in sentences) + "\n", encoding="utf-8")


def test_subsets_are_evenly_spaced_and_keep_only_dev_tags_the_training_subset_has(tmp_path):
    assert bench_finetune.evenly_spaced(list(range(10)), 4) == [0, 2, 5, 7]
    assert bench_finetune.evenly_spaced([1, 2], 0) == [1, 2] == bench_finetune.evenly_spaced([1, 2], 5)
    full = tmp_path / "full"
    full.mkdir()
    (full / "train.tsv").write_text("sentence\tlabel\n" + "".join(f"s{i}\t{i % 2}\n" for i in range(10)))
    (full / "dev.tsv").write_text("sentence\tlabel\n" + "".join(f"d{i}\t{i % 2}\n" for i in range(6)))
    bench_finetune.make_subset("rt", str(full), str(tmp_path / "rt"), 5, 3)
    assert bench_finetune.data_counts("rt", str(tmp_path / "rt")) == (5, 3)
    assert (tmp_path / "rt" / "train.tsv").read_text().splitlines()[1:3] == ["s0\t0", "s2\t0"]
    write_conll(full / "train.txt", [[("a", "B-x")], [("b", "O")], [("c", "B-y")], [("d", "O")]])
    write_conll(full / "dev.txt", [[("e", "B-x")], [("f", "B-y")], [("g", "O"), ("h", "I-x")]])
    bench_finetune.make_subset("ner", str(full), str(tmp_path / "ner"), 2, 0)  # train: a (B-x), c (B-y)
    dev = bench_finetune.conll_blocks(str(tmp_path / "ner" / "dev.txt"))
    assert dev == ["e B-x", "f B-y"]  # I-x is not a tag of the training subset


def test_metrics_of_bert_tf_and_a_peer_are_computed_by_the_same_code(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_conll(data / "dev.txt", [[("Paris", "B-loc"), ("is", "O")], [("Bob", "B-per"), ("Li", "I-per")]])
    work = bench_finetune.Work(str(tmp_path), 0, 0)
    work.data = lambda job: str(data)
    ours, peer = tmp_path / "ours", tmp_path / "peer"
    ours.mkdir()
    peer.mkdir()
    (ours / "eval_predictions.txt").write_text("Paris B-loc B-loc\nis O O\n\nBob B-per B-per\nLi I-per O\n")
    (peer / "predictions.json").write_text(json.dumps([["B-loc", "O"], ["B-per", "O"]]))
    scores = [bench_finetune.metric_of("ner", work, str(d), lib) for d, lib in ((ours, "bert_tf"), (peer, "hf"))]
    assert scores[0] == scores[1] and scores[0]["f1"] == pytest.approx(0.5)  # Paris right, Bob cut short
    squad = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "a b c", "qas": [
        {"id": "q1", "question": "?", "answers": [{"text": "b c", "answer_start": 2}]}]}]}]}
    (data / "dev-v1.1.json").write_text(json.dumps(squad))
    (peer / "predictions.json").write_text(json.dumps({"q1": "b"}))
    assert bench_finetune.metric_of("squad", work, str(peer), "hf") == pytest.approx(
        {"exact_match": 0.0, "f1": 100 * 2 / 3})


def result(wall, accuracies):
    return [{"wall": wall, "startup": 5.0, "train": wall - 20, "sequences": 10000, "metric": {"accuracy": accuracy},
             "load": (1.0, 1.0)} for accuracy in accuracies]


def test_the_summary_compares_the_fastest_cases_at_equal_accuracy():
    """One seed: a faster case whose dev metric is more than 0.5 point below the job's best does not count as its
    library's fastest (HF's bfloat16 Trainer that learned nothing must not set the bar)."""
    import argparse

    results = {("rt", "bert_tf", "bfloat16"): result(130.0, [0.831]),
               ("rt", "bert_tf", "float32"): result(200.0, [0.829]),
               ("rt", "hf", "bfloat16"): result(110.0, [0.514]), ("rt", "hf", "float32"): result(195.0, [0.828])}
    args = argparse.Namespace(jobs=["rt"], implementations=["bert_tf", "hf"], precisions=["float32", "bfloat16"])
    rows = bench_finetune.report_rows(list(results), {}, results, {}, args)
    summary = rows[-1]
    assert "130.0 s (bert_tf, bfloat16; 83.10)" in summary and "195.0 s (HF Trainer, float32; 82.80)" in summary
    assert summary.endswith(f"| {195.0 / 130.0:.2f}x |")


def test_equal_accuracy_over_seeds_is_the_best_mean_minus_its_spread():
    """Seeds: a case is at equal accuracy when its mean is at least the most accurate case's mean minus that case's
    sample standard deviation; the table shows mean ± spread and each seed's value."""
    import argparse

    best = [0.840, 0.850, 0.860]  # mean 0.85, standard deviation 0.01: the bar is 84.0 points
    results = {("rt", "bert_tf", "bfloat16"): result(100.0, [0.838, 0.843, 0.848]),  # mean 84.3: equal
               ("rt", "bert_tf", "float32"): result(150.0, best),
               ("rt", "hf", "bfloat16"): result(90.0, [0.830, 0.835, 0.840]),  # mean 83.5: less accurate
               ("rt", "hf", "float32"): result(120.0, [0.845, 0.850, 0.855])}
    args = argparse.Namespace(jobs=["rt"], implementations=["bert_tf", "hf"], precisions=["float32", "bfloat16"])
    rows = bench_finetune.report_rows(list(results), {}, results, {}, args)
    assert "| 85.00 ± 1.00 (0.8400 ; 0.8500 ; 0.8600) |" in rows[2]
    summary = rows[-1]
    assert "100.0 s (bert_tf, bfloat16; 84.30 ± 0.50)" in summary and "120.0 s (HF Trainer, float32;" in summary
    assert summary.endswith(f"| {120.0 / 100.0:.2f}x |")
