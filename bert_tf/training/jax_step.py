"""The training steps on Keras's JAX backend (`JaxSteps`: the step part that `loop.Trainer` runs there), the
update and the forward pass of an ObjectiveModel as jax.jit functions of the variables' values (`TrainStep`); no
TensorFlow (bench/gpu_check_jax.py times the step on a GPU host that has none).

    step = TrainStep(model, optimizer, num_accumulation_steps=2, clip_norm=1.0)
    values = step.values()                       # (trainable, non-trainable, optimizer): lists of jax arrays
    values, sums = step(values, features)        # one optimizer update on a global batch
    step.assign(values)                          # back into the Keras variables

    steps = JaxSteps(devices.of(None), model, optimizer)   # what the loop runs: NumPy batches in, sums out

One update (the TensorFlow steps' arithmetic, `tf_steps.TfSteps`): each loss term normalised by its weight summed
over the whole global batch, the batch split into `num_accumulation_steps` micro-batches whose gradients are
added, the sum clipped to the global norm `clip_norm` (as tf.clip_by_global_norm), then the optimizer's
`stateless_apply`. Dropout draws from the model's seed generators, non-trainable variables threaded through the
micro-batches. On several devices (keras.distribution) the features and values are sharded arrays and XLA
adds the gradients across devices; on several hosts each process reads its own shard of the input. The
training state is a bundle of the variables' values by position (model, optimizer, step; the dropout seeds are
the model's non-trainable variables), written and read without TensorFlow. float16 loss scaling is TensorFlow's
only: use bfloat16.
"""

import jax
import keras
import numpy as np
from jax import numpy as jnp

from bert_tf.formats import google, tensor_bundle
from bert_tf.training.flops import measure_jax_peak_flops
from bert_tf.training.optimization import clip_factor

STEP_NAME = "global_step"


class TrainStep:
    """The jitted update of `model` (an ObjectiveModel) by `optimizer` (built here for the model's trainable
    variables), called as `step(values, features) -> (values, sums)` (the module docstring); `evaluate(values,
    features)` -> the sums of a forward pass without dropout. `sums`: the model's `objective_sums` added over
    the micro-batches, and `loss`, float32 scalars."""

    def __init__(self, model, optimizer, num_accumulation_steps=1, clip_norm=1.0):
        self.model, self.optimizer = model, optimizer
        self.num_accumulation_steps, self.clip_norm = num_accumulation_steps, clip_norm
        if not model.built:
            model.build()
        optimizer.build(model.trainable_variables)
        self._update = jax.jit(self._update_fn, donate_argnums=0)
        self.evaluate = jax.jit(self._evaluate_fn)

    def __call__(self, values, features):
        return self._update(values, features)

    def values(self):
        """The variables' current values: (trainable, non-trainable, optimizer), lists of jax arrays."""
        return tuple([v.value for v in variables] for variables in self._variables())

    def assign(self, values):
        """Puts `values` (as `values()` gives them) back into the Keras variables."""
        for variables, arrays in zip(self._variables(), values):
            for variable, array in zip(variables, arrays):
                variable.assign(array)

    def _variables(self):
        return self.model.trainable_variables, self.model.non_trainable_variables, self.optimizer.variables

    def _loss_and_sums(self, trainable, non_trainable, features, denominators):
        """This micro-batch's share of the global loss, (its sums, the updated non-trainable values)."""
        outputs, non_trainable = self.model.stateless_call(trainable, non_trainable, features, training=True)
        sums = self.model.objective_sums(features, outputs)
        loss = sum(keras.ops.divide_no_nan(sums[f"{t}_loss_sum"], d) for t, d in denominators.items())
        return loss, (sums, non_trainable)

    def _update_fn(self, values, features):
        trainable, non_trainable, optimizer_values = values
        denominators = {t: jnp.sum(w) for t, w in self.model.objective_weights(features).items()}
        k = self.num_accumulation_steps
        size = next(iter(features.values())).shape[0] // k
        parts = [{name: v[i * size:(i + 1) * size] for name, v in features.items()} for i in range(k)]
        gradient = jax.value_and_grad(self._loss_and_sums, has_aux=True)
        grads, sums = None, None
        for part in parts:
            (loss, (part_sums, non_trainable)), part_grads = gradient(trainable, non_trainable, part, denominators)
            part_sums = {**part_sums, "loss": loss}
            grads = part_grads if grads is None else [a + b for a, b in zip(grads, part_grads)]
            sums = part_sums if sums is None else {name: sums[name] + part_sums[name] for name in sums}
        if self.clip_norm:
            scale = clip_factor(jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in grads)), self.clip_norm)
            grads = [g * scale for g in grads]
        trainable, optimizer_values = self.optimizer.stateless_apply(optimizer_values, grads, trainable)
        return (trainable, non_trainable, optimizer_values), sums

    def _evaluate_fn(self, values, features):
        trainable, non_trainable, _ = values
        outputs, _ = self.model.stateless_call(trainable, non_trainable, features, training=False)
        return self.model.objective_sums(features, outputs)


class _ArrayState:
    """The training state as named arrays: `model/<i>`, `optimizer/<i>` (the variables in order) and the step;
    `write(prefix)` writes a bundle, `read(prefix)` checks names and shapes before assigning anything."""

    def __init__(self, steps):
        self.steps = steps

    def _variables(self):
        return {**{f"model/{i}": v for i, v in enumerate(self.steps.model.variables)},
                **{f"optimizer/{i}": v for i, v in enumerate(self.steps.optimizer.variables)}}

    def write(self, prefix):
        arrays = {name: np.asarray(v.value) for name, v in self._variables().items()}
        tensor_bundle.write_bundle(prefix, {**arrays, STEP_NAME: np.asarray(self.steps.step, np.int64)})

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
        self.steps._step = int(read(STEP_NAME))


class JaxSteps:
    """Optimizer updates of `model` (an ObjectiveModel) by `optimizer` on Keras's JAX backend, on `devices`
    (keras.distribution's: each global batch split over them, the variables replicated): the step part of
    `loop.Trainer` there, one `TrainStep` (always compiled)."""

    def __init__(self, devices, model, optimizer, num_accumulation_steps=1, clip_norm=1.0):
        if keras.backend.backend() != "jax":
            raise ValueError(f"JaxSteps run on Keras's JAX backend; this process's is {keras.backend.backend()} "
                             "(set KERAS_BACKEND=jax before Keras is imported)")
        if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
            raise ValueError("mixed_float16 (loss scaling) trains on the TensorFlow backend only; on JAX use "
                             "bfloat16")
        self.model, self.optimizer = model, optimizer
        self.distribution = keras.distribution.distribution()
        self._step = 0
        self._update = TrainStep(model, optimizer, num_accumulation_steps, clip_norm)

    @property
    def step(self):
        return self._step

    def _device_batch(self, batch):
        """A batch of this worker (NumPy arrays, or tensors NumPy can read) -> global jax arrays, split over the
        devices of the distribution."""
        arrays = {name: np.asarray(tensor) for name, tensor in batch.items()}
        if self.distribution is None:
            return jax.device_put(arrays)
        return {name: jax.make_array_from_process_local_data(
            self.distribution.get_data_layout(array.shape).backend_layout, array) for name, array in arrays.items()}

    def run(self, iterator, num_steps):
        """`num_steps` optimizer updates on the batches of `iterator` -> each step's sums, {name: float32 NumPy
        [num_steps]}."""
        values, per_step = self._update.values(), []
        for _ in range(num_steps):
            values, sums = self._update(values, self._device_batch(next(iterator)))
            per_step.append(sums)
            self._step += 1
        self._update.assign(values)
        return {name: np.asarray([np.float32(sums[name]) for sums in per_step]) for name in per_step[0]}

    def evaluate(self, batch):
        """The objective sums of one batch without dropout, {name: float}."""
        sums = self._update.evaluate(self._update.values(), self._device_batch(batch))
        return {name: float(value) for name, value in sums.items()}

    def state(self):
        return _ArrayState(self)

    def measure_peak(self):
        """The matmul peak FLOP/s of one device, in the compute dtype."""
        return measure_jax_peak_flops(keras.mixed_precision.global_policy().compute_dtype)
