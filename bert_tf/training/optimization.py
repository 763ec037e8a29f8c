"""Optimizers and the learning-rate schedule of BERT training.

`AdamWeightDecay` is the original's optimizer exactly (google-research/bert `optimization.py`): Adam without
bias correction, epsilon 1e-6, decoupled weight decay 0.01 that skips LayerNorm and bias variables, with a
linear warmup then linear decay to 0. Gradient clipping (global norm 1.0 in the original) is done by the
training loop after the cross-replica sum, where it means the same thing on any number of devices.
"""

import re

import keras
from keras import ops

from bert_tf.modeling.layers.tf_kernels import xla_kernel

# The original's `exclude_from_weight_decay`: regexes searched in the variable's path.
NO_DECAY_PATTERNS = ("LayerNorm", "layer_norm", "bias")
OPTIMIZERS = ("adam_weight_decay", "adamw", "lamb")


@keras.saving.register_keras_serializable(package="bert_tf")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The original schedule: `learning_rate * step / num_warmup_steps` while step < num_warmup_steps, then
    `learning_rate * (1 - min(step, num_train_steps) / num_train_steps) ** power` (power 1.0: linear decay to
    0 at num_train_steps). `step` is the number of updates already applied (0 for the first update, as the
    original's global_step)."""

    def __init__(self, learning_rate, num_train_steps, num_warmup_steps, power=1.0):
        if num_train_steps < 1 or not 0 <= num_warmup_steps <= num_train_steps:
            raise ValueError(f"num_warmup_steps={num_warmup_steps} and num_train_steps={num_train_steps}: "
                             "need 0 <= num_warmup_steps <= num_train_steps and num_train_steps >= 1")
        self.learning_rate = learning_rate
        self.num_train_steps = num_train_steps
        self.num_warmup_steps = num_warmup_steps
        self.power = power

    def __call__(self, step):
        step = ops.cast(step, "float32")
        done = ops.minimum(step, float(self.num_train_steps)) / float(self.num_train_steps)
        decayed = self.learning_rate * ops.power(1.0 - done, self.power)
        if not self.num_warmup_steps:
            return decayed
        warmup = self.learning_rate * step / float(self.num_warmup_steps)
        return ops.where(step < float(self.num_warmup_steps), warmup, decayed)

    def get_config(self):
        return {"learning_rate": self.learning_rate, "num_train_steps": self.num_train_steps,
                "num_warmup_steps": self.num_warmup_steps, "power": self.power}


def _no_decay(variable, patterns):
    return any(re.search(pattern, variable.path) for pattern in patterns)


@keras.saving.register_keras_serializable(package="bert_tf")
class AdamWeightDecay(keras.optimizers.Optimizer):
    """The original BERT optimizer (`AdamWeightDecayOptimizer`): per variable, with gradient g,

        m = beta_1 * m + (1 - beta_1) * g;   v = beta_2 * v + (1 - beta_2) * g**2
        update = m / (sqrt(v) + epsilon) + weight_decay_rate * w   (decay unless the path matches a pattern)
        w = w - learning_rate * update

    No bias correction by default. `bias_correction=True` scales the Adam term by
    sqrt(1 - beta_2**t) / (1 - beta_1**t) at update t (1-based): that is AdamW (Loshchilov & Hutter 2019),
    the same arithmetic as `keras.optimizers.AdamW` and torch's AdamW. Slots are named `adam_m` / `adam_v` as
    in Google's checkpoints. Variables are float32.

    The whole update of a variable is `adam_weight_decay_update` (keras.ops). On the TensorFlow backend it runs
    as one XLA kernel per variable (`tf_kernels.xla_kernel`: one pass reading w, m, v and the gradient, writing
    w, m, v), the gradient's scale (`apply(..., gradient_scale=)`: the loop's clipping factor) and the weight
    decay folded in; elsewhere the same function in keras.ops, which jax.jit fuses by itself.
    """

    def __init__(self, learning_rate=0.001, weight_decay_rate=0.0, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                 exclude_from_weight_decay=NO_DECAY_PATTERNS, bias_correction=False, name="AdamWeightDecay",
                 **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.weight_decay_rate = weight_decay_rate
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.exclude_from_weight_decay = tuple(exclude_from_weight_decay or ())
        self.bias_correction = bias_correction
        self._gradient_scale = None  # apply()'s gradient_scale, while it runs

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._m = [self.add_variable_from_reference(v, "adam_m") for v in var_list]
        self._v = [self.add_variable_from_reference(v, "adam_v") for v in var_list]
        # By index: under tf.distribute, update_step receives the per-device tf.Variable, which has no path.
        self._decay = [not _no_decay(v, self.exclude_from_weight_decay) for v in var_list]

    def apply(self, grads, trainable_variables=None, gradient_scale=None):
        """Keras' `apply`, with `gradient_scale` (None, or a float32 scalar tensor: the training loop's
        global-norm clipping factor) multiplying every gradient inside the update, where it costs no pass of
        its own over the gradients. Replicas of a tf.distribute strategy pass equal values."""
        self._gradient_scale = gradient_scale
        try:
            return super().apply(grads, trainable_variables)
        finally:
            self._gradient_scale = None

    def _scaled(self, gradient, dtype):
        """The gradient in `dtype`, times `apply`'s gradient_scale when one was given."""
        gradient = ops.cast(gradient, dtype)
        return gradient if self._gradient_scale is None else gradient * ops.cast(self._gradient_scale, dtype)

    def _moments(self, gradient, variable):
        """Updates the moments of `variable` for this step; returns (m, v, whether it takes weight decay)."""
        index = self._get_variable_index(variable)
        m, v = self._m[index], self._v[index]
        new_m, new_v = adam_moments(m, v, gradient, self.beta_1, self.beta_2)
        self.assign(m, new_m)
        self.assign(v, new_v)
        return m, v, self._decay[index]

    def _step_size(self, learning_rate):
        """The Adam term's factor at this update (t = iterations + 1): learning_rate, times
        sqrt(1 - beta_2**t) / (1 - beta_1**t) with bias correction."""
        if not self.bias_correction:
            return learning_rate
        step = ops.cast(self.iterations + 1, learning_rate.dtype)
        beta_1_power = ops.power(ops.cast(self.beta_1, learning_rate.dtype), step)
        beta_2_power = ops.power(ops.cast(self.beta_2, learning_rate.dtype), step)
        return learning_rate * ops.sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power)

    def update_step(self, gradient, variable, learning_rate):
        dtype, index = variable.dtype, self._get_variable_index(variable)
        learning_rate = ops.cast(learning_rate, dtype)
        hyper = dict(learning_rate=learning_rate, step_size=self._step_size(learning_rate), beta_1=self.beta_1,
                     beta_2=self.beta_2, epsilon=self.epsilon,
                     weight_decay_rate=self.weight_decay_rate if self._decay[index] else 0.0)
        m, v = self._m[index], self._v[index]
        if keras.backend.backend() == "tensorflow":
            scale = ops.ones((), dtype) if self._gradient_scale is None else self._gradient_scale
            _tensorflow_update(variable, m, v, gradient, scale, **hyper)
            return
        new_variable, new_m, new_v = adam_weight_decay_update(variable, m, v, self._scaled(gradient, dtype), **hyper)
        self.assign(m, new_m)
        self.assign(v, new_v)
        self.assign(variable, new_variable)

    def get_config(self):
        return {**super().get_config(), "weight_decay_rate": self.weight_decay_rate, "beta_1": self.beta_1,
                "beta_2": self.beta_2, "epsilon": self.epsilon,
                "exclude_from_weight_decay": list(self.exclude_from_weight_decay),
                "bias_correction": self.bias_correction}


def adam_weight_decay_update(variable, m, v, gradient, learning_rate, step_size, beta_1, beta_2, epsilon,
                             weight_decay_rate):
    """One AdamWeightDecay update of a variable, the math of every backend: (w, m, v, gradient of w's shape;
    scalars) -> (w, m, v) after the update. The decay (skipped at rate 0) uses w before the Adam term, as the
    original's `update = m / (sqrt(v) + epsilon) + weight_decay_rate * w`; step_size is the learning rate,
    bias-corrected for AdamW."""
    if weight_decay_rate:
        variable = variable - learning_rate * weight_decay_rate * variable
    m, v = adam_moments(m, v, gradient, beta_1, beta_2)
    return variable - step_size * m / (ops.sqrt(v) + epsilon), m, v


def adam_moments(m, v, gradient, beta_1, beta_2):
    """Adam's moments after a step with `gradient` (all of one shape): (beta_1 m + (1 - beta_1) g,
    beta_2 v + (1 - beta_2) g^2)."""
    return beta_1 * m + (1.0 - beta_1) * gradient, beta_2 * v + (1.0 - beta_2) * ops.square(gradient)


def _tensorflow_update(variable, m, v, gradient, gradient_scale, **hyper):
    """`adam_weight_decay_update` of the TensorFlow variables (keras.Variable, or tf.Variable per device under
    tf.distribute) as one XLA kernel, the gradient cast to float32 and scaled inside it."""
    def handle(x):
        return (x.value if isinstance(x, keras.Variable) else x).handle

    _xla_update(handle(variable), handle(m), handle(v), gradient, gradient_scale, **hyper)


@xla_kernel
def _xla_update(variable, m, v, gradient, gradient_scale, learning_rate, step_size, beta_1, beta_2, epsilon,
                weight_decay_rate):
    import tensorflow as tf  # the TensorFlow backend's kernel

    def read(handle):
        return tf.raw_ops.ReadVariableOp(resource=handle, dtype=tf.float32)

    gradient = tf.cast(gradient, tf.float32) * gradient_scale
    new = adam_weight_decay_update(read(variable), read(m), read(v), gradient, learning_rate, step_size, beta_1,
                                   beta_2, epsilon, weight_decay_rate)
    for handle, value in zip((variable, m, v), new):
        tf.raw_ops.AssignVariableOp(resource=handle, value=value)


@keras.saving.register_keras_serializable(package="bert_tf")
class Lamb(AdamWeightDecay):
    """LAMB (You et al. 2020, "Large Batch Optimization for Deep Learning", Algorithm 2): bias-corrected Adam
    direction plus decoupled weight decay, scaled per variable by the trust ratio ||w|| / ||update|| (1 when
    either norm is 0). Variables excluded from weight decay (LayerNorm, bias) are also excluded from the
    trust ratio, as in the NVIDIA and TF-Addons implementations used for BERT."""

    def __init__(self, learning_rate=0.001, weight_decay_rate=0.0, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                 exclude_from_weight_decay=NO_DECAY_PATTERNS, name="Lamb", **kwargs):
        super().__init__(learning_rate, weight_decay_rate, beta_1, beta_2, epsilon, exclude_from_weight_decay,
                         bias_correction=True, name=name, **kwargs)

    def update_step(self, gradient, variable, learning_rate):
        gradient = self._scaled(gradient, variable.dtype)
        m, v, decays = self._moments(gradient, variable)
        step = ops.cast(self.iterations + 1, variable.dtype)
        m_hat = m / (1.0 - ops.power(ops.cast(self.beta_1, variable.dtype), step))
        v_hat = v / (1.0 - ops.power(ops.cast(self.beta_2, variable.dtype), step))
        update = m_hat / (ops.sqrt(v_hat) + self.epsilon)
        ratio = 1.0
        if decays:
            if self.weight_decay_rate:
                update += self.weight_decay_rate * variable
            w_norm, u_norm = ops.norm(ops.reshape(variable, (-1,))), ops.norm(ops.reshape(update, (-1,)))
            ratio = ops.where((w_norm > 0) & (u_norm > 0), w_norm / ops.maximum(u_norm, 1e-30), 1.0)
        self.assign_sub(variable, ops.cast(learning_rate, variable.dtype) * ratio * update)


def clip_factor(norm, clip_norm):
    """The factor that clips gradients of global norm `norm` to `clip_norm`, as tf.clip_by_global_norm does:
    clip_norm / max(norm, clip_norm), NaN when the norm is not finite (the update then fails loudly)."""
    return ops.where(ops.isfinite(norm), clip_norm / ops.maximum(norm, clip_norm), float("nan"))


def create_optimizer(name, learning_rate, num_train_steps, num_warmup_steps, weight_decay_rate=0.01, decay_power=1.0,
                     loss_scaling=False):
    """The optimizer `name` (one of OPTIMIZERS) with the warmup + polynomial decay schedule.

    - adam_weight_decay: the original's AdamWeightDecay (no bias correction, epsilon 1e-6).
    - adamw: AdamW: the same with bias correction (the arithmetic of keras.optimizers.AdamW), epsilon 1e-6.
    - lamb: LAMB (`Lamb` above), for large batches.
    `loss_scaling`: wrap in a dynamic keras LossScaleOptimizer (for float16 mixed precision).
    Create it under the strategy scope that holds the model.
    """
    schedule = WarmupPolynomialDecay(learning_rate, num_train_steps, num_warmup_steps, decay_power)
    if name == "adam_weight_decay":
        optimizer = AdamWeightDecay(schedule, weight_decay_rate=weight_decay_rate)
    elif name == "lamb":
        optimizer = Lamb(schedule, weight_decay_rate=weight_decay_rate)
    elif name == "adamw":
        optimizer = AdamWeightDecay(schedule, weight_decay_rate=weight_decay_rate, bias_correction=True,
                                    name="AdamW")
    else:
        raise ValueError(f"optimizer={name!r} is not one of {', '.join(OPTIMIZERS)}")
    if loss_scaling:
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer
