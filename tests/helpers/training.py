"""A tiny BertPretrainer trained by the custom loop (`bert_tf.training.loop.Trainer`) on the records of
pretraining_records: what the training-loop and damaged-state tests share."""

import keras

from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from bert_tf.training import distribute, loop, optimization
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
    return loop.Trainer(strategy, model, opt, batch_size, num_accumulation_steps=accumulation)


def dataset_fn(records, shuffle_seed=None):
    """The Trainer's dataset_fn(input_context, batch_size) over the records file `records`."""
    return lambda context, batch_size: pretraining_records.read_records(records, batch_size, input_context=context,
                                                                        shuffle_seed=shuffle_seed)
