"""The one training loop of every script, on either Keras backend: the steps, the saves, resuming, evaluation,
the metric lines and the progress. What differs between backends is given to it as parts: the steps (`tf_steps.
TfSteps` on a tf.distribute strategy: any strategy, XLA, float16 loss scaling; `jax_step.JaxSteps` on
keras.distribution's devices) and the input (`inputs.wrap`: tf.data or Grain); `trainers.create_trainer` puts
them together for a run's strategy. The devices (`devices.Devices`) say which worker this process is.

The model is an `ObjectiveModel` (bert_tf/modeling/tasks/objective.py): it defines its loss terms
(`objective_weights(features)`, `objective(features, outputs)`), which the steps normalise over the global batch.

The layout of `model_dir` and the rules that keep it consistent under kills are `bert_tf.run_directory`'s:
weights as model.ckpt-N (Google's names, any script's --init_checkpoint), the training state and each
worker's input position under training_state/, TensorBoard summaries in train/ and eval/. A rerun of a
killed command resumes from the newest intact state and finishes what that checkpoint had left undone.
"""

import itertools
import os
import shutil
import tempfile
import time

import numpy as np
from absl import logging

from bert_tf import atomic_io, checkpoint_paths, checkpoints, run_directory
from bert_tf.progress import Progress
from bert_tf.training import inputs, summaries

# Seconds of training per call between two progress updates (one process; see Trainer.train).
CHUNK_SECONDS = 1.0


class NonFiniteLossError(ValueError):
    """The training loss became NaN or Inf; the last good checkpoint is kept."""


def last_good_state(state_dir):
    """The prefix of the newest complete training state in `state_dir`, or "none yet"."""
    name = checkpoint_paths.STATE_NAME
    steps = checkpoint_paths.steps(state_dir, name)
    return checkpoint_paths.checkpoint_prefix(state_dir, steps[-1], name) if steps else "none yet"


def _terms(sums):
    """The loss terms present in a sums dict (keys `<term>_weight`)."""
    return [key[: -len("_weight")] for key in sums if key.endswith("_weight")]


def _sum_steps(per_step):
    """{name: float32 [steps]} -> {name: float}, summed in step order in float32: the sums of one call
    over all the steps, however the steps were split into calls."""
    return {k: float(np.cumsum(v, dtype=np.float32)[-1]) for k, v in per_step.items()}


def _metrics(sums, num_steps):
    """Summed values of `num_steps` steps (keys `loss`, `<term>_weight`, `<term>_<metric>_sum`) ->
    {"loss": mean step loss, "<term>_<metric>": weighted mean over the predictions}."""
    results = {"loss": sums["loss"] / num_steps}
    for term in _terms(sums):
        weight = sums[f"{term}_weight"]
        for key, value in sums.items():
            if key.startswith(term + "_") and key.endswith("_sum"):
                results[key[: -len("_sum")]] = value / weight if weight else 0.0
    return results


def check_arguments(optimizer, global_batch_size, replicas, num_accumulation_steps):
    """ValueError when the global batch does not split over `replicas` x `num_accumulation_steps`, or when the
    optimizer clips on its own (the loops clip the summed gradients: `clip_norm`)."""
    if num_accumulation_steps < 1 or global_batch_size % (replicas * num_accumulation_steps):
        raise ValueError(f"train batch size {global_batch_size} is not a multiple of {replicas} replica(s) x "
                         f"num_accumulation_steps={num_accumulation_steps}")
    if getattr(optimizer, "global_clipnorm", None) or getattr(optimizer, "clipnorm", None):
        raise ValueError("clip gradients with create_trainer(clip_norm=...): an optimizer's own clipnorm would clip "
                         "each replica's gradient before the cross-replica sum")


class Trainer:
    """Trains `model` with `optimizer` by `steps` (the backend's part: `tf_steps.TfSteps`, `jax_step.JaxSteps`)
    on `devices` (`devices.Devices`).

    global_batch_size: examples per optimizer update, over all replicas and accumulation steps; it must be a
      multiple of the replicas x num_accumulation_steps.
    flops_per_example: training FLOPs per example (`flops.training_flops_per_example`), for the MFU in the log;
      used only when batches have a fixed length (batches cut to their longest example have no fixed FLOPs).
    """

    def __init__(self, devices, steps, model, optimizer, global_batch_size, num_accumulation_steps=1,
                 flops_per_example=None):
        check_arguments(optimizer, global_batch_size, devices.num_replicas, num_accumulation_steps)
        self.devices, self.steps, self.model, self.optimizer = devices, steps, model, optimizer
        self.global_batch_size = global_batch_size
        self.num_accumulation_steps = num_accumulation_steps
        self.flops_per_example = flops_per_example

    @property
    def is_chief(self):
        return self.devices.is_chief

    @property
    def num_replicas(self):
        """Devices that each compute a slice of every batch."""
        return self.devices.num_replicas

    @property
    def per_worker_batch_size(self):
        """Examples per batch that this worker's dataset must yield."""
        return self.global_batch_size // self.devices.num_workers

    def input_context(self):
        """This worker's shard of the input (`devices.InputContext`)."""
        return self.devices.input_context()

    @property
    def step(self):
        """Training steps done (optimizer updates, skipped float16 overflow steps included)."""
        return self.steps.step

    def run_steps(self, iterator, num_steps):
        """Runs `num_steps` (>= 1) optimizer updates on the batches of `iterator` (an iterator over this worker's
        batches), with no checkpoint or log: what `train` does between two logs, e.g. to time the step.
        Returns the metric sums over the steps, {name: float}."""
        return _sum_steps(self.steps.run(iterator, num_steps))

    # ------------------------------------------------------------------------------------ checkpoints

    def _export_weights(self, model_dir, step):
        """Chief: model.ckpt-<step> with Google's names, then the `checkpoint` index file naming it, then
        retention (the last MAX_CHECKPOINTS_TO_KEEP)."""
        prefix = checkpoint_paths.checkpoint_prefix(model_dir, step)
        checkpoints.save_checkpoint(self.model, prefix, self.model.config, self.model.head_options())
        run_directory.write_index(model_dir, step)
        run_directory.retain(model_dir, step)

    def _save(self, step, state, state_dir, data, data_dir):
        """The resumable state of `step`: every worker's data position first (a saved state implies its
        data position), then the training state (every worker writes, collectively; the chief's is kept),
        each bundle complete or absent; then retention."""
        checkpoint_paths.write_bundle(checkpoint_paths.checkpoint_prefix(data_dir, step, checkpoint_paths.STATE_NAME),
                                   data.write)
        checkpoint_paths.write_bundle(checkpoint_paths.checkpoint_prefix(state_dir, step, checkpoint_paths.STATE_NAME),
                                   state.write)
        if self.is_chief:
            run_directory.write_index(state_dir, step, checkpoint_paths.STATE_NAME)
        for directory in (state_dir, data_dir):
            run_directory.retain(directory, step, checkpoint_paths.STATE_NAME)

    def _restore(self, state, state_dir, data, data_dir):
        """Resumes from the newest intact training state in `state_dir`; returns its step, or None when
        there is none.

        Each candidate, newest first, must restore completely (index and data readable, checksums right),
        hold the step its name says and have this worker's data position; a damaged one is named in a
        warning and the previous one tried. ValueError when indexed states exist but none is intact (never
        a silent start from step 0); data without an index (a save cut short: nothing to restore) is named
        in a warning and ignored."""
        name = checkpoint_paths.STATE_NAME
        candidates = checkpoint_paths.steps(state_dir, name)
        for step in checkpoint_paths.incomplete_steps(state_dir, name):
            if not candidates or step > candidates[-1]:  # the index is renamed last: a save was cut short
                logging.warning("Damaged training state %s: data without an index (a save interrupted, or the index "
                                "lost); not resumable, ignored",
                                checkpoint_paths.checkpoint_prefix(state_dir, step, name))
        damaged = []
        for step in reversed(candidates):
            prefix = checkpoint_paths.checkpoint_prefix(state_dir, step, name)
            data_prefix = checkpoint_paths.checkpoint_prefix(data_dir, step, name)
            try:
                if not os.path.exists(data_prefix + ".index"):
                    raise ValueError(f"its data position {data_prefix} is missing (written with another number "
                                     "of workers?)")
                state.read(prefix)
                if self.step != step:
                    raise ValueError(f"it holds step {self.step}")
                data.read(data_prefix)
            except Exception as e:  # the readers raise ValueError, IndexError, AssertionError, OSError
                reason = str(e)
                damaged.append(f"{prefix}: {reason.splitlines()[0] if reason else type(e).__name__}")
                continue
            for problem in damaged:
                logging.warning("Damaged training state %s; resuming from the previous intact one", problem)
            logging.info("Resumed from %s at step %d", prefix, step)
            return step
        if damaged:
            raise ValueError(f"{state_dir} holds no training state this run can resume from: "
                             + "; ".join(damaged) + ". If it was made by another model or task, rerun with that "
                             "run's flags or choose another output folder; if it is damaged, move it away to start "
                             "again from step 0")
        return None

    def _complete(self, step, model_dir, after_checkpoint):
        """What follows a saved state, again after resuming at `step` (a kill may have cut it short): the
        chief's export of the weights unless `checkpoint` already names it complete, then `after_checkpoint`
        (which must therefore be idempotent per step)."""
        if self.is_chief and checkpoint_paths.indexed_step(model_dir) != step:
            self._export_weights(model_dir, step)
        if after_checkpoint is not None:
            after_checkpoint(step)

    # ------------------------------------------------------------------------------------- public API

    def train(self, dataset_fn, model_dir, num_train_steps, steps_per_loop, save_checkpoints_steps,
              after_checkpoint=None, on_start=None):
        """Trains until `num_train_steps` optimizer steps are done, resuming from `model_dir` if it holds a
        training state.

        dataset_fn(input_context, batch_size) -> this worker's endless input of feature dicts, `batch_size`
          examples each (drop_remainder), deterministic if resuming must be exact: a tf.data Dataset or a Grain
          IterDataset (`inputs.wrap`), for `input_context` (`devices.InputContext`: the worker's shard).
        Saves every `save_checkpoints_steps` steps and at the end; `after_checkpoint(step)` then runs on
        every worker (e.g. an evaluation), and again for the step a rerun resumes at (it may have been
        interrupted): it must give the same result when called twice for one step. `on_start(step)` runs on
        the chief once the run is sure to train: after the state to resume (step > 0) is restored, before
        anything else is written (what a run records of itself: its config, its settings; a run whose state
        cannot be restored records nothing). Logs a metric line and
        writes TensorBoard summaries every `steps_per_loop` steps, and shows the progress (`bert_tf.progress`:
        steps, steps/s, ETA) between them: in one process, the steps between two metric lines run in calls
        of about CHUNK_SECONDS each (the first call 1 step), the metric sums added in step order as one call
        would add them; on several workers, one call per metric line (every worker must run the same calls).
        Raises NonFiniteLossError when the loss becomes NaN/Inf (nothing is saved after the last good
        checkpoint). Returns the metrics of the last loop ({} when nothing was left to train).
        """
        for name, value in (("num_train_steps", num_train_steps), ("steps_per_loop", steps_per_loop),
                            ("save_checkpoints_steps", save_checkpoints_steps)):
            if value < 1:
                raise ValueError(f"{name}={value} must be >= 1")
        data = inputs.wrap(dataset_fn(self.input_context(), self.per_worker_batch_size))
        if data.kind == "grain" and self.devices.backend == "tensorflow":
            raise ValueError("a Grain input feeds the JAX steps; the TensorFlow steps read a tf.data input")
        seq_length, iterator = data.seq_length, data.iterator
        state_dir = os.path.join(model_dir, checkpoint_paths.STATE_DIR)
        data_dir = os.path.join(state_dir, f"data_worker_{self.devices.worker_index}")
        state = self.steps.state()
        for directory in (model_dir, state_dir, data_dir) if self.is_chief else (data_dir,):
            os.makedirs(directory, exist_ok=True)
            atomic_io.remove_leftovers(directory)
        # Every worker saves (collectively); only the chief's copy is kept.
        write_dir = state_dir if self.is_chief else tempfile.mkdtemp(prefix="bert_tf_worker_state_")
        start_step = self._restore(state, state_dir, data, data_dir) or 0
        if on_start is not None and self.is_chief:
            on_start(start_step)
        writer = summaries.ScalarWriter(os.path.join(model_dir, "train")) if self.is_chief else None
        peak = None
        if self.flops_per_example and seq_length:  # trimmed batches: not the FLOPs of full-length ones
            peak = self.steps.measure_peak() * self.num_replicas
            logging.info("Measured matmul peak: %.1f TFLOP/s over %d replica(s)", peak / 1e12, self.num_replicas)
        step, results = start_step, {}
        chunk = steps_per_loop if self.devices.num_workers > 1 else 1  # steps per call
        try:
            if start_step:
                self._complete(start_step, model_dir, after_checkpoint)
            with Progress("training", num_train_steps, "steps", done=start_step) as progress:
                while step < num_train_steps:
                    next_save = (step // save_checkpoints_steps + 1) * save_checkpoints_steps
                    num_steps = min(steps_per_loop, num_train_steps - step, next_save - step)
                    started = time.perf_counter()
                    sums, chunk = self._run_interval(iterator, num_steps, chunk, progress)
                    elapsed = time.perf_counter() - started
                    step = self.step
                    results = _metrics(sums, num_steps)
                    if not np.isfinite(results["loss"]):
                        raise NonFiniteLossError(
                            f"loss is {results['loss']} in steps {step - num_steps + 1}-{step}; training stopped. "
                            f"The last good checkpoint is kept: {last_good_state(state_dir)}"
                            ". Lower learning_rate, check the input, or train in float32")
                    self._log(step, num_train_steps, results, num_steps, elapsed, seq_length, peak, writer)
                    if step % save_checkpoints_steps == 0 or step == num_train_steps:
                        self._save(step, state, write_dir, data, data_dir)
                        self._complete(step, model_dir, after_checkpoint)
        finally:
            if writer is not None:
                writer.close()
            if not self.is_chief:
                shutil.rmtree(write_dir, ignore_errors=True)
        return results

    def _run_interval(self, iterator, num_steps, chunk, progress):
        """Runs the `num_steps` steps between two metric lines in calls of `chunk` steps, advancing `progress`
        after each call. In one process the next call's size is taken from this one's time (about
        CHUNK_SECONDS, at most 4 times this one's size: early updates come soon); on several workers `chunk`
        stays as it is. Returns (the steps' metric sums, chunk)."""
        per_step, done = [], 0
        while done < num_steps:
            size, started = min(chunk, num_steps - done), time.perf_counter()
            per_step.append(self.steps.run(iterator, size))
            if self.devices.num_workers == 1:
                seconds = max(time.perf_counter() - started, 1e-6)
                chunk = max(1, min(4 * size, round(CHUNK_SECONDS * size / seconds)))
            done += size
            progress.advance(size)
        return _sum_steps({k: np.concatenate([p[k] for p in per_step]) for k in per_step[0]}), chunk

    def _log(self, step, num_train_steps, results, num_steps, elapsed, seq_length, peak, writer):
        examples_per_second = num_steps * self.global_batch_size / elapsed
        learning_rate = float(np.asarray(self.optimizer.learning_rate))
        values = {**results, "learning_rate": learning_rate, "examples_per_second": examples_per_second}
        line = [f"step {step}/{num_train_steps}", f"loss {results['loss']:.4f}"]
        line += [f"{k} {v:.4f}" for k, v in sorted(results.items()) if k != "loss"]
        line += [f"lr {learning_rate:.3g}", f"{examples_per_second:.1f} examples/s"]
        if seq_length:  # None when batches are cut to their longest example (fine-tuning without XLA)
            line.append(f"{examples_per_second * seq_length:.0f} tokens/s")
        if peak:
            values["mfu"] = examples_per_second * self.flops_per_example / peak
            line.append(f"MFU {100 * values['mfu']:.1f}%")
        logging.info(" | ".join(line))
        if writer is not None:
            writer.write(step, values)

    def evaluate(self, dataset, num_steps, model_dir=None):
        """Metrics over the first `num_steps` batches of this worker's `dataset` (an iterable of batches:
        per_worker_batch_size for the eval batch size): the weighted metrics of every term and `loss`,
        the mean over batches of the batch loss (as the original's Estimator), and `global_step`. With
        `model_dir`, the chief also writes them to TensorBoard under model_dir/eval. Shows the progress in batches
        (`bert_tf.progress`)."""
        totals, batch_losses, done = None, [], 0
        with Progress("evaluation", num_steps, "batches") as progress:
            for batch in itertools.islice(dataset, num_steps):
                sums = self.steps.evaluate(batch)
                batch_losses.append(sum(sums[f"{t}_loss_sum"] / sums[f"{t}_weight"] if sums[f"{t}_weight"] else 0.0
                                        for t in _terms(sums)))
                totals = sums if totals is None else {k: totals[k] + sums[k] for k in sums}
                done += 1
                progress.advance()
        if not done:
            raise ValueError("the evaluation dataset is empty")
        results = _metrics({**totals, "loss": float(np.sum(batch_losses))}, done)
        results["global_step"] = self.step
        if model_dir and self.is_chief:
            with summaries.ScalarWriter(os.path.join(model_dir, "eval")) as writer:
                writer.write(self.step, results)
        logging.info("Eval at step %d over %d batches: %s", self.step, done,
                     ", ".join(f"{k} = {v:.4f}" for k, v in sorted(results.items()) if k != "global_step"))
        return results
