"""The training steps on TensorFlow: the step part that `loop.Trainer` runs on a tf.distribute strategy.

Why not `model.fit`: on TF 2.21 / Keras 3.15, fit under MirroredStrategy fails with jit_compile, with
steps_per_execution > 1 and with gradient accumulation (seen on 2 logical CPU devices). Here a `tf.function` runs
`num_steps` steps; each step is `strategy.run(step)` on every replica, where the forward and backward pass is one
`tf.function(jit_compile=use_xla)` per micro-batch and the optimizer update runs outside it.

    steps = TfSteps(devices.of(strategy), model, optimizer, num_accumulation_steps=2, use_xla=False)
    sums = steps.run(iterator, 10)       # {name: float32 NumPy [10]}: each step's objective sums and loss
    steps.state().write(prefix)          # model, optimizer, step, dropout RNG: a tf.train.Checkpoint bundle

Each loss term is normalised by its weight summed over the *global* batch (all replicas, all micro-batches)
before the backward pass, so one device, N replicas and N accumulation steps compute the same gradient. Gradients
are summed over the replicas, then clipped by their global norm, then applied. A
`keras.optimizers.LossScaleOptimizer` (float16) scales the loss and skips non-finite updates.
"""

import keras
import tensorflow as tf

from bert_tf.training import optimization
from bert_tf.training.flops import measure_peak_flops


def read_checkpoint(checkpoint, prefix):
    """Restores the tf.train.Checkpoint `checkpoint` (a training state, a tf.data iterator's position) from the
    bundle `prefix`: AssertionError when the bundle does not restore every object of it, ValueError with the
    first line of TensorFlow's message when its reader fails (a missing or damaged bundle)."""
    try:
        status = checkpoint.read(prefix)
        try:
            status.assert_existing_objects_matched()
        except AssertionError:
            status.expect_partial()  # no warning per unrestored value: the loop reports the reason
            raise
    except tf.errors.OpError as e:  # TF's checkpoint reader raises OpErrors: their message, one line
        raise ValueError(e.message.splitlines()[0] if e.message else type(e).__name__) from None


class _State:
    """The training state as a tf.train.Checkpoint (model, optimizer, step, dropout RNG): `write(prefix)`;
    `read(prefix)` raises when the bundle does not restore every object completely (`read_checkpoint`)."""

    def __init__(self, checkpoint):
        self.checkpoint = checkpoint

    def write(self, prefix):
        self.checkpoint.write(prefix)

    def read(self, prefix):
        read_checkpoint(self.checkpoint, prefix)


class TfSteps:
    """Optimizer updates of `model` (an ObjectiveModel) by `optimizer` on `devices.strategy` (both created under
    its scope): the step part of `loop.Trainer` on TensorFlow. use_xla: compile the forward/backward pass with XLA.
    clip_norm: clip the summed gradients to this global norm (None: no clipping)."""

    def __init__(self, devices, model, optimizer, num_accumulation_steps=1, use_xla=False, clip_norm=1.0):
        strategy = devices.strategy
        self.strategy, self.model, self.optimizer = strategy, model, optimizer
        self.num_accumulation_steps, self.clip_norm = num_accumulation_steps, clip_norm
        self._local_replicas = devices.local_replicas
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
    def step(self):
        """Training steps done (optimizer updates, skipped float16 overflow steps included)."""
        return int(self._step.numpy())

    def run(self, iterator, num_steps):
        """`num_steps` (>= 1) optimizer updates on the batches of `iterator` (a tf.data iterator of this worker's
        batches) -> each step's sums, {name: float32 NumPy [num_steps]}."""
        return {k: v.numpy() for k, v in self._train_loop(iterator, tf.constant(num_steps)).items()}

    def evaluate(self, batch):
        """The objective sums of one batch without dropout, {name: float}, summed over the replicas."""
        return {k: float(v) for k, v in self._eval_step(batch).items()}

    def state(self):
        """What a training state bundle holds (model, optimizer, step, dropout RNG)."""
        return _State(tf.train.Checkpoint(model=self.model, optimizer=self.optimizer, step=self._step,
                                          rng=self._rng_states))

    def measure_peak(self):
        """The matmul peak FLOP/s of one replica, in the compute dtype (`measure_peak_flops`)."""
        device = self.strategy.extended.worker_devices[0]
        return measure_peak_flops(device, keras.mixed_precision.global_policy().compute_dtype)

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
