"""The one training loop of every script: any tf.distribute strategy, XLA, mixed precision, gradient
accumulation, exact resume.

Why not `model.fit`: on TF 2.21 / Keras 3.15, fit under MirroredStrategy fails with jit_compile, with
steps_per_execution > 1 and with gradient accumulation (seen on 2 logical CPU devices). Here a `tf.function` runs
`steps_per_loop` steps; each step is `strategy.run(step)` on every replica, where the forward and backward
pass is one `tf.function(jit_compile=use_xla)` per micro-batch and the optimizer update runs outside it.

The model is an `ObjectiveModel` (bert_tf/modeling/tasks/objective.py): it defines its loss terms
(`objective_weights(features)`, `objective(features, outputs)`). Each term is normalised by its weight
summed over the *global* batch (all replicas, all micro-batches) before the backward pass, so one device,
N replicas and N accumulation steps compute the same gradient. Gradients are summed over the replicas, then
clipped by their global norm, then applied.

The layout of `model_dir` and the rules that keep it consistent under kills are `bert_tf.run_directory`'s:
weights as model.ckpt-N (Google's names, any script's --init_checkpoint), the training state and each
worker's input position under training_state/, TensorBoard summaries in train/ and eval/. A rerun of a
killed command resumes from the newest intact state and finishes what that checkpoint had left undone.

On Keras's JAX backend the commands run `jax_loop.JaxTrainer`, a subclass that keeps all of this and replaces
the step (`trainers.create_trainer` picks it for strategy None).
"""

import os
import shutil
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging
from tensorflow.core.framework import summary_pb2

from bert_tf import atomic_io, checkpoint_paths, checkpoints, run_directory
from bert_tf.feature_schema import INPUT_IDS
from bert_tf.progress import Progress
from bert_tf.training import distribute, optimization
from bert_tf.training.flops import measure_peak_flops

# What TensorBoard's scalar summaries carry; written with tf.summary.write, so the tensorboard package (which
# tf.summary.scalar needs) is not a dependency.
_SCALAR = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))


def write_scalars(writer, step, values):
    """Writes {name: float} as TensorBoard scalars at `step`."""
    with writer.as_default(step=step):
        for name, value in values.items():
            tf.summary.write(name, tf.constant(value, tf.float32), metadata=_SCALAR)
    writer.flush()


# Seconds of training per call between two progress updates (one process; see Trainer.train).
CHUNK_SECONDS = 1.0


class NonFiniteLossError(ValueError):
    """The training loss became NaN or Inf; the last good checkpoint is kept."""


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
        raise ValueError("clip gradients with Trainer(clip_norm=...): an optimizer's own clipnorm would clip "
                         "each replica's gradient before the cross-replica sum")


class Trainer:
    """Trains `model` with `optimizer` on `strategy` (both created under `strategy.scope()`).

    global_batch_size: examples per optimizer update, over all replicas and accumulation steps; it must be a
      multiple of num_replicas_in_sync * num_accumulation_steps.
    num_accumulation_steps: micro-batches per update (each replica's batch is split; gradients are summed).
    use_xla: compile the forward/backward pass with XLA.
    clip_norm: clip the summed gradients to this global norm (the original: 1.0); None: no clipping.
    flops_per_example: training FLOPs per example (`flops.training_flops_per_example`), for the MFU in the log;
      used only when batches have a fixed length (batches cut to their longest example have no fixed FLOPs).
    A `keras.optimizers.LossScaleOptimizer` (float16) scales the loss and skips non-finite updates.
    """

    def __init__(self, strategy, model, optimizer, global_batch_size, num_accumulation_steps=1, use_xla=False,
                 clip_norm=1.0, flops_per_example=None):
        check_arguments(optimizer, global_batch_size, strategy.num_replicas_in_sync, num_accumulation_steps)
        self.strategy, self.model, self.optimizer = strategy, model, optimizer
        self.global_batch_size = global_batch_size
        self.num_accumulation_steps = num_accumulation_steps
        self.clip_norm = clip_norm
        self.flops_per_example = flops_per_example
        self.is_chief = distribute.is_chief(strategy)
        self._num_workers = distribute.num_workers(strategy)
        self._worker = distribute.worker_index(strategy)
        self._local_replicas = len(strategy.extended.worker_devices)
        self._loss_scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        with strategy.scope():
            if not model.built:
                model.build()
            self._variables = model.trainable_variables
            optimizer.build(self._variables)
            self._step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step",
                                     aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
        # Dropout draws from Keras seed generators; their state makes a resumed run draw the same masks.
        self._rng_states = [v.value for v in model.variables if v.path.endswith("seed_generator_state")]
        # autograph=False: the model's code has no tensor-dependent Python control flow to convert, and
        # converting it took 2.2 of the 7.3 s the first step of a MiniLM fine-tuning spent tracing.
        self._grad_fn = tf.function(self._forward_backward, jit_compile=use_xla, autograph=False)
        self._forward_fn = tf.function(self._forward, jit_compile=use_xla, autograph=False)
        self._train_loop = tf.function(self._train_loop_fn)
        self._eval_step = tf.function(self._eval_step_fn)

    @property
    def num_replicas(self):
        """Devices that each compute a slice of every batch."""
        return self.strategy.num_replicas_in_sync

    @property
    def per_worker_batch_size(self):
        """Examples per batch that this worker's dataset must yield."""
        return self.global_batch_size // self._num_workers

    def input_context(self):
        """The tf.distribute.InputContext of this worker (for per-worker sharding of the input)."""
        return tf.distribute.InputContext(self._num_workers, self._worker, self.strategy.num_replicas_in_sync)

    @property
    def step(self):
        """Training steps done (optimizer updates, skipped float16 overflow steps included)."""
        return int(self._step.numpy())

    def run_steps(self, iterator, num_steps):
        """Runs `num_steps` (>= 1) optimizer updates on the batches of `iterator` (an iterator over a dataset of
        global batches), with no checkpoint or log: what `train` does between two logs, e.g. to time the step.
        Returns the metric sums over the steps, {name: float}."""
        return _sum_steps(self._run_steps(iterator, num_steps))

    def _run_steps(self, iterator, num_steps):
        """`run_steps`, returning each step's sums, {name: float32 NumPy [num_steps]}."""
        return {k: v.numpy() for k, v in self._train_loop(iterator, tf.constant(num_steps)).items()}

    # ------------------------------------------------------------------------------- replica functions

    def _forward_backward(self, features, denominators):
        """XLA-compiled: gradients of this micro-batch's share of the global loss, and its sums."""
        with tf.GradientTape() as tape:
            sums = self.model.objective_sums(features, self.model(features, training=True))
            loss = tf.add_n([tf.math.divide_no_nan(sums[f"{t}_loss_sum"], d) for t, d in denominators.items()])
            scaled_loss = self.optimizer.scale_loss(loss)
        grads = tape.gradient(scaled_loss, self._variables)
        grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g) for g, v in zip(grads, self._variables)]
        return grads, {**sums, "loss": loss}

    def _forward(self, features):
        return self.model.objective_sums(features, self.model(features, training=False))

    def _train_step(self, features):
        context = tf.distribute.get_replica_context()
        weights = self.model.objective_weights(features)
        denominators = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                          {t: tf.reduce_sum(w) for t, w in weights.items()})
        grads, sums = None, None
        parts = [features]
        if self.num_accumulation_steps > 1:
            split = {k: tf.split(v, self.num_accumulation_steps) for k, v in features.items()}
            parts = [{k: v[i] for k, v in split.items()} for i in range(self.num_accumulation_steps)]
        for part in parts:
            part_grads, part_sums = self._grad_fn(part, denominators)
            grads = part_grads if grads is None else [a + b for a, b in zip(grads, part_grads)]
            sums = part_sums if sums is None else {k: sums[k] + part_sums[k] for k in sums}
        grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
        # Keras' apply() sums the gradients over the replicas again: each replica hands over its share.
        replicas = context.num_replicas_in_sync
        if self.clip_norm:  # the unscaled gradients' norm (a loss scale is a power of 2: dividing is exact)
            norm = tf.linalg.global_norm(grads)
            scale = optimization.clip_factor(norm / self.optimizer.dynamic_scale if self._loss_scaling else norm,
                                             self.clip_norm)
        else:
            scale = None
        if replicas > 1:
            scale = 1.0 / replicas if scale is None else scale / replicas
        if isinstance(self.optimizer, optimization.AdamWeightDecay):  # the factor applied inside its update
            self.optimizer.apply(grads, self._variables, gradient_scale=scale)
        else:
            self.optimizer.apply(grads if scale is None else [g * scale for g in grads], self._variables)
        return sums

    def _distribute(self, batch):
        """This worker's batch -> per-replica slices (consecutive examples per local replica)."""
        if self._local_replicas == 1:
            return batch

        def value_fn(context):
            index = context.replica_id_in_sync_group % self._local_replicas
            return {k: tf.split(v, self._local_replicas)[index] for k, v in batch.items()}

        return self.strategy.experimental_distribute_values_from_function(value_fn)

    def _reduce(self, per_replica):
        return {k: self.strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None) for k, v in per_replica.items()}

    def _train_loop_fn(self, iterator, num_steps):
        """`num_steps` training steps in one graph -> each step's sums, {name: float32 [num_steps]}. The step is
        traced once, inside the loop (the TensorArrays are made from the names the model declares)."""
        def one_step():
            step = tf.autograph.experimental.do_not_convert(self._train_step)
            sums = self._reduce(self.strategy.run(step, args=(self._distribute(next(iterator)),)))
            self._step.assign_add(1)
            if set(sums) != set(names):
                raise ValueError(f"{type(self.model).__name__}.objective_sums returned {sorted(sums)}; "
                                 f"objective_sum_names() declares {sorted(names)}")
            return sums

        names = [*self.model.objective_sum_names(), "loss"]
        values = {k: tf.TensorArray(tf.float32, size=num_steps) for k in names}
        for i in tf.range(num_steps):
            sums = one_step()
            values = {k: array.write(i, sums[k]) for k, array in values.items()}
        return {k: array.stack() for k, array in values.items()}

    def _eval_step_fn(self, batch):
        return self._reduce(self.strategy.run(self._forward_fn, args=(self._distribute(batch),)))

    # ------------------------------------------------------------------------------------ checkpoints

    def _training_state(self):
        """What a training state bundle holds (model, optimizer, step, dropout RNG), as an object with
        `write(prefix)` and `read(prefix).assert_existing_objects_matched()`."""
        return tf.train.Checkpoint(model=self.model, optimizer=self.optimizer, step=self._step, rng=self._rng_states)

    def _measure_peak(self):
        """The matmul peak FLOP/s of all replicas together, in the compute dtype (`measure_peak_flops`)."""
        device = self.strategy.extended.worker_devices[0]
        return measure_peak_flops(device, keras.mixed_precision.global_policy().compute_dtype) * self.num_replicas

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
                status = state.read(prefix)
                try:
                    status.assert_existing_objects_matched()
                except AssertionError:
                    status.expect_partial()  # no warning per unrestored value: the reason is reported here
                    raise
                if self.step != step:
                    raise ValueError(f"it holds step {self.step}")
                data.read(data_prefix).assert_existing_objects_matched()
            except Exception as e:  # TF's checkpoint reader raises OpErrors, IndexError, ValueError, AssertionError
                reason = e.message if isinstance(e, tf.errors.OpError) else str(e)
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

        dataset_fn(input_context, batch_size) -> this worker's endless tf.data.Dataset of feature dicts,
          `batch_size` examples each (drop_remainder), deterministic if resuming must be exact.
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
        dataset = dataset_fn(self.input_context(), self.per_worker_batch_size)
        seq_length = dataset.element_spec[INPUT_IDS].shape[-1]
        iterator = iter(dataset)
        state_dir = os.path.join(model_dir, checkpoint_paths.STATE_DIR)
        data_dir = os.path.join(state_dir, f"data_worker_{self._worker}")
        state, data = self._training_state(), tf.train.Checkpoint(iterator=iterator)
        for directory in (model_dir, state_dir, data_dir) if self.is_chief else (data_dir,):
            os.makedirs(directory, exist_ok=True)
            atomic_io.remove_leftovers(directory)
        # Every worker saves (collectively); only the chief's copy is kept.
        write_dir = state_dir if self.is_chief else tempfile.mkdtemp(prefix="bert_tf_worker_state_")
        start_step = self._restore(state, state_dir, data, data_dir) or 0
        if on_start is not None and self.is_chief:
            on_start(start_step)
        writer = tf.summary.create_file_writer(os.path.join(model_dir, "train")) if self.is_chief else None
        peak = None
        if self.flops_per_example and seq_length:  # trimmed batches: not the FLOPs of full-length ones
            peak = self._measure_peak()
            logging.info("Measured matmul peak: %.1f TFLOP/s over %d replica(s)", peak / 1e12, self.num_replicas)
        step, results = start_step, {}
        chunk = steps_per_loop if self._num_workers > 1 else 1  # steps per call
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
                            f"The last good checkpoint is kept: {tf.train.latest_checkpoint(state_dir) or 'none yet'}"
                            ". Lower learning_rate, check the input, or train in float32")
                    self._log(step, num_train_steps, results, num_steps, elapsed, seq_length, peak, writer)
                    if step % save_checkpoints_steps == 0 or step == num_train_steps:
                        self._save(step, state, write_dir, data, data_dir)
                        self._complete(step, model_dir, after_checkpoint)
        finally:
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
            per_step.append(self._run_steps(iterator, size))
            if self._num_workers == 1:
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
            write_scalars(writer, step, values)

    def evaluate(self, dataset, num_steps, model_dir=None):
        """Metrics over `num_steps` batches of this worker's `dataset` (batches of per_worker_batch_size
        for the eval batch size: pass it already batched): the weighted metrics of every term and `loss`,
        the mean over batches of the batch loss (as the original's Estimator), and `global_step`. With
        `model_dir`, the chief also writes them to TensorBoard under model_dir/eval. Shows the progress in batches
        (`bert_tf.progress`)."""
        totals, batch_losses, done = None, [], 0
        with Progress("evaluation", num_steps, "batches") as progress:
            for batch in dataset.take(num_steps):
                sums = {k: float(v) for k, v in self._eval_step(batch).items()}
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
            write_scalars(tf.summary.create_file_writer(os.path.join(model_dir, "eval")), self.step, results)
        logging.info("Eval at step %d over %d batches: %s", self.step, done,
                     ", ".join(f"{k} = {v:.4f}" for k, v in sorted(results.items()) if k != "global_step"))
        return results
