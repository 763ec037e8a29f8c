"""One fine-tuning run (train, then predict) of a task model on any tf.distribute strategy.

What run_classifier.py, run_ner.py and run_swag.py share: the original's step count (examples / batch size
x epochs, warmup a fraction of it), the shared training loop (`bert_tf.training.loop.Trainer`: checkpoints
in output_dir, resume), and predictions gathered on the host so that any metric can be computed from them.

    tuner = FineTuner(strategy, lambda: BertClassifier(config, 2), FineTuningOptions(), output_dir)
    tuner.load(init_checkpoint)
    tuner.train(train_features)
    logits = tuner.predict(dev_features)
"""

import dataclasses
import os
import re

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints import load_checkpoint
from bert_tf.data.finetuning_pipeline import make_dataset, num_examples
from bert_tf.training import loop, optimization


@dataclasses.dataclass
class FineTuningOptions:
    """The training hyper-parameters of the original fine-tuning scripts (their defaults) and the new ones.

    train_batch_size: examples per optimizer step over all replicas and accumulation steps.
    num_train_epochs, warmup_proportion: steps = int(examples / train_batch_size * epochs), the first
      int(steps * warmup_proportion) of them with a linear warmup (the original's arithmetic).
    save_checkpoints_steps, iterations_per_loop: as the original (checkpoint / log / steps per call).
    optimizer: a name of `optimization.OPTIMIZERS`; loss_scaling: for float16 mixed precision.
    num_accumulation_steps, use_xla: see `loop.Trainer`. seed: the input order.
    """
    train_batch_size: int = 32
    learning_rate: float = 5e-5
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    optimizer: str = "adam_weight_decay"
    loss_scaling: bool = False
    num_accumulation_steps: int = 1
    use_xla: bool = False
    seed: int = None

    def train_steps(self, count):
        """(num_train_steps, num_warmup_steps) for `count` training examples."""
        steps = int(count / self.train_batch_size * self.num_train_epochs)
        if steps < 1:
            raise ValueError(f"{count} training examples at train_batch_size={self.train_batch_size} for "
                             f"num_train_epochs={self.num_train_epochs} make no training step")
        return steps, int(steps * self.warmup_proportion)


class FineTuner:
    """A task model (`model_fn()`, a BertTaskModel, built under the strategy's scope) and how to train it.

    Attributes: model, strategy, options, output_dir, global_step (steps trained, or read from the
    checkpoint that `load` loaded).
    """

    def __init__(self, strategy, model_fn, options, output_dir):
        self.strategy, self.options, self.output_dir = strategy, options, output_dir
        with strategy.scope():
            self.model = model_fn()
            self.model.build()
        self.global_step = 0
        self._forward = None

    def load(self, checkpoint):
        """Loads pretrained or fine-tuned weights (any `--init_checkpoint` format); a fresh head is reported."""
        report = load_checkpoint(self.model, checkpoint)
        match = re.search(r"model\.ckpt-(\d+)$", checkpoint)
        self.global_step = int(match.group(1)) if match else 0
        return report

    def train(self, features):
        """Trains on `features` (dict of NumPy arrays with `label_ids`) for the options' epochs, resuming
        from output_dir if a previous run of the same command was interrupted. Returns the last metrics."""
        options = self.options
        count = num_examples(features)
        num_train_steps, num_warmup_steps = options.train_steps(count)
        with self.strategy.scope():
            optimizer = optimization.create_optimizer(
                options.optimizer, options.learning_rate, num_train_steps, num_warmup_steps,
                self.model.trainable_variables, loss_scaling=options.loss_scaling)
        trainer = loop.Trainer(self.strategy, self.model, optimizer, options.train_batch_size,
                               options.num_accumulation_steps, use_xla=options.use_xla)
        logging.info("***** Running training: %d examples, batch size %d, %d steps (%d warmup) *****", count,
                     options.train_batch_size, num_train_steps, num_warmup_steps)

        def dataset_fn(input_context, batch_size):
            return make_dataset(features, batch_size, True, options.seed, input_context)

        results = trainer.train(dataset_fn, self.output_dir, num_train_steps, options.iterations_per_loop,
                                options.save_checkpoints_steps)
        self.global_step = trainer.step
        return results

    def predict(self, features, batch_size):
        """The model's outputs (float32 NumPy [N, ...]) for every example of `features`, in order, computed
        on this host in batches of `batch_size` (compiled with XLA when the options say so)."""
        if self._forward is None:
            self._forward = tf.function(lambda batch: self.model(batch, training=False),
                                        jit_compile=self.options.use_xla)
        outputs = [self._forward(batch).numpy() for batch in make_dataset(features, batch_size, training=False)]
        return np.concatenate(outputs)


def log_softmax(logits):
    """logits float [..., C] -> float64 log-probabilities [..., C]."""
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def softmax_cross_entropy(logits, labels):
    """logits float [N, C], labels int [N] -> cross-entropy float64 [N]."""
    return -np.take_along_axis(log_softmax(logits), np.asarray(labels)[:, None], axis=-1)[:, 0]


LABELS_FILE = "labels.txt"


def write_labels(output_dir, labels):
    """Writes `output_dir/labels.txt`: the label names in label-id order, one per line (what export_model.py
    needs to serve label strings). Written under a temporary name and renamed."""
    for label in labels:
        if not label or "\n" in label or label != label.strip():
            raise ValueError(f"label {label!r}: labels must be non-empty, one line, without surrounding spaces")
    path = os.path.join(output_dir, LABELS_FILE)
    with open(path + ".incomplete", "w", encoding="utf-8") as f:
        f.writelines(label + "\n" for label in labels)
    os.replace(path + ".incomplete", path)


def read_labels(output_dir):
    """The labels `write_labels` wrote in `output_dir`, or None when it has no labels.txt."""
    path = os.path.join(output_dir, LABELS_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]
