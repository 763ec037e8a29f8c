"""tf.distribute strategies by name (on Keras's JAX backend the strategy is None: keras.distribution's devices,
`devices.set_jax_devices`); what a run's replicas, workers and chief are is `devices.of(strategy)`'s. TensorFlow
is imported by the functions that make a strategy, so that a JAX host without it imports this module.

Multi-worker training reads the cluster from the `TF_CONFIG` environment variable, e.g. for two local workers
`{"cluster": {"worker": ["127.0.0.1:12345", "127.0.0.1:12346"]}, "task": {"type": "worker", "index": 0}}`.
"""

import keras
from absl import logging

from bert_tf.training import devices


def create_strategy(name, num_gpus=None, tpu=None, tpu_zone=None, gcp_project=None):
    """The tf.distribute strategy `name` (one of devices.STRATEGIES).

    - one_device: the first GPU, else the CPU.
    - mirrored: `num_gpus` GPUs (default all) of this machine; on a machine without GPUs, every logical CPU
      device (one unless `tf.config.set_logical_device_configuration` split the CPU).
    - multi_worker_mirrored: synchronous data parallelism over the workers of `TF_CONFIG` (one worker when
      it is unset), with all the GPUs of each worker.
    - tpu: `tpu` is the TPU name or grpc:// address (None: the TPU of this VM).
    """
    import tensorflow as tf  # here: on JAX this module is imported for current_strategy alone

    # Physical, not logical, devices: listing logical ones starts the runtime, and a multi-worker strategy must
    # be created before that.
    gpus = [f"/gpu:{i}" for i in range(len(tf.config.list_physical_devices("GPU")))]
    if num_gpus is not None and num_gpus > len(gpus):
        raise ValueError(f"num_gpus={num_gpus} but this machine has {len(gpus)} GPU(s)")
    if name == "one_device":
        strategy = tf.distribute.OneDeviceStrategy(gpus[0] if gpus and num_gpus != 0 else "/cpu:0")
    elif name == "mirrored":
        if gpus and num_gpus != 0:
            device_names = gpus[:num_gpus]
        else:
            device_names = [d.name for d in tf.config.list_logical_devices("CPU")]
        strategy = tf.distribute.MirroredStrategy(device_names)
    elif name == "multi_worker_mirrored":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    elif name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "", zone=tpu_zone,
                                                                    project=gcp_project)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    else:
        raise ValueError(f"distribution_strategy={name!r} is not one of {', '.join(devices.STRATEGIES)}")
    where = devices.of(strategy)
    logging.info("Strategy %s: %d replica(s) in sync, worker %d of %d", name, where.num_replicas,
                 where.worker_index, where.num_workers)
    return strategy


def current_strategy():
    """The strategy of the enclosing `strategy.scope()`, else one_device (`create_strategy`): what a run
    called from Python without a strategy runs on (TensorFlow's default strategy cannot train). None on Keras's
    JAX backend, whose devices are keras.distribution's (`devices.set_jax_devices`)."""
    if keras.backend.backend() == "jax":
        return None
    import tensorflow as tf

    return tf.distribute.get_strategy() if tf.distribute.has_strategy() else create_strategy("one_device")
