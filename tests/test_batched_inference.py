"""bert_tf.batched_inference: the one inference path of FineTuner.predict, run_squad.py, SentenceEncoder and
FeatureExtractor. On tiny models: outputs in the input order and equal to the full-length forward (trimmed,
XLA-bucketed, full width), per-token outputs padded back, the log line of the path, progress lines and a
two-replica MirroredStrategy."""

import logging as python_logging
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import progress as progress_module
from bert_tf.batched_inference import BatchedInference, xla_widths
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from tests.helpers.finetuning_scripts import ROOT
from tests.helpers.model_inputs import random_inputs

TOLERANCE = 1e-5


def features_of(config, count=37, seq=40, seed=3):
    """Encoder inputs [count, seq] of random real lengths; one example uses every position. The padding ids
    are 5, not 0: only input_mask says what is real."""
    features = random_inputs(config, count, seq, seed)
    features["input_mask"][1] = 1
    features["input_ids"] = np.where(features["input_mask"] == 1, np.maximum(features["input_ids"], 1), 5)
    features["label_ids"] = np.arange(count, dtype=np.int32)  # not an input: left out of the batches
    return features


def recorded(inference, monkeypatch):
    """The list that fills with the (rows, width) of every batch `inference` runs."""
    shapes = []
    run = inference._run
    monkeypatch.setattr(inference, "_run", lambda inputs: shapes.append(inputs["input_ids"].shape) or run(inputs))
    return shapes


def assert_same_at_real_positions(got, expected, mask):
    for got_part, expected_part in zip(tf.nest.flatten(got), tf.nest.flatten(expected)):
        expected_part = np.asarray(expected_part)
        assert got_part.shape == expected_part.shape
        if got_part.ndim > 1 and got_part.shape[1] == mask.shape[1]:  # per token
            np.testing.assert_allclose(got_part[mask], expected_part[mask], atol=TOLERANCE)
        else:
            np.testing.assert_allclose(got_part, expected_part, atol=TOLERANCE)


@pytest.mark.parametrize("make", [lambda config: BertClassifier(config, num_labels=3),
                                  lambda config: BertTokenClassifier(config, num_labels=5),
                                  BertSpanLabeler], ids=["classifier", "token_classifier", "span_labeler"])
def test_trimmed_batches_equal_the_full_length_forward_in_input_order(tiny_config, make, monkeypatch, caplog):
    keras.utils.set_random_seed(1)
    model = make(tiny_config)
    features = features_of(tiny_config)
    expected = model(features, training=False)
    inference = BatchedInference(lambda inputs: model(inputs, training=False))
    shapes = recorded(inference, monkeypatch)
    with caplog.at_level(python_logging.INFO, logger="absl"):
        got = inference.predict(features, batch_size=8)
    assert_same_at_real_positions(got, expected, features["input_mask"].astype(bool))
    # shortest first, each batch cut to its longest rounded up to a multiple of 8; the last batch is short
    lengths = np.sort(features["input_mask"].sum(1))
    assert shapes == [(len(part), min(40, -(-part.max() // 8) * 8)) for part in np.split(lengths, [8, 16, 24, 32])]
    assert any(shape[1] < 40 for shape in shapes)
    per_token = [part for part in tf.nest.flatten(got) if part.ndim > 1 and part.shape[1] == 40]
    for part in per_token:  # beyond its batch's width an output is zeros, padded back
        assert not part[np.argmin(features["input_mask"].sum(1)), -1].any() and part[1, -1].any()
    assert [r.getMessage() for r in caplog.records if "sorted by length" in r.getMessage()] == [
        "Inference: batches of 8 sorted by length, each cut to its longest example rounded up to a multiple of "
        "8 (no XLA: one traced function for every width)"]


def test_several_sequences_per_example(tiny_config):
    keras.utils.set_random_seed(2)
    model = BertMultipleChoice(tiny_config)
    features = {k: v.reshape(9, 3, 24) for k, v in random_inputs(tiny_config, 27, 24, seed=4).items()}
    features["input_mask"][0, 1] = 1
    got = BatchedInference(lambda inputs: model(inputs, training=False)).predict(features, batch_size=4)
    np.testing.assert_allclose(got, model(features, training=False), atol=TOLERANCE)


def test_xla_buckets_the_widths_and_fills_the_rows(tiny_config, monkeypatch, caplog):
    assert xla_widths(40) == [8, 16, 32, 40] and xla_widths(384) == [8, 16, 32, 64, 128, 256, 384]
    assert xla_widths(8) == [8] and xla_widths(5) == [5]
    keras.utils.set_random_seed(1)
    model = BertTokenClassifier(tiny_config, num_labels=5)
    features = features_of(tiny_config)
    inference = BatchedInference(lambda inputs: model(inputs, training=False), use_xla=True)
    shapes = recorded(inference, monkeypatch)
    with caplog.at_level(python_logging.INFO, logger="absl"):
        got = inference.predict(features, batch_size=8, description="prediction")
    assert_same_at_real_positions(got, model(features, training=False), features["input_mask"].astype(bool))
    assert {rows for rows, _ in shapes} == {8} and {width for _, width in shapes} <= {8, 16, 32, 40}
    assert len(shapes) == 5 and len(set(shapes)) < len(shapes)  # 37 examples: the last batch filled up
    assert ("prediction: batches of 8 sorted by length, each cut to the smallest of the widths 8, 16, 32, 40 that "
            "holds its longest, filled up to 8 rows (XLA: one program per width)") in caplog.text


def test_full_width_keeps_every_position(tiny_config, monkeypatch):
    """trim=False (run_squad.py: the n-best ranks every position, padding included): full-width batches."""
    keras.utils.set_random_seed(1)
    model = BertSpanLabeler(tiny_config)
    features = features_of(tiny_config)
    inference = BatchedInference(lambda inputs: model(inputs, training=False), trim=False)
    shapes = recorded(inference, monkeypatch)
    got = inference.predict(features, batch_size=16)
    assert {width for _, width in shapes} == {40}
    expected = model(features, training=False)
    for name in expected:  # every position, padding included
        np.testing.assert_allclose(got[name], expected[name], atol=TOLERANCE)


def test_progress_lines(tiny_config, monkeypatch, caplog):
    monkeypatch.setattr(progress_module, "QUIET_SECONDS", 0.0)
    monkeypatch.setattr(progress_module, "LOG_SECONDS", 0.0)
    keras.utils.set_random_seed(1)
    model = BertClassifier(tiny_config, num_labels=3)
    inference = BatchedInference(lambda inputs: model(inputs, training=False))
    with caplog.at_level(python_logging.INFO, logger="absl"):
        inference.predict(features_of(tiny_config, count=20), batch_size=8, description="scoring", unit="windows")
        inference.predict(features_of(tiny_config, count=3), batch_size=8)  # no description: no progress
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("scoring  ")]
    assert [line.split("  ")[1] for line in lines] == ["8/20 windows", "16/20 windows", "20/20 windows",
                                                       "20/20 windows"]
    assert "ETA" in lines[1] and " in 0:00:" in lines[-1]
    assert not [r for r in caplog.records if "/3 " in r.getMessage()]


MIRRORED = """
import sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
import numpy as np
from absl import logging
from bert_tf.batched_inference import BatchedInference
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from tests.helpers.configs import tiny_config
from tests.helpers.model_inputs import random_inputs
logging.set_verbosity(logging.INFO)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
keras.utils.set_random_seed(1)
with strategy.scope():
    model = BertTokenClassifier(tiny_config(), num_labels=5)
    model.build()
features = random_inputs(tiny_config(), 21, 40, seed=2)
for xla in (False, True):
    got = BatchedInference(lambda x: model(x, training=False), xla, strategy).predict(features, 8)
    expected = np.asarray(model(features, training=False))
    real = features["input_mask"].astype(bool)
    print("max difference", xla, float(np.abs(got[real] - expected[real]).max()), got.shape == expected.shape)
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_batches_are_split_among_the_replicas_of_a_mirrored_strategy():
    done = subprocess.run([sys.executable, "-c", MIRRORED], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "split among 2 replicas" in done.stderr, done.stderr[-3000:]
    lines = [line.split() for line in done.stdout.splitlines() if line.startswith("max difference")]
    assert [line[2] for line in lines] == ["False", "True"] and all(line[4] == "True" for line in lines)
    assert all(float(line[3]) <= TOLERANCE for line in lines), lines
