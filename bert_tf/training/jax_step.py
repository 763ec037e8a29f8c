"""The training step and the forward pass of an ObjectiveModel as jax.jit functions of the variables' values: what
`jax_loop.JaxTrainer` runs, importable without TensorFlow (bench/gpu_check_jax.py times it on a GPU host that
has none).

    step = TrainStep(model, optimizer, num_accumulation_steps=2, clip_norm=1.0)
    values = step.values()                       # (trainable, non-trainable, optimizer): lists of jax arrays
    values, sums = step(values, features)        # one optimizer update on a global batch
    step.assign(values)                          # back into the Keras variables

One update (the TensorFlow loop's arithmetic, `loop.Trainer`): each loss term normalised by its weight summed
over the whole global batch, the batch split into `num_accumulation_steps` micro-batches whose gradients are
added, the sum clipped to the global norm `clip_norm` (as tf.clip_by_global_norm), then the optimizer's
`stateless_apply`. Dropout draws from the model's seed generators, non-trainable variables threaded through the
micro-batches. On several devices (keras.distribution) the features and values are sharded arrays and XLA
adds the gradients across devices.
"""

import jax
import keras
from jax import numpy as jnp

from bert_tf.training.optimization import clip_factor


def jitted_forward(model, method="__call__"):
    """`model.<method>(inputs, training=False)` as one jax.jit function of the variables' values and the inputs
    (compiled once per input shape; the weights are arguments, not constants), called with the variables'
    current values: inputs -> outputs."""
    variables = model.variables

    def forward(values, inputs):
        with keras.StatelessScope(state_mapping=list(zip(variables, values))):
            return getattr(model, method)(inputs, training=False)

    compiled = jax.jit(forward)
    return lambda inputs: compiled([v.value for v in variables], inputs)


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
