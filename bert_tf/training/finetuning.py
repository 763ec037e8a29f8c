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
import json
import os
import shutil

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import atomic_io, run_directory
from bert_tf.checkpoints import load_checkpoint
from bert_tf.data.tasks.pipeline import length_sorted_batches, make_dataset, num_examples
from bert_tf.feature_schema import INPUT_IDS
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
        self.global_step = run_directory.step_of(report.path) or 0  # report.path: the prefix a folder resolved to
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
        count, full_shape = num_examples(features), features[INPUT_IDS].shape
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
    so `--init_checkpoint=output_dir/best` (or export_model.py) uses them.

    Every dev evaluation is recorded in `output_dir/dev_evaluations.jsonl` (one JSON line per step:
    {"step", "results"}), written after best/ is up to date: it is what a rerun reads back, so a kill at
    any moment costs at most one repeated evaluation, and best/ is replaced in one step (never missing).

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
        self._history_file = os.path.join(output_dir, EVALUATIONS_FILE)
        atomic_io.restore_directory(self.best_dir)
        self.history = {}  # step -> results
        if os.path.exists(self._history_file):
            with open(self._history_file, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    try:
                        entry = json.loads(line)
                        self.history[int(entry["step"])] = entry["results"]
                    except (ValueError, KeyError, TypeError) as e:
                        raise ValueError(f"{self._history_file}:{number}: not a dev evaluation line ({e})") from None

    def _improves(self, value, best):
        return best is None or (value < best if self.minimise else value > best)

    def _scan(self):
        """(best value, evaluations since the last improvement) over the recorded evaluations, in step order."""
        best, since = None, 0
        for step in sorted(self.history):
            value = float(self.history[step][self.metric])
            if self._improves(value, best):
                best, since = value, 0
            else:
                since += 1
        return best, since

    @property
    def best(self):
        return self._scan()[0]

    def update(self, step, evaluate):
        """After the checkpoint of `step`: `evaluate()` (the dev results, a dict of floats) unless this step
        was already evaluated (a rerun after a kill); copies the weights to best/ when `metric` improved.
        Raises ValueError for an unknown metric, StopTraining when patience has run out."""
        if step not in self.history:
            results = {**evaluate(), "global_step": step}
            if self.metric not in results:
                raise ValueError(f"--best_metric={self.metric} is not an evaluation result; expected one of "
                                 f"{', '.join(sorted(results))}")
            unknown = [s for s in self.history if self.metric not in self.history[s]]
            if unknown:
                raise ValueError(f"{self._history_file}: the evaluation of step {unknown[0]} has no "
                                 f"{self.metric}; was this output_dir trained with another --best_metric?")
            best = self.best
            value = float(results[self.metric])
            logging.info("Dev evaluation at step %d: %s = %.6g (best so far %s)", step, self.metric, value,
                         "none" if best is None else f"{best:.6g}")
            if self._improves(value, best):
                self._keep(step, results)
            self.history[step] = {k: float(v) for k, v in results.items()}
            atomic_io.write_file(self._history_file, "".join(
                json.dumps({"step": s, "results": self.history[s]}) + "\n" for s in sorted(self.history)))
        best, since = self._scan()
        if self.patience and since >= self.patience:
            raise StopTraining(f"{self.metric} did not improve on {best:.6g} in {self.patience} evaluation(s)")

    def _keep(self, step, results):
        staging = atomic_io.temporary_path(self.best_dir)
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        for path in glob.glob(glob.escape(run_directory.checkpoint_prefix(self.output_dir, step)) + ".*"):
            shutil.copy2(path, staging)
        if os.path.exists(os.path.join(self.output_dir, run_directory.LABELS_FILE)):
            shutil.copy2(os.path.join(self.output_dir, run_directory.LABELS_FILE), staging)
        run_directory.write_index(staging, step)
        run_directory.write_results(staging, results)
        atomic_io.swap_directory(staging, self.best_dir)
        logging.info("Kept the weights of step %d in %s", step, self.best_dir)


EVALUATIONS_FILE = "dev_evaluations.jsonl"
