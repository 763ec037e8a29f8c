"""create_trainer: the training loop of a run's strategy, `loop.Trainer` on a tf.distribute strategy or its
subclass `jax_loop.JaxTrainer` on Keras's JAX backend (strategy None). Above both loops, so that neither
imports the other's module to choose."""

from bert_tf.training import loop


def create_trainer(strategy, model, optimizer, global_batch_size, num_accumulation_steps=1, use_xla=False,
                   clip_norm=1.0, flops_per_example=None):
    """A `loop.Trainer` on `strategy`, or for strategy None (Keras's JAX backend) a `jax_loop.JaxTrainer` (always
    compiled; `use_xla` is not read) on keras.distribution's devices."""
    if strategy is None:
        from bert_tf.training.jax_loop import JaxTrainer  # imports JAX, which only that backend needs
        return JaxTrainer(model, optimizer, global_batch_size, num_accumulation_steps, clip_norm, flops_per_example)
    return loop.Trainer(strategy, model, optimizer, global_batch_size, num_accumulation_steps, use_xla, clip_norm,
                        flops_per_example)
