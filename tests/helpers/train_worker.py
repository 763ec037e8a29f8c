"""Subprocess entry point of the training-loop tests: trains a tiny BertPretrainer with `Trainer` on records
written by tests/helpers/pretraining_records.py (their tf.data reader, on either backend), on the strategy named
on the command line (with KERAS_BACKEND=jax: JAX's default device, strategy None).

    python -m tests.helpers.train_worker --records=r.tfrecord --model_dir=out --strategy=mirrored --logical_cpus=2 \
      --steps=20 --batch_size=8 [--accumulation=4] [--use_xla] [--dropout=0.1] [--shuffle] [--weights_out=w.npz] \
      [--init_checkpoint=other/model.ckpt-1]

Multi-worker: set TF_CONFIG. Per-step losses are in the TensorBoard events of model_dir/train.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main():
    parser = argparse.ArgumentParser()
    for name, kind, default in (("records", str, None), ("model_dir", str, None), ("strategy", str, "one_device"),
                                ("logical_cpus", int, 1), ("steps", int, 20), ("batch_size", int, 8),
                                ("accumulation", int, 1), ("dropout", float, 0.0), ("steps_per_loop", int, 1),
                                ("save_every", int, 1000), ("learning_rate", float, 1e-3),
                                ("weights_out", str, None), ("init_checkpoint", str, None)):
        parser.add_argument("--" + name, type=kind, default=default)
    parser.add_argument("--use_xla", action="store_true")
    parser.add_argument("--shuffle", action="store_true")
    args = parser.parse_args()

    import tensorflow as tf

    if args.logical_cpus > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * args.logical_cpus)
    import keras
    import numpy as np
    from absl import logging

    from bert_tf.checkpoints import load_checkpoint
    from bert_tf.modeling.tasks.pretrainer import BertPretrainer
    from bert_tf.training import devices, distribute, optimization, trainers
    from tests.helpers import pretraining_records
    from tests.helpers.configs import script_config

    logging.set_verbosity(logging.INFO)
    # First: multi-worker collectives need a fresh runtime.
    strategy = None if keras.backend.backend() == "jax" else distribute.create_strategy(args.strategy)
    keras.utils.set_random_seed(5)
    tf.config.experimental.enable_op_determinism()
    config = script_config(hidden_dropout_prob=args.dropout, attention_probs_dropout_prob=args.dropout)
    with devices.of(strategy).scope():
        model = BertPretrainer(config)
        model.build()
        if args.init_checkpoint:
            load_checkpoint(model, args.init_checkpoint)
        optimizer = optimization.create_optimizer("adam_weight_decay", args.learning_rate, args.steps, 2)
    trainer = trainers.create_trainer(strategy, model, optimizer, args.batch_size,
                                      num_accumulation_steps=args.accumulation, use_xla=args.use_xla)

    def dataset_fn(input_context, batch_size):
        return pretraining_records.read_records(args.records, batch_size, input_context=input_context,
                                                shuffle_seed=7 if args.shuffle else None)

    trainer.train(dataset_fn, args.model_dir, args.steps, args.steps_per_loop, args.save_every)
    if args.weights_out and trainer.is_chief:
        np.savez(args.weights_out, **{n: np.asarray(v) for n, v in model.checkpoint_variables().items()})


if __name__ == "__main__":
    main()
