"""The training loop on Keras's JAX backend: `loop.Trainer`'s contract, run directory and guarantees, with the
step one `jax.jit` function over the model's and the optimizer's variables.

    trainer = JaxTrainer(model, optimizer, global_batch_size=32, num_accumulation_steps=2)
    trainer.train(dataset_fn, "out", num_train_steps=1000, steps_per_loop=100, save_checkpoints_steps=500)

What is the same as on TensorFlow (inherited from `loop.Trainer`): the loss of the model's objective contract,
each term normalised by its weight summed over the global batch before the backward pass; gradient
accumulation over micro-batches; clipping of the summed gradients to a global norm (1.0, the original's); the
progress, the metric lines and TensorBoard summaries; model.ckpt-N with Google's names and the `checkpoint`
index; the training state and each worker's input position under training_state/, written complete or not at
all and resumed from the newest intact one (a kill at any moment loses nothing that was saved). The input is
the same tf.data pipeline: TensorFlow on the host feeds JAX, batches handed over as NumPy.

What differs: devices come from `keras.distribution` instead of a tf.distribute strategy. With
`keras.distribution.set_distribution(keras.distribution.DataParallel())` (before the model is built) each
global batch is split over every device (on several hosts, after `keras.distribution.initialize()`, each
process reads its own shard of the input), the variables replicated; XLA sums the gradients. Without a
distribution the step runs on JAX's default device. The training state is a bundle of the variables' values
by position (model, optimizer, step; the dropout seeds are the model's non-trainable variables), readable
without TensorFlow (`formats.google.open_bundle`). float16 loss scaling is TensorFlow's only: use bfloat16.
"""

import dataclasses

import jax
import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.formats import google
from bert_tf.training import distribute, loop
from bert_tf.training.flops import measure_jax_peak_flops
from bert_tf.training.jax_step import TrainStep

STEP_NAME = "global_step"


def set_devices(name, num_gpus=None):
    """The devices of a run on JAX for the distribution strategy `name` (distribute.STRATEGIES' names, the same
    flags on both backends): one_device: JAX's default device (no distribution); mirrored: DataParallel over
    `num_gpus` (default all) of this host's devices; multi_worker_mirrored and tpu: every process of the
    cluster (`keras.distribution.initialize()`, which reads it from the environment: Cloud TPU's, or
    KERAS_DISTRIBUTION_JOB_ADDRESSES / _NUM_PROCESSES / _PROCESS_ID), DataParallel over all their devices."""
    if name not in distribute.STRATEGIES:
        raise ValueError(f"distribution_strategy={name!r} is not one of {', '.join(distribute.STRATEGIES)}")
    if name in ("multi_worker_mirrored", "tpu"):
        try:
            keras.distribution.initialize()
        except ValueError as e:  # jax.distributed found no cluster: "coordinator_address should be defined."
            raise ValueError(f"distribution_strategy={name} on JAX runs every process of a cluster, and this process "
                             f"found none ({e}); on a Cloud TPU VM JAX finds it by itself, elsewhere set "
                             "KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES and "
                             "KERAS_DISTRIBUTION_PROCESS_ID; on one host use one_device or mirrored") from None
        keras.distribution.set_distribution(keras.distribution.DataParallel())
    elif name == "mirrored":
        local = jax.local_devices()
        if num_gpus is not None and not 1 <= num_gpus <= len(local):
            raise ValueError(f"num_gpus={num_gpus} but this host has {len(local)} {local[0].platform} device(s)")
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=local[:num_gpus]))
    workers, replicas = distribute.num_workers(None), distribute.num_replicas(None)
    logging.info("Devices %s on JAX: %d %s device(s), process %d of %d", name, replicas, jax.default_backend(),
                 jax.process_index(), workers)


@dataclasses.dataclass
class _Restored:
    """`read`'s answer, with the method tf.train.Checkpoint's status has."""

    def assert_existing_objects_matched(self):
        return self


class _ArrayState:
    """The training state as named arrays: `model/<i>`, `optimizer/<i>` (the variables in order) and the step;
    `write(prefix)` writes a bundle, `read(prefix)` checks names and shapes before assigning anything."""

    def __init__(self, trainer):
        self.trainer = trainer

    def _variables(self):
        return {**{f"model/{i}": v for i, v in enumerate(self.trainer.model.variables)},
                **{f"optimizer/{i}": v for i, v in enumerate(self.trainer.optimizer.variables)}}

    def write(self, prefix):
        arrays = {name: np.asarray(v.value) for name, v in self._variables().items()}
        google.write_tensors(prefix, {**arrays, STEP_NAME: np.asarray(self.trainer.step, np.int64)})

    def read(self, prefix):
        shapes, read = google.open_bundle(prefix)
        variables = self._variables()
        expected = {name: tuple(v.shape) for name, v in variables.items()}
        found = {name: tuple(shape) for name, shape in shapes.items() if name != STEP_NAME}
        if found != expected or STEP_NAME not in shapes:
            different = sorted(set(found.items()) ^ set(expected.items()))[:3]
            raise ValueError(f"its variables are not this model's and optimizer's (first differences: {different})")
        values = {name: read(name) for name in variables}  # every read before any assignment
        for name, variable in variables.items():
            variable.assign(values[name])
        self.trainer._step = int(read(STEP_NAME))
        return _Restored()


class JaxTrainer(loop.Trainer):
    """Trains `model` (an ObjectiveModel) with `optimizer` on Keras's JAX backend; the arguments are
    `loop.Trainer`'s without the strategy (the devices are keras.distribution's, see the module docstring);
    `use_xla` is always on (jax.jit)."""

    def __init__(self, model, optimizer, global_batch_size, num_accumulation_steps=1, clip_norm=1.0,
                 flops_per_example=None):
        if keras.backend.backend() != "jax":
            raise ValueError(f"JaxTrainer runs on Keras's JAX backend; this process's is {keras.backend.backend()} "
                             "(set KERAS_BACKEND=jax before Keras is imported)")
        if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
            raise ValueError("mixed_float16 (loss scaling) trains on the TensorFlow backend only; on JAX use "
                             "bfloat16")
        self.distribution = keras.distribution.distribution()
        self._num_workers, replicas = distribute.num_workers(None), distribute.num_replicas(None)
        self._worker = jax.process_index()
        loop.check_arguments(optimizer, global_batch_size, replicas, num_accumulation_steps)
        self.model, self.optimizer, self.strategy = model, optimizer, None
        self.global_batch_size = global_batch_size
        self.num_accumulation_steps = num_accumulation_steps
        self.clip_norm = clip_norm
        self.flops_per_example = flops_per_example
        self._replicas = replicas
        self.is_chief = self._worker == 0
        self._step = 0
        self._update = TrainStep(model, optimizer, num_accumulation_steps, clip_norm)

    @property
    def num_replicas(self):
        return self._replicas

    @property
    def step(self):
        return self._step

    def input_context(self):
        return tf.distribute.InputContext(self._num_workers, self._worker, self._replicas)

    # ----------------------------------------------------------------------------------------- the step

    def _device_batch(self, batch):
        """A tf.data batch of this worker -> global jax arrays, split over the devices of the distribution."""
        arrays = {name: np.asarray(tensor) for name, tensor in batch.items()}
        if self.distribution is None:
            return jax.device_put(arrays)
        return {name: jax.make_array_from_process_local_data(
            self.distribution.get_data_layout(array.shape).backend_layout, array) for name, array in arrays.items()}

    def _run_steps(self, iterator, num_steps):
        values, per_step = self._update.values(), []
        for _ in range(num_steps):
            values, sums = self._update(values, self._device_batch(next(iterator)))
            per_step.append(sums)
            self._step += 1
        self._update.assign(values)
        return {name: np.asarray([np.float32(sums[name]) for sums in per_step]) for name in per_step[0]}

    def _eval_step(self, batch):
        return self._update.evaluate(self._update.values(), self._device_batch(batch))

    # ------------------------------------------------------------------------------------ checkpoints

    def _training_state(self):
        return _ArrayState(self)

    def _measure_peak(self):
        return measure_jax_peak_flops(keras.mixed_precision.global_policy().compute_dtype) * self._replicas
