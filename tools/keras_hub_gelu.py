"""What KerasHub's tanh GELU does to a model trained with the exact (erf) GELU: a fine-tuned classifier's dev
accuracy and predictions, and its encoder's outputs, computed by bert_tf with hidden_act "gelu" (what the model
was trained with) and "gelu_tanh" (what KerasHub's BertBackbone computes: tests/test_interop.py checks that
bert_tf's gelu_tanh gives KerasHub's own outputs within 1e-5).

    python tools/keras_hub_gelu.py --classifier_dir=/tmp/sentiment_output --vocab_file=$MINILM/vocab.txt \
      --dev_file=/tmp/sentiment/dev.tsv --max_seq_length=64

(the classifier and dev file as in tools/export_accuracy.py). Prints the accuracy of each form, the share of
dev predictions that agree, the largest |probability difference|, and over the real positions of the dev
sentences the largest |sequence output difference| and the smallest pooled-output cosine.
"""

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bert_tf import BertConfig, FullTokenizer, model_types  # noqa: E402
from bert_tf.checkpoints import (  # noqa: E402
    config_of,  # noqa: E402
    load_checkpoint,
    open_checkpoint,
)
from bert_tf.modeling.tasks.classifier import BertClassifier  # noqa: E402
from tools.export_accuracy import read_dev  # noqa: E402


def encode(tokenizer, sentences, length):
    """input_ids / input_mask / segment_ids int32 [N, length] of single sentences."""
    ids = np.zeros((len(sentences), length), np.int32)
    for i, sentence in enumerate(sentences):
        row = tokenizer.convert_tokens_to_ids(["[CLS]"] + tokenizer.tokenize(sentence)[: length - 2] + ["[SEP]"])
        ids[i, :len(row)] = row
    return {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32), "segment_ids": np.zeros_like(ids)}


def run(model, features, batch=256):
    """(probabilities [N, C], sequence output [N, T, H], pooled output [N, H]) of the classifier `model`."""
    probabilities, sequences, pooled = [], [], []
    for start in range(0, len(features["input_ids"]), batch):
        part = {k: v[start:start + batch] for k, v in features.items()}
        encoded = model.encoder(part)
        logits = np.asarray(model(part))
        probabilities.append(np.exp(logits) / np.exp(logits).sum(-1, keepdims=True))
        sequences.append(np.asarray(encoded["sequence_output"]))
        pooled.append(np.asarray(encoded["pooled_output"]))
    return np.concatenate(probabilities), np.concatenate(sequences), np.concatenate(pooled)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classifier_dir", required=True)
    parser.add_argument("--vocab_file", required=True)
    parser.add_argument("--dev_file", required=True)
    parser.add_argument("--max_seq_length", type=int, default=64)
    args = parser.parse_args()
    sentences, labels = read_dev(args.dev_file)
    features = encode(FullTokenizer(args.vocab_file, do_lower_case=True), sentences, args.max_seq_length)
    config = config_of(args.classifier_dir)
    num_labels, results = model_types.get(model_types.CLASSIFIER).head_size(open_checkpoint(args.classifier_dir)), {}
    for act in ("gelu", "gelu_tanh"):
        model = BertClassifier(BertConfig(**{**config.to_dict(), "hidden_act": act}), num_labels)
        load_checkpoint(model, args.classifier_dir)
        results[act] = run(model, features)
        print(f"{act}: dev accuracy {100 * np.mean(results[act][0].argmax(-1) == labels):.2f}% "
              f"({len(labels)} sentences)")
    (p_exact, s_exact, c_exact), (p_tanh, s_tanh, c_tanh) = results["gelu"], results["gelu_tanh"]
    real = features["input_mask"].astype(bool)
    cosine = (c_exact * c_tanh).sum(-1) / np.linalg.norm(c_exact, axis=-1) / np.linalg.norm(c_tanh, axis=-1)
    print(f"predictions that agree: {100 * np.mean(p_exact.argmax(-1) == p_tanh.argmax(-1)):.2f}%; "
          f"largest |probability difference| {np.abs(p_exact - p_tanh).max():.2e}; "
          f"largest |sequence output difference| {np.abs(s_exact - s_tanh)[real].max():.2e}; "
          f"smallest pooled-output cosine {cosine.min():.6f}")


if __name__ == "__main__":
    main()
