"""Early stopping and the best checkpoint of a fine-tuning run: a dev evaluation after every checkpoint, the
weights of the best one kept in output_dir/best/ (`run_directory.keep_best`), every evaluation recorded so
that a rerun after a kill repeats at most one."""

import json
import os

from absl import logging

from bert_tf import atomic_io, checkpoint_paths, run_directory


class StopTraining(Exception):
    """Raised by an `after_checkpoint` hook to end fine-tuning early."""


# The results that are better lower, by the end of their name: losses (eval_loss, masked_lm_loss, ...) and
# perplexities. Every other result (accuracy, F1, MCC, Pearson, exact match, MRR, ...) is better higher.
LOWER_IS_BETTER = ("loss", "perplexity")


def lower_is_better(metric):
    """Whether a smaller value of the evaluation result `metric` is the better one (LOWER_IS_BETTER)."""
    return metric.endswith(LOWER_IS_BETTER)


class BestCheckpoint:
    """Keeps the weights of the best dev evaluation in `output_dir/best/`: its model.ckpt-N (copied from
    output_dir, where training just saved it), the `checkpoint` index file, eval_results.txt and labels.txt,
    so `--init_checkpoint=output_dir/best` (or export_model.py) uses them.

    Every dev evaluation is recorded in `output_dir/dev_evaluations.jsonl` (one JSON line per step:
    {"step", "results"}), written after best/ is up to date: it is what a rerun reads back, so a kill at
    any moment costs at most one repeated evaluation, and best/ is replaced in one step (never missing).

    Args:
      output_dir: the fine-tuning output dir.
      metric: a key of the evaluation results, e.g. "eval_accuracy"; minimised when `lower_is_better`.
      patience: with patience > 0, `update` raises StopTraining after that many evaluations in a row without
        improvement (early stopping).
    """

    def __init__(self, output_dir, metric, patience=0):
        self.output_dir, self.metric, self.patience = output_dir, metric, patience
        self.best_dir = os.path.join(output_dir, run_directory.BEST_DIR)
        self.minimise = lower_is_better(metric)
        logging.info("Keeping the best %s in %s (%s is better)", metric, self.best_dir,
                     "lower" if self.minimise else "higher")
        self._history_file = os.path.join(output_dir, run_directory.EVALUATIONS_FILE)
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
        unknown = [s for s in sorted(self.history) if metric not in self.history[s]]
        if unknown:
            raise ValueError(f"{self._history_file}: the evaluation of step {unknown[0]} has no {metric}; was this "
                             "output_dir trained with another task?")
        self._choose_again()

    def _improves(self, value, best):
        return best is None or (value < best if self.minimise else value > best)

    def _scan(self, steps=None):
        """(best value, its step, evaluations since the last improvement) over the recorded evaluations of
        `steps` (default: all), in step order: the first best one is the one best/ keeps."""
        best, best_step, since = None, None, 0
        for step in sorted(self.history if steps is None else steps):
            value = float(self.history[step][self.metric])
            if self._improves(value, best):
                best, best_step, since = value, step, 0
            else:
                since += 1
        return best, best_step, since

    def _choose_again(self):
        """best/ holds the step that `metric` chooses among the recorded evaluations. When it holds another
        evaluated step, another best_metric chose it (a rerun that changed best_metric): the choice is made
        again by `metric` among the evaluated steps whose weights still exist (output_dir's model.ckpt-N, or
        best/'s own), with a warning, and one line more when retention has removed the weights of the best."""
        held = checkpoint_paths.indexed_step(self.best_dir) if os.path.isdir(self.best_dir) else None
        if held is None or held not in self.history:  # none yet, or killed before its evaluation was recorded
            return
        best, choice, _ = self._scan()
        if choice == held:
            return
        kept = [s for s in self.history
                if s == held or os.path.exists(checkpoint_paths.checkpoint_prefix(self.output_dir, s) + ".index")]
        value, step, _ = self._scan(kept)
        logging.warning("%s held step %d, which another best_metric chose (its %s is %.6g); by %s it holds step %d "
                        "(%.6g)", self.best_dir, held, self.metric, float(self.history[held][self.metric]),
                        self.metric, step, value)
        if step != choice:
            logging.warning("The best %s of %s is step %d's (%.6g), whose weights retention has removed; best/ "
                            "holds the best of the steps still kept", self.metric, self._history_file, choice, best)
        if step != held:
            self._keep(step, self.history[step])

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
                raise ValueError(f"best_metric={self.metric} is not an evaluation result; expected one of "
                                 f"{', '.join(sorted(results))}")
            best = self.best
            value = float(results[self.metric])
            logging.info("Dev evaluation at step %d: %s = %.6g (best so far %s)", step, self.metric, value,
                         "none" if best is None else f"{best:.6g}")
            if self._improves(value, best):
                self._keep(step, results)
            self.history[step] = {k: float(v) for k, v in results.items()}
            atomic_io.write_file(self._history_file, "".join(
                json.dumps({"step": s, "results": self.history[s]}) + "\n" for s in sorted(self.history)))
        best, _, since = self._scan()
        if self.patience and since >= self.patience:
            raise StopTraining(f"{self.metric} did not improve on {best:.6g} in {self.patience} evaluation(s)")

    def _keep(self, step, results):
        run_directory.keep_best(self.output_dir, step, results)
        logging.info("Kept the weights of step %d in %s", step, self.best_dir)

