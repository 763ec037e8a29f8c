"""tf.distribute strategies by name, and which worker this process is (on Keras's JAX backend the strategy is
None: `jax_loop` runs on keras.distribution's devices).

Multi-worker training reads the cluster from the `TF_CONFIG` environment variable, e.g. for two local workers
`{"cluster": {"worker": ["127.0.0.1:12345", "127.0.0.1:12346"]}, "task": {"type": "worker", "index": 0}}`.
"""

import contextlib

import keras
import tensorflow as tf
from absl import logging

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def create_strategy(name, num_gpus=None, tpu=None, tpu_zone=None, gcp_project=None):
    """The tf.distribute strategy `name` (one of STRATEGIES).

    - one_device: the first GPU, else the CPU.
    - mirrored: `num_gpus` GPUs (default all) of this machine; on a machine without GPUs, every logical CPU
      device (one unless `tf.config.set_logical_device_configuration` split the CPU).
    - multi_worker_mirrored: synchronous data parallelism over the workers of `TF_CONFIG` (one worker when
      it is unset), with all the GPUs of each worker.
    - tpu: `tpu` is the TPU name or grpc:// address (None: the TPU of this VM).
    """
    # Physical, not logical, devices: listing logical ones starts the runtime, and a multi-worker strategy must
    # be created before that.
    gpus = [f"/gpu:{i}" for i in range(len(tf.config.list_physical_devices("GPU")))]
    if num_gpus is not None and num_gpus > len(gpus):
        raise ValueError(f"num_gpus={num_gpus} but this machine has {len(gpus)} GPU(s)")
    if name == "one_device":
        strategy = tf.distribute.OneDeviceStrategy(gpus[0] if gpus and num_gpus != 0 else "/cpu:0")
    elif name == "mirrored":
        if gpus and num_gpus != 0:
            devices = gpus[:num_gpus]
        else:
            devices = [d.name for d in tf.config.list_logical_devices("CPU")]
        strategy = tf.distribute.MirroredStrategy(devices)
    elif name == "multi_worker_mirrored":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    elif name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "", zone=tpu_zone,
                                                                    project=gcp_project)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    else:
        raise ValueError(f"distribution_strategy={name!r} is not one of {', '.join(STRATEGIES)}")
    logging.info("Strategy %s: %d replica(s) in sync, worker %d of %d", name, strategy.num_replicas_in_sync,
                 worker_index(strategy), num_workers(strategy))
    return strategy


def current_strategy():
    """The strategy of the enclosing `strategy.scope()`, else one_device (`create_strategy`): what a run
    called from Python without a strategy runs on (TensorFlow's default strategy cannot train). None on Keras's
    JAX backend, whose devices are keras.distribution's (`jax_loop`): every function here takes None for them."""
    if keras.backend.backend() == "jax":
        return None
    return tf.distribute.get_strategy() if tf.distribute.has_strategy() else create_strategy("one_device")


def _jax_process():
    """(this process's index, the number of processes) of a JAX run."""
    import jax

    return jax.process_index(), jax.process_count()


def num_replicas(strategy):
    """Devices that each compute a slice of every batch (strategy None: those of keras.distribution's
    distribution on JAX, else JAX's default device)."""
    if strategy is None:
        distribution = keras.distribution.distribution()
        return len(distribution.device_mesh.devices.flat) if distribution else 1
    return strategy.num_replicas_in_sync


def scope(strategy):
    """`strategy.scope()`, under which a run's model and optimizer are made (None: no scope)."""
    return contextlib.nullcontext() if strategy is None else strategy.scope()


def _cluster(strategy):
    """The multi-worker cluster spec as a dict, or None for a single-process strategy."""
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return None
    return strategy.cluster_resolver.cluster_spec().as_dict() or None


def num_workers(strategy):
    """Number of processes that feed input: the chief and the workers of TF_CONFIG (JAX's processes for
    strategy None), else 1."""
    if strategy is None:
        return _jax_process()[1]
    cluster = _cluster(strategy)
    return len(cluster.get("chief", [])) + len(cluster.get("worker", [])) if cluster else 1


def worker_index(strategy):
    """This process's index among the processes that feed input (the chief, if any, is 0)."""
    if strategy is None:
        return _jax_process()[0]
    cluster = _cluster(strategy)
    if not cluster:
        return 0
    return task_index(cluster, strategy.cluster_resolver.task_type, strategy.cluster_resolver.task_id)


def task_index(cluster, task_type, task_id):
    """The index among the processes that feed input of the task `task_type`/`task_id` of `cluster` (a
    TF_CONFIG cluster dict): the chief, if any, is 0, then the workers; index 0 is the chief of the run (the
    one spelling of that rule: `is_chief`, and the commands' lock before any strategy exists)."""
    if task_type == "chief":
        return 0
    return len(cluster.get("chief", [])) + (task_id or 0)


def is_chief(strategy):
    """True for the process that writes checkpoints and summaries: the chief, or worker 0 without one."""
    return worker_index(strategy) == 0


def use_xla(strategy):
    """Whether XLA compiles the steps by default: on for GPUs and TPUs, off on CPUs (where it measures
    slower); always on JAX (strategy None: jax.jit)."""
    if strategy is None:
        return True
    return bool(tf.config.list_physical_devices("GPU")) or isinstance(strategy, tf.distribute.TPUStrategy)
