"""The Markdown tables of tools/reproduce_paper.sh: Tables 5, 6 and 7 of Devlin et al. 2019 at small scale, and
the Chinese whole-word masking table (Cui et al. 2019), from the results its runs wrote under OUTPUT_DIR (rows
whose runs are missing are left out).

    python tools/paper_tables.py OUTPUT_DIR

Each cell is the mean over the fine-tuning seeds and, after ±, their sample standard deviation, with the
number of seeds in brackets. F1 and accuracy are in percent, perplexity as is.
"""

import collections
import csv
import glob
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_tf.data.pretraining.sentences import CJK_SENTENCE_ENDS, sentence_spans
from bert_tf.evaluation import cmrc

FEATURE_ROWS = [("fine_tuning", "Fine-tuning (all layers)"), ("embeddings", "Embeddings"),
                ("second_to_last", "Second-to-last hidden"), ("last", "Last hidden"),
                ("weighted_sum_last_four", "Weighted sum of the last four hidden"),
                ("concat_last_four", "Concat of the last four hidden"),
                ("weighted_sum_all", "Weighted sum of all 6 layers and the embeddings")]
OBJECTIVE_ROWS = [("mlm_nsp", "BERT-Mini (MLM + NSP)"), ("mlm", "No NSP (MLM only)"), ("ltr", "LTR & No NSP"),
                  ("ltr_bilstm", "+ BiLSTM")]
SIZE_ROWS = [("tiny", "BERT-Tiny (L=2, H=128, A=2)"), ("mini", "BERT-Mini (L=4, H=256, A=4)"),
             ("small", "BERT-Small (L=4, H=512, A=8)")]


def read_results(directory):
    """{key: float} of eval_results.txt (`key = value` lines) or eval_results.json in `directory`, or None."""
    text_file, json_file = os.path.join(directory, "eval_results.txt"), os.path.join(directory, "eval_results.json")
    if os.path.exists(text_file):
        with open(text_file, encoding="utf-8") as f:
            return {key: float(value) for key, value in (line.strip().split(" = ") for line in f if " = " in line)}
    if os.path.exists(json_file):
        with open(json_file, encoding="utf-8") as f:
            return {key: float(value) for key, value in json.load(f).items() if isinstance(value, (int, float))}
    return None


def seed_values(directory, key, scale=1.0):
    """[value of `key` in each seed*/ run of `directory`], in seed order."""
    values = []
    for run in sorted(glob.glob(os.path.join(directory, "seed*"))):
        results = read_results(run)
        if results is not None and key in results:
            values.append(results[key] * scale)
    return values


def cell(values, digits=1):
    """"mean ± std (n)" of `values`; "value (1)" for one value (no spread to give); "–" when there are none."""
    if not values:
        return "–"
    if len(values) == 1:
        return f"{values[0]:.{digits}f} (1)"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f} ({len(values)})"


def perplexity(pretraining_dir):
    """The held-out perplexity run_pretraining.py wrote (masked LM, or next-token for ltr), or None."""
    results = read_results(pretraining_dir) or {}
    value = results.get("masked_lm_perplexity", results.get("lm_perplexity"))
    return None if value is None or math.isnan(value) else value


def table7(out):
    rows = [(name, seed_values(os.path.join(out, "table7", key), "eval_f1", 100)) for key, name in FEATURE_ROWS]
    lines = ["| System (MiniLM-L6, WNUT-16 dev) | entity F1 |", "| --- | --- |"]
    return lines + [f"| {name} | {cell(values)} |" for name, values in rows if values]


def table5(out):
    lines = ["| Tasks | held-out LM perplexity | sentiment accuracy | cloze SQuAD F1 | cloze SQuAD EM |",
             "| --- | --- | --- | --- | --- |"]
    for key, name in OBJECTIVE_ROWS:
        directory = os.path.join(out, "table5", key)
        pretraining = os.path.join(out, "table5", key.replace("_bilstm", ""), "pretraining")
        accuracy = seed_values(os.path.join(directory, "sentiment"), "eval_accuracy", 100)
        f1 = seed_values(os.path.join(directory, "squad"), "f1")
        exact = seed_values(os.path.join(directory, "squad"), "exact_match")
        if accuracy or f1:
            value = perplexity(pretraining)
            lines.append(f"| {name} | {'–' if value is None else f'{value:.1f}'} | {cell(accuracy)} | {cell(f1)} | "
                         f"{cell(exact)} |")
    return lines


def table6(out):
    lines = ["| Model | held-out masked LM perplexity | sentiment accuracy |", "| --- | --- | --- |"]
    for key, name in SIZE_ROWS:
        directory = os.path.join(out, "table6", key)
        if key == "mini" and not os.path.isdir(directory):
            directory = os.path.join(out, "table5", "mlm_nsp")  # the same model
        accuracy = seed_values(os.path.join(directory, "sentiment"), "eval_accuracy", 100)
        value = perplexity(os.path.join(directory, "pretraining"))
        if accuracy or value is not None:
            lines.append(f"| {name} | {'–' if value is None else f'{value:.1f}'} | {cell(accuracy)} |")
    return lines


WWM_ROWS = [("char", "Character masking (BERT's Chinese data)"), ("wwm", "Whole-word masking (jieba's words)")]
WWM_COLUMNS = [("sentiment", "eval_accuracy", 100), ("entities", "eval_f1", 100), ("segmentation", "eval_f1", 100),
               ("pos", "eval_accuracy", 100), ("cloze", "F1", 1), ("cloze", "EM", 1)]


def first_sentence(context):
    """The context up to its first 。！？ (closing quotes not kept with it); all of it without one."""
    spans = sentence_spans(context, CJK_SENTENCE_ENDS, closers=())
    return context[:spans[0][1]] if spans else context


def chinese_baselines(out):
    """The baselines' cells of table wwm, in WWM_COLUMNS order (None where there is none): the training
    majority label's share of the sentiment dev set, tools/tagging_baselines.py's dictionary baselines, and the
    context's first sentence as the answer of every cloze question (CMRC 2018 F1 and EM)."""
    data = os.path.join(out, "data", "chinese")
    cells = [None] * len(WWM_COLUMNS)
    sentiment = os.path.join(data, "finetuning", "sentiment")
    if os.path.exists(os.path.join(sentiment, "dev.tsv")):
        def labels(name):
            with open(os.path.join(sentiment, name), encoding="utf-8") as f:
                return [row["label"] for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
        majority = collections.Counter(labels("train.tsv")).most_common(1)[0][0]
        dev = labels("dev.tsv")
        cells[0] = 100 * dev.count(majority) / len(dev)
    baselines = os.path.join(out, "tablewwm", "baselines.json")
    if os.path.exists(baselines):
        with open(baselines, encoding="utf-8") as f:
            values = json.load(f)
        cells[1:4] = [100 * values["entities"]["eval_f1"], 100 * values["segmentation"]["eval_f1"],
                      100 * values["pos"]["eval_accuracy"]]
    cloze = os.path.join(data, "cloze", "dev-v1.1.json")
    if os.path.exists(cloze):
        with open(cloze, encoding="utf-8") as f:
            dataset = json.load(f)["data"]
        first = {qa["id"]: first_sentence(paragraph["context"])
                 for article in dataset for paragraph in article["paragraphs"] for qa in paragraph["qas"]}
        results = cmrc.evaluate(dataset, first)
        cells[4:6] = [results["F1"], results["EM"]]
    return cells


def tablewwm(out):
    lines = ["| Pretraining | held-out masked LM accuracy | sentiment accuracy | NER F1 | segmentation F1 | "
             "POS accuracy | cloze F1 (CMRC) | cloze EM (CMRC) |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    baseline = chinese_baselines(out)
    if any(value is not None for value in baseline):
        lines.append("| No pretrained model: majority / dictionary / first sentence | – | "
                     + " | ".join("–" if value is None else f"{value:.1f}" for value in baseline) + " |")
    for key, name in WWM_ROWS:
        directory = os.path.join(out, "tablewwm", key)
        cells = [cell(seed_values(os.path.join(directory, task), metric, scale)) for task, metric, scale in WWM_COLUMNS]
        accuracy = (read_results(os.path.join(directory, "pretraining")) or {}).get("masked_lm_accuracy")
        if accuracy is not None or any(c != "–" for c in cells):
            lines.append(f"| {name} | {'–' if accuracy is None else f'{100 * accuracy:.1f}'} | " + " | ".join(cells)
                         + " |")
    return lines


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        sys.exit("usage: python tools/paper_tables.py OUTPUT_DIR (the directory tools/reproduce_paper.sh wrote)")
    for title, lines in (("Table 7 (feature-based NER)", table7(argv[1])),
                         ("Table 5 (pretraining tasks)", table5(argv[1])),
                         ("Table 6 (model size)", table6(argv[1])),
                         ("Chinese: whole-word vs character masking", tablewwm(argv[1]))):
        if len(lines) > 2:
            print(f"### {title}\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv)
