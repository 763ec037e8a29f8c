"""create_trainer: the training loop (`loop.Trainer`) of a run's strategy with its backend's parts: the steps of
`tf_steps.TfSteps` on a tf.distribute strategy, of `jax_step.JaxSteps` on Keras's JAX backend (strategy None),
each imported only when chosen (JAX only on that backend, TensorFlow only on its own)."""

from bert_tf.training import devices, loop


def create_trainer(strategy, model, optimizer, global_batch_size, num_accumulation_steps=1, use_xla=False,
                   clip_norm=1.0, flops_per_example=None):
    """A `loop.Trainer` of `model` and `optimizer` on `strategy` (made under its scope), or for strategy None
    (Keras's JAX backend) on keras.distribution's devices, always compiled (`use_xla` is not read there).
    clip_norm: clip the summed gradients to this global norm (the original: 1.0); None: no clipping."""
    where = devices.of(strategy)
    loop.check_arguments(optimizer, global_batch_size, where.num_replicas, num_accumulation_steps)
    if strategy is None:
        from bert_tf.training.jax_step import JaxSteps

        steps = JaxSteps(where, model, optimizer, num_accumulation_steps, clip_norm)
    else:
        from bert_tf.training.tf_steps import TfSteps

        steps = TfSteps(where, model, optimizer, num_accumulation_steps, use_xla, clip_norm)
    return loop.Trainer(where, steps, model, optimizer, global_batch_size, num_accumulation_steps, flops_per_example)
