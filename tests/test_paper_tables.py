"""tools/paper_tables.py: the reproduction's tables from the result files the runs write (eval_results.txt of
run_ner.py / run_classifier.py / run_pretraining.py, eval_results.json of run_squad.py); tools/reproduce_paper.sh
refuses an unknown table before doing any work."""

import json
import os
import statistics
import subprocess
import sys

from tools import paper_tables

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_results(directory, results):
    directory.mkdir(parents=True)
    (directory / "eval_results.txt").write_text("".join(f"{k} = {v}\n" for k, v in results.items()))


def test_tables_give_mean_spread_and_count_over_seeds(tmp_path):
    for seed, f1 in zip((1, 2, 3), (0.40, 0.44, 0.39)):
        write_results(tmp_path / "table7" / "fine_tuning" / f"seed{seed}", {"eval_f1": f1, "global_step": 300})
    write_results(tmp_path / "table7" / "last" / "seed1", {"eval_f1": 0.2})
    write_results(tmp_path / "table5" / "ltr" / "pretraining", {"lm_perplexity": 123.456})
    write_results(tmp_path / "table5" / "ltr" / "sentiment" / "seed1", {"eval_accuracy": 0.7})
    write_results(tmp_path / "table5" / "ltr" / "sentiment" / "seed2", {"eval_accuracy": 0.8})
    squad = tmp_path / "table5" / "ltr_bilstm" / "squad" / "seed1"
    squad.mkdir(parents=True)
    (squad / "eval_results.json").write_text(json.dumps({"exact_match": 30.0, "f1": 35.5}))
    seven, five = paper_tables.table7(str(tmp_path)), paper_tables.table5(str(tmp_path))
    spread = statistics.stdev([40.0, 44.0, 39.0])
    assert seven[2] == f"| Fine-tuning (all layers) | 41.0 ± {spread:.1f} (3) |"
    assert seven[3:] == ["| Last hidden | 20.0 (1) |"]  # rows without runs are left out
    assert five[2] == f"| LTR & No NSP | 123.5 | 75.0 ± {statistics.stdev([70.0, 80.0]):.1f} (2) | – | – |"
    assert five[3] == "| + BiLSTM | 123.5 | – | 35.5 (1) | 30.0 (1) |"  # the ltr model's perplexity


def test_unknown_table_is_refused_before_any_work(tmp_path):
    done = subprocess.run(["bash", os.path.join(ROOT, "tools", "reproduce_paper.sh"), str(tmp_path / "out"), "8"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "Error: table 8: expected 5, 6, 7 or wwm" in done.stderr
    assert not (tmp_path / "out").exists()
    size = subprocess.run(["bash", os.path.join(ROOT, "tools", "reproduce_paper.sh"), str(tmp_path / "out"), "6"],
                          capture_output=True, text=True, env={**os.environ, "TABLE6_SIZES": "small huge"})
    assert size.returncode == 2 and "Error: TABLE6_SIZES: size huge: expected tiny, mini or small" in size.stderr
    assert not (tmp_path / "out").exists()
    usage = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "paper_tables.py")], capture_output=True,
                           text=True)
    assert usage.returncode == 1 and "usage: python tools/paper_tables.py OUTPUT_DIR" in usage.stderr


def test_the_chinese_table_has_the_baselines_and_each_masking(tmp_path):
    data = tmp_path / "data" / "chinese"
    sentiment = data / "finetuning" / "sentiment"
    sentiment.mkdir(parents=True)
    (sentiment / "train.tsv").write_text("label\ttext_a\n1\t好\n1\t很好\n0\t差\n", encoding="utf-8")
    (sentiment / "dev.tsv").write_text("label\ttext_a\n1\t好\n0\t差\n0\t很差\n0\t太差\n", encoding="utf-8")
    (data / "cloze").mkdir()
    qas = [{"id": "a", "question": "_____。丙丁。", "answers": [{"text": "甲乙", "answer_start": 0}]},
           {"id": "b", "question": "甲乙。_____。", "answers": [{"text": "丙丁", "answer_start": 3}]}]
    (data / "cloze" / "dev-v1.1.json").write_text(json.dumps(
        {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "甲乙。丙丁。", "qas": qas}]}]}))
    (tmp_path / "tablewwm").mkdir()
    (tmp_path / "tablewwm" / "baselines.json").write_text(json.dumps(
        {"entities": {"eval_f1": 0.5}, "segmentation": {"eval_f1": 0.9}, "pos": {"eval_accuracy": 0.875}}))
    write_results(tmp_path / "tablewwm" / "wwm" / "pretraining", {"masked_lm_accuracy": 0.25})
    for seed, accuracy in zip((1, 2, 3), (0.8, 0.9, 0.7)):
        write_results(tmp_path / "tablewwm" / "wwm" / "segmentation" / f"seed{seed}", {"eval_f1": accuracy})
    lines = paper_tables.tablewwm(str(tmp_path))
    # Majority "1" of training is 1 of 4 dev labels; the first sentence "甲乙。" is one answer exactly and
    # shares no character with the other (CMRC 2018 ignores the 。).
    assert lines[2] == ("| No pretrained model: majority / dictionary / first sentence | – | 25.0 | 50.0 | 90.0 | "
                        "87.5 | 50.0 | 50.0 |")
    spread = statistics.stdev([80, 90, 70])
    assert lines[3:] == [f"| Whole-word masking (jieba's words) | 25.0 | – | – | 80.0 ± {spread:.1f} (3) | – | – | – |"]
