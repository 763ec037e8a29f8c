"""Where a run trains, on either Keras backend: its replicas (devices that each compute a slice of every global
batch), its workers (processes, each reading its own shard of the input), this process's place among them and
which one is the chief (it writes checkpoints and summaries). The one owner of those counts: the loop, the runs
and the inputs ask a `Devices`, never a strategy or JAX directly.

    devices = of(strategy)          # a tf.distribute strategy, or None on Keras's JAX backend
    devices.num_replicas, devices.num_workers, devices.worker_index, devices.is_chief
    devices.input_context()         # what an input shards by: InputContext(num_input_pipelines, input_pipeline_id)

On JAX the devices are keras.distribution's (`set_jax_devices` sets them from the same flags as the strategies):
one_device is JAX's default device, mirrored a DataParallel over this host's devices, multi_worker_mirrored and
tpu every host's after `keras.distribution.initialize()`. Imports neither TensorFlow nor JAX at the top.
"""

import contextlib
import dataclasses

import keras
from absl import logging

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


@dataclasses.dataclass(frozen=True)
class InputContext:
    """The shard of the input this worker reads (the attributes of tf.distribute.InputContext, without it)."""

    num_input_pipelines: int = 1
    input_pipeline_id: int = 0
    num_replicas_in_sync: int = 1

    def get_per_replica_batch_size(self, global_batch_size):
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"batch size {global_batch_size} is not a multiple of {self.num_replicas_in_sync} "
                             "replicas")
        return global_batch_size // self.num_replicas_in_sync


@dataclasses.dataclass(frozen=True)
class Devices:
    """The devices and processes of a run. strategy: its tf.distribute strategy, None on JAX. local_replicas:
    the replicas of this process."""

    strategy: object
    num_replicas: int
    num_workers: int
    worker_index: int
    local_replicas: int

    @property
    def is_chief(self):
        """True for the process that writes checkpoints and summaries: the chief, or worker 0 without one."""
        return self.worker_index == 0

    @property
    def backend(self):
        """"tensorflow" (a tf.distribute strategy) or "jax"."""
        return "jax" if self.strategy is None else "tensorflow"

    def input_context(self):
        """This worker's shard of the input."""
        return InputContext(self.num_workers, self.worker_index, self.num_replicas)

    def scope(self):
        """`strategy.scope()`, under which a run's model and optimizer are made (JAX: no scope)."""
        return contextlib.nullcontext() if self.strategy is None else self.strategy.scope()

    def use_xla(self, requested=None):
        """Whether the step is compiled with XLA: always on JAX (jax.jit); on TensorFlow `requested`, or by
        default on for GPUs and TPUs and off on CPUs (where the whole step measured slower)."""
        if self.strategy is None:
            return True
        if requested is not None:
            return requested
        import tensorflow as tf

        return bool(tf.config.list_physical_devices("GPU")) or isinstance(self.strategy, tf.distribute.TPUStrategy)


def task_index(cluster, task_type, task_id):
    """The index among the processes that feed input of the task `task_type`/`task_id` of `cluster` (a
    TF_CONFIG cluster dict): the chief, if any, is 0, then the workers; index 0 is the chief of the run (the
    one spelling of that rule: `Devices.is_chief`, and the commands' lock before any strategy exists)."""
    if task_type == "chief":
        return 0
    return len(cluster.get("chief", [])) + (task_id or 0)


def _tensorflow_devices(strategy):
    import tensorflow as tf

    cluster = None
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        cluster = strategy.cluster_resolver.cluster_spec().as_dict() or None
    workers, index = 1, 0
    if cluster:
        workers = len(cluster.get("chief", [])) + len(cluster.get("worker", []))
        index = task_index(cluster, strategy.cluster_resolver.task_type, strategy.cluster_resolver.task_id)
    return Devices(strategy, strategy.num_replicas_in_sync, workers, index, len(strategy.extended.worker_devices))


def _jax_devices():
    import jax

    distribution = keras.distribution.distribution()
    replicas = len(distribution.device_mesh.devices.flat) if distribution else 1
    return Devices(None, replicas, jax.process_count(), jax.process_index(), max(1, replicas // jax.process_count()))


def of(strategy):
    """The Devices of a run on `strategy` (a tf.distribute strategy), or, for None, on keras.distribution's
    devices of Keras's JAX backend (JAX's default device without a distribution)."""
    return _jax_devices() if strategy is None else _tensorflow_devices(strategy)


def set_jax_devices(name, num_gpus=None):
    """Sets keras.distribution's devices for a run on JAX from the strategy flags (`name` one of STRATEGIES):
    one_device: JAX's default device (no distribution); mirrored: DataParallel over `num_gpus` (default all) of
    this host's devices; multi_worker_mirrored and tpu: every process of the cluster
    (`keras.distribution.initialize()`, which reads it from the environment: Cloud TPU's, or
    KERAS_DISTRIBUTION_JOB_ADDRESSES / _NUM_PROCESSES / _PROCESS_ID), DataParallel over all their devices."""
    import jax

    if name not in STRATEGIES:
        raise ValueError(f"distribution_strategy={name!r} is not one of {', '.join(STRATEGIES)}")
    if name in ("multi_worker_mirrored", "tpu"):
        try:
            keras.distribution.initialize()
        except ValueError as e:  # jax.distributed found no cluster: "coordinator_address should be defined."
            raise ValueError(f"distribution_strategy={name} on JAX runs every process of a cluster, and this process "
                             f"found none ({e}); on a Cloud TPU VM JAX finds it by itself, elsewhere set "
                             "KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES and "
                             "KERAS_DISTRIBUTION_PROCESS_ID; on one host use one_device or mirrored") from None
        keras.distribution.set_distribution(keras.distribution.DataParallel())
    elif name == "mirrored":
        local = jax.local_devices()
        if num_gpus is not None and not 1 <= num_gpus <= len(local):
            raise ValueError(f"num_gpus={num_gpus} but this host has {len(local)} {local[0].platform} device(s)")
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=local[:num_gpus]))
    devices = _jax_devices()
    logging.info("Devices %s on JAX: %d %s device(s), process %d of %d", name, devices.num_replicas,
                 jax.default_backend(), devices.worker_index, devices.num_workers)
