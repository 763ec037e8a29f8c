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
import glob
import os
import re
import shutil

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints import load_checkpoint
from bert_tf.data.finetuning_pipeline import length_sorted_batches, make_dataset, num_examples
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

    def train(self, features, after_checkpoint=None):
        """Trains on `features` (dict of NumPy arrays with `label_ids`) for the options' epochs, resuming
        from output_dir if a previous run of the same command was interrupted. `after_checkpoint(step)` runs
        after every checkpoint (e.g. `BestCheckpoint.update` on a dev evaluation); if it raises
        `StopTraining`, training ends there. Returns the last metrics (None after an early stop)."""
        options = self.options
        count = num_examples(features)
        num_train_steps, num_warmup_steps = options.train_steps(count)
        with self.strategy.scope():
            optimizer = optimization.create_optimizer(
                options.optimizer, options.learning_rate, num_train_steps, num_warmup_steps,
                loss_scaling=options.loss_scaling)
        trainer = loop.Trainer(self.strategy, self.model, optimizer, options.train_batch_size,
                               options.num_accumulation_steps, use_xla=options.use_xla)
        logging.info("***** Running training: %d examples, batch size %d, %d steps (%d warmup) *****", count,
                     options.train_batch_size, num_train_steps, num_warmup_steps)

        def dataset_fn(input_context, batch_size):
            return make_dataset(features, batch_size, True, options.seed, input_context,
                                trim_padding=not options.use_xla)

        try:
            results = trainer.train(dataset_fn, self.output_dir, num_train_steps, options.iterations_per_loop,
                                    options.save_checkpoints_steps, after_checkpoint)
        except StopTraining as stop:
            logging.info("Early stop at step %d of %d: %s", trainer.step, num_train_steps, stop)
            results = None
        self.global_step = trainer.step
        return results

    def predict(self, features, batch_size):
        """The model's outputs (float32 NumPy [N, ...]) for every example of `features`, in order, computed
        on this host in batches of `batch_size` (compiled with XLA when the options say so).

        Batches group examples of similar length and drop the padding they all share
        (`length_sorted_batches`): the outputs are those of full-length batches (within float rounding),
        in a fraction of the time on short texts. An output with one axis more than `input_ids` is per
        token (e.g. [N, T, labels]): it comes back padded with zeros to the full T.
        """
        if self._forward is None:
            self._forward = tf.function(lambda batch: self.model(batch, training=False),
                                        jit_compile=self.options.use_xla, reduce_retracing=True)
        count, full_shape = num_examples(features), features["input_ids"].shape
        outputs = None
        for indexes, inputs in length_sorted_batches(features, batch_size):
            batch = self._forward(inputs).numpy()
            if batch.ndim == len(full_shape) + 1:  # per token: pad back to max_seq_length
                batch = np.pad(batch, [(0, 0), (0, full_shape[-1] - batch.shape[1])] + [(0, 0)] * (batch.ndim - 2))
            if outputs is None:
                outputs = np.zeros((count,) + batch.shape[1:], batch.dtype)
            outputs[indexes] = batch
        return outputs


def log_softmax(logits):
    """logits float [..., C] -> float64 log-probabilities [..., C]."""
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def softmax_cross_entropy(logits, labels):
    """logits float [N, C], labels int [N] -> cross-entropy float64 [N]."""
    return -np.take_along_axis(log_softmax(logits), np.asarray(labels)[:, None], axis=-1)[:, 0]


class StopTraining(Exception):
    """Raised by an `after_checkpoint` hook to end fine-tuning early."""


class BestCheckpoint:
    """Keeps the weights of the best dev evaluation in `output_dir/best/`: its model.ckpt-N (copied from
    output_dir, where training just saved it), the `checkpoint` index file, eval_results.txt and labels.txt,
    so `--init_checkpoint=output_dir/best` (or export_model.py) uses them. A rerun reads the best value back.

    Args:
      output_dir: the fine-tuning output dir.
      metric: a key of the evaluation results, e.g. "eval_accuracy"; minimised if it contains "loss".
      patience: with patience > 0, `update` raises StopTraining after that many evaluations in a row without
        improvement (early stopping).
    """

    def __init__(self, output_dir, metric, patience=0):
        self.output_dir, self.metric, self.patience = output_dir, metric, patience
        self.best_dir = os.path.join(output_dir, "best")
        self.minimise = "loss" in metric
        self.best, self.evaluations_without_improvement = None, 0
        results_file = os.path.join(self.best_dir, "eval_results.txt")
        if os.path.exists(results_file):
            with open(results_file, encoding="utf-8") as f:
                values = dict(line.strip().split(" = ", 1) for line in f if " = " in line)
            self.best = float(values[metric]) if metric in values else None

    def update(self, step, results):
        """Takes the dev `results` (dict of floats) of the weights saved at `step`; copies them to best/ when
        `metric` improved. Raises ValueError for an unknown metric, StopTraining when patience runs out."""
        if self.metric not in results:
            raise ValueError(f"--best_metric={self.metric} is not an evaluation result; expected one of "
                             f"{', '.join(sorted(results))}")
        value = float(results[self.metric])
        improved = self.best is None or (value < self.best if self.minimise else value > self.best)
        logging.info("Dev evaluation at step %d: %s = %.6g (best so far %s)", step, self.metric, value,
                     "none" if self.best is None else f"{self.best:.6g}")
        if improved:
            self._keep(step, {**results, "global_step": step})
            self.best, self.evaluations_without_improvement = value, 0
            return
        self.evaluations_without_improvement += 1
        if self.patience and self.evaluations_without_improvement >= self.patience:
            raise StopTraining(f"{self.metric} did not improve on {self.best:.6g} in {self.patience} evaluation(s)")

    def _keep(self, step, results):
        staging = self.best_dir + ".incomplete"
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        for path in glob.glob(os.path.join(self.output_dir, f"model.ckpt-{step}.*")):
            shutil.copy2(path, staging)
        if os.path.exists(os.path.join(self.output_dir, LABELS_FILE)):
            shutil.copy2(os.path.join(self.output_dir, LABELS_FILE), staging)
        with open(os.path.join(staging, "checkpoint"), "w", encoding="utf-8") as f:
            f.write(f'model_checkpoint_path: "model.ckpt-{step}"\n')
        with open(os.path.join(staging, "eval_results.txt"), "w", encoding="utf-8") as f:
            f.writelines(f"{key} = {results[key]}\n" for key in sorted(results))
        shutil.rmtree(self.best_dir, ignore_errors=True)
        os.replace(staging, self.best_dir)
        logging.info("Kept the weights of step %d in %s", step, self.best_dir)


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
