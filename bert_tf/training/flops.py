"""MFU's numerator and denominator: the model FLOPs of a BERT training step, and the matmul peak of a device
(TensorFlow's or JAX's), measured. TensorFlow and JAX are imported only by the function that measures on them.
"""

import time


def training_flops_per_example(config, seq_length, num_predictions):
    """Approximate FLOPs of one training step (forward + backward) on one example, for MFU.

    Encoder: 6 N T + 12 L H T^2 (N = parameters of the Transformer layers, T = seq_length); masked LM head
    at `num_predictions` positions: 6 P (H^2 + H V); the embedding lookups are not FLOPs.
    """
    h, layers, t = config.hidden_size, config.num_hidden_layers, seq_length
    per_layer = 4 * h * h + 2 * h * config.intermediate_size
    encoder = 6 * layers * per_layer * t + 12 * layers * h * t * t
    return encoder + 6 * num_predictions * (h * h + h * config.vocab_size)


def matmul_peak(run, size):
    """FLOP/s of `run()`, which computes one size x size matmul and waits for it: the best of 20 timed calls
    after one untimed (the denominator of MFU; on a machine shared with other work, a low estimate can give
    MFU > 100%)."""
    run()
    best = float("inf")
    for _ in range(20):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return 2.0 * size ** 3 / best


def measure_peak_flops(device, dtype):
    """Matmul throughput (FLOP/s) of one TensorFlow `device` in `dtype` (`matmul_peak`; 2048 on a CPU, else
    8192)."""
    import tensorflow as tf

    size = 2048 if "CPU" in device.upper() else 8192
    with tf.device(device):
        a = tf.cast(tf.random.normal((size, size)), dtype)
        matmul = tf.function(lambda x: tf.reduce_sum(tf.cast(tf.matmul(x, x), tf.float32)))
        return matmul_peak(lambda: matmul(a).numpy(), size)


def measure_jax_peak_flops(dtype):
    """Matmul throughput (FLOP/s) of JAX's default device in `dtype` (`matmul_peak`; 2048 on a CPU, else 8192)."""
    import jax
    import numpy as np
    from jax import numpy as jnp

    size = 2048 if jax.default_backend() == "cpu" else 8192
    a = jnp.asarray(np.random.default_rng(0).standard_normal((size, size)), dtype)
    matmul = jax.jit(lambda x: jnp.sum(jnp.matmul(x, x).astype(jnp.float32)))
    return matmul_peak(lambda: matmul(a).block_until_ready(), size)
