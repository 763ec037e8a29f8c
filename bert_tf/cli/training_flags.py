"""The training flags that run_pretraining.py, run_squad.py and the fine-tuning scripts (finetuning_flags.py)
share, and the strategy they name (the precision, XLA and seed go into the run's options: `PretrainingOptions`,
`RunOptions`). A command-side module: the library outside bert_tf/cli/ never reads flags.

The original's TPU and loop flags with their defaults (`--use_tpu`, `--tpu_name`, `--tpu_zone`,
`--gcp_project`, `--master`, `--num_tpu_cores`, `--save_checkpoints_steps`, `--iterations_per_loop`), then
the new ones (`--steps_per_loop`, `--tpu`, `--distribution_strategy`, `--num_gpus`, `--mixed_precision`,
`--use_xla`, `--optimizer`, `--num_accumulation_steps`, `--seed`).
"""


import keras
from absl import flags, logging

from bert_tf.training import devices, distribute, optimization, precision

FLAGS = flags.FLAGS
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000, "Steps per tf.function call, and how often to log progress.")
flags.DEFINE_bool("use_tpu", False, "Train on TPU (same as --distribution_strategy=tpu).")
flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use: its name or a grpc://ip.address.of.tpu:8470 url.")
flags.DEFINE_string("tpu_zone", None, "[Optional] GCE zone of the Cloud TPU.")
flags.DEFINE_string("gcp_project", None, "[Optional] GCP project of the Cloud TPU.")
flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL (a TPU address, if --tpu_name is unset).")
flags.DEFINE_integer("num_tpu_cores", 8, "Only used if `use_tpu` is True: the TPU cores expected (a warning if "
                     "the TPU has another number).")
flags.DEFINE_alias("steps_per_loop", "iterations_per_loop")
flags.DEFINE_alias("tpu", "tpu_name")
flags.DEFINE_enum("distribution_strategy", "one_device", devices.STRATEGIES, "tf.distribute strategy; "
                  "multi_worker_mirrored reads the cluster from TF_CONFIG. With KERAS_BACKEND=jax: "
                  "keras.distribution's DataParallel over this host's devices (mirrored) or every host's "
                  "(multi_worker_mirrored, tpu: keras.distribution.initialize()).")
flags.DEFINE_integer("num_gpus", None, "GPUs to use with --distribution_strategy=mirrored (default: all; on JAX, "
                     "this host's devices of any kind).")
flags.DEFINE_enum("mixed_precision", "float32", list(precision.POLICIES), "Compute dtype of the "
                  "matmuls (variables, LayerNorm and softmax stay float32); float16 uses dynamic loss scaling.")
flags.DEFINE_bool("use_xla", None, "Compile the training step with XLA (default: on GPU and TPU, off on CPU, "
                  "where it is slower).")
flags.DEFINE_enum("optimizer", "adam_weight_decay", optimization.OPTIMIZERS, "adam_weight_decay: the "
                  "original's (no bias correction); adamw: Keras AdamW; lamb: LAMB (large batches).")
flags.DEFINE_integer("num_accumulation_steps", 1, "Micro-batches per optimizer step (train_batch_size is split).")
flags.DEFINE_integer("seed", None, "Seed of the initialisation, dropout and input order (needed for "
                     "reproducible runs; a resumed run continues exactly with or without it).")


def create_strategy():
    """The strategy of the flags. Call it first: a multi-worker strategy must exist before TensorFlow starts.
    On Keras's JAX backend: None, the flags' devices set as keras.distribution's (`devices.set_jax_devices`)."""
    name = "tpu" if FLAGS.use_tpu else FLAGS.distribution_strategy
    if keras.backend.backend() == "jax":
        devices.set_jax_devices(name, FLAGS.num_gpus)
        return None
    strategy = distribute.create_strategy(name, FLAGS.num_gpus, FLAGS.tpu_name or FLAGS.master, FLAGS.tpu_zone,
                                          FLAGS.gcp_project)
    if name == "tpu" and strategy.num_replicas_in_sync != FLAGS.num_tpu_cores:
        logging.warning("--num_tpu_cores=%d but the TPU has %d cores; using %d", FLAGS.num_tpu_cores,
                        strategy.num_replicas_in_sync, strategy.num_replicas_in_sync)
    return strategy
