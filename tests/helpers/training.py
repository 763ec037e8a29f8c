"""A tiny BertPretrainer trained by the custom loop (`loop.Trainer`, `trainers.create_trainer`) on the records of
pretraining_records: what the training-loop and damaged-state tests share."""

import glob
import os

import keras
import tensorflow as tf

from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from bert_tf.training import distribute, optimization, trainers
from tests.helpers import pretraining_records
from tests.helpers.configs import script_config


def pretraining_config(dropout=0.0):
    """The tiny config with the real uncased vocab, dropout `dropout` (off by default: deterministic steps)."""
    return script_config(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)


def make_trainer(batch_size, steps, accumulation=1, learning_rate=1e-3, seed=5, optimizer="adam_weight_decay"):
    """A one-device Trainer of a fresh BertPretrainer (seeded weights) for `steps` steps without warm-up."""
    keras.utils.set_random_seed(seed)
    strategy = distribute.create_strategy("one_device")
    with strategy.scope():
        model = BertPretrainer(pretraining_config())
        model.build()
        opt = optimization.create_optimizer(optimizer, learning_rate, steps, 0,
                                            loss_scaling=keras.mixed_precision.global_policy().name == "mixed_float16")
    return trainers.create_trainer(strategy, model, opt, batch_size, num_accumulation_steps=accumulation)


def dataset_fn(records, shuffle_seed=None):
    """The Trainer's dataset_fn(input_context, batch_size) over the records file `records`."""
    return lambda context, batch_size: pretraining_records.read_records(records, batch_size, input_context=context,
                                                                        shuffle_seed=shuffle_seed)


def summary_losses(model_dir):
    """{step: loss} from the TensorBoard events the chief wrote, read by TensorFlow's event reader."""
    losses = {}
    for file in glob.glob(os.path.join(model_dir, "train", "events*")):
        for event in tf.compat.v1.train.summary_iterator(file):
            for value in event.summary.value:
                if value.tag == "loss":
                    losses[event.step] = value.simple_value
    return losses
