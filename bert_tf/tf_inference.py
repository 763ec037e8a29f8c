"""A forward pass as TensorFlow runs it for `batched_inference.BatchedInference`: one tf.function of a batch (any
rows, any width), compiled with XLA when asked, split among the replicas of a tf.distribute strategy that has
several in this process (MirroredStrategy, a TPU).

    forward = TfForward(lambda inputs: model(inputs, training=False), use_xla=False, strategy=None)
    axes = forward.width_axes(batch)      # per flattened output, the axis that follows the width, or None
    outputs = forward(batch)              # NumPy in, NumPy out (forward's nesting)
"""

import numpy as np
import tensorflow as tf


class TfForward:
    """`forward` (a function of a dict of int tensors [b, ..., w]) as a tf.function of NumPy batches.

    replicas: how many replicas of `strategy` each batch is split among (1: the default device, reading the
      strategy's variables: one replica, or a multi-worker strategy whose other workers take no part); a batch's
      rows must then be a multiple of it.
    """

    def __init__(self, forward, use_xla, strategy):
        self.forward, self.use_xla, self.strategy = forward, use_xla, strategy
        several = strategy is not None and strategy.num_replicas_in_sync > 1  # (the default strategy: one)
        local = several and strategy.num_replicas_in_sync == len(strategy.extended.worker_devices)
        self.replicas = strategy.num_replicas_in_sync if local else 1
        self._function = None
        self._spec = None

    def _build(self, inputs):
        """The traced function of `inputs`' structure ([None, ..., None]: any rows, any width, and any number of
        sequences per example: a batch of documents is cut to its most windows)."""
        self._spec = {k: tf.TensorSpec([None] * v.ndim, tf.as_dtype(v.dtype)) for k, v in inputs.items()}
        function = tf.function(self.forward, input_signature=[self._spec], jit_compile=self.use_xla)
        if self.replicas == 1:
            self._function = function
        else:
            strategy = self.strategy
            self._function = tf.function(lambda values: strategy.run(lambda inputs: function(inputs), args=(values,)),
                                         reduce_retracing=True)
        return function

    def width_axes(self, inputs):
        """Per output of `forward` (flattened), the axis that follows the inputs' width, or None: the axis unknown
        in the outputs traced at any width and known in a trace at the width 2. An axis unknown in both (e.g. a
        pair embedder's [N, 2, H]) is not one. Builds the function of `inputs`' structure."""
        any_width = self._build(inputs).get_concrete_function().structured_outputs
        fixed = {k: tf.TensorSpec([*v.shape[:-1], 2], v.dtype) for k, v in self._spec.items()}
        traced = tf.function(self.forward).get_concrete_function(fixed).structured_outputs
        return [next((axis for axis in range(1, a.rank or 0) if a[axis] is None and b[axis] is not None), None)
                for a, b in zip((t.shape for t in tf.nest.flatten(any_width)),
                                (t.shape for t in tf.nest.flatten(traced)))]

    def __call__(self, inputs):
        """`forward` of one batch (NumPy in and out), split among the replicas when there are several."""
        if self._function is None:
            self._build(inputs)
        if self.replicas == 1:
            return tf.nest.map_structure(np.asarray, self._function(inputs))
        parts = {k: np.split(v, self.replicas) for k, v in inputs.items()}
        values = self.strategy.experimental_distribute_values_from_function(
            lambda context: {k: tf.constant(v[context.replica_id_in_sync_group]) for k, v in parts.items()})
        results = self.strategy.experimental_local_results(self._function(values))
        return tf.nest.map_structure(lambda *ts: np.concatenate([t.numpy() for t in ts]), *results)
