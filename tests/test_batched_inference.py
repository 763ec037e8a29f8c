"""bert_tf.batched_inference: the one inference path of FineTuner.predict, run_squad.py, SentenceEncoder and
FeatureExtractor. On tiny models: outputs in the input order and equal to the full-length forward (trimmed,
XLA-bucketed, full width), per-token outputs padded back, the log line of the path, progress lines, a real
token of id 0 kept (the mask comes from the lengths), a two-replica MirroredStrategy, and feature extraction
read in sorted windows but written in input order."""

import json
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
from bert_tf.embedding import SentenceEncoder, padded_features
from bert_tf.extraction import FeatureExtractor, InputExample, write_features
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder
from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from tests.helpers.configs import script_config
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


class _Recorded:
    """A forward function (tf_inference.TfForward, batched_inference.JaxForward) that records each batch's shape."""

    def __init__(self, forward, shapes):
        self.forward, self.shapes, self.replicas = forward, shapes, forward.replicas

    def width_axes(self, inputs):
        return self.forward.width_axes(inputs)

    def __call__(self, inputs):
        self.shapes.append(inputs["input_ids"].shape)
        return self.forward(inputs)


def recorded(inference, monkeypatch):
    """The list that fills with the (rows, width) of every batch `inference` runs."""
    shapes = []
    run = inference.function
    monkeypatch.setattr(inference, "function", _Recorded(run, shapes))
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


@pytest.mark.parametrize("strategy", [None, "default", "one_device"])
def test_several_sequences_per_example(tiny_config, strategy):
    """[N, C, T] inputs; no strategy, the default one (outside any scope) or one device: the batch runs as is."""
    strategy = {None: None, "default": tf.distribute.get_strategy(),
                "one_device": tf.distribute.OneDeviceStrategy("/cpu:0")}[strategy]
    keras.utils.set_random_seed(2)
    model = BertMultipleChoice(tiny_config)
    features = {k: v.reshape(9, 3, 24) for k, v in random_inputs(tiny_config, 27, 24, seed=4).items()}
    features["input_mask"][0, 1] = 1
    inference = BatchedInference(lambda inputs: model(inputs, training=False), strategy=strategy)
    assert inference.function.replicas == 1
    np.testing.assert_allclose(inference.predict(features, batch_size=4), model(features, training=False),
                               atol=TOLERANCE)


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


class WordTokenizer:
    """Words to ids from a list, "hello" being id 0: a vocabulary whose id 0 is a real token."""

    def __init__(self):
        self.vocab = {word: i for i, word in enumerate(["hello", "[CLS]", "[SEP]", "world", "a", "b", "c", "d"])}

    def tokenize(self, text):
        return text.split()

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab[token] for token in tokens]


def test_sentence_encoder_masks_by_length_not_by_id_0(tiny_config):
    features = padded_features([[1, 0, 2], [4]])
    np.testing.assert_array_equal(features["input_ids"], [[1, 0, 2], [4, 0, 0]])
    np.testing.assert_array_equal(features["input_mask"], [[1, 1, 1], [1, 0, 0]])
    keras.utils.set_random_seed(3)
    embedder = BertSentenceEmbedder(tiny_config, "mean", False)
    encoder = SentenceEncoder(embedder, WordTokenizer(), max_seq_length=16)
    texts = ["hello world", "a b c d hello a b c", "hello", "world a"]
    got = encoder.encode(texts, batch_size=2)
    for text, vector in zip(texts, got):  # each alone, every token real: the id-0 "hello" counts
        ids = np.array([encoder.token_ids(text)], np.int32)
        alone = embedder({"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)})
        np.testing.assert_allclose(vector, np.asarray(alone)[0], atol=TOLERANCE)
    ids = np.array([encoder.token_ids("hello world")], np.int32)
    masked = embedder({"input_ids": ids, "input_mask": (ids > 0).astype(np.int32), "segment_ids": 0 * ids})
    assert np.abs(np.asarray(masked)[0] - got[0]).max() > 1e-3  # what a mask of `ids > 0` gave


@pytest.fixture(scope="module")
def extractor(tokenizer):
    keras.utils.set_random_seed(5)
    encoder = BertEncoder(script_config())
    encoder.build()
    return FeatureExtractor(encoder, tokenizer, max_seq_length=32, layers=[-1, 0], batch_size=2)


def test_feature_extraction_in_sorted_batches_equals_the_full_length_forward(extractor, tokenizer, tmp_path):
    words = "the economy grew while taxes were cut and the budget was balanced again".split()
    lines = [" ".join(words[: 1 + (7 * i) % len(words)]) + (" ||| more words" if i % 5 == 0 else "")
             for i in range(41)]
    (tmp_path / "input.txt").write_text("".join(line + "\n" for line in lines))
    assert write_features(extractor, str(tmp_path / "input.txt"), str(tmp_path / "out.jsonl"), batch_size=2) == 41
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [record["linex_index"] for record in records] == list(range(41))  # 2 windows of 32, in order
    examples = [InputExample(i, *line.split(" ||| ")) for i, line in enumerate(lines)]
    for (_, tokens, values), record in zip(extractor.extract(examples), records):
        assert [feature["token"] for feature in record["features"]] == tokens
        assert values.shape == (2, len(tokens), 32)
        ids = np.zeros((1, 32), np.int32)
        ids[0, :len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
        sep = tokens.index("[SEP]")
        segments = np.zeros_like(ids)
        segments[0, sep + 1:len(tokens)] = 1
        full = extractor.encoder({"input_ids": ids, "input_mask": (np.arange(32) < len(tokens))[None].astype(np.int32),
                                  "segment_ids": segments})["encoder_outputs"]
        for j, layer in enumerate((-1, 0)):
            np.testing.assert_allclose(values[j], np.asarray(full[layer])[0, :len(tokens)], atol=TOLERANCE)
            written = np.array([feature["layers"][j]["values"] for feature in record["features"]])
            np.testing.assert_allclose(written, values[j], atol=1e-6)


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


def test_pairs_of_an_embedder_keep_their_embedding_axis(tiny_config):
    """A pair embedder's outputs [N, 2, H] have no axis that follows the width (H is unknown in its traced
    shape, and is not the width): they come back as computed, not padded as per-token outputs."""
    keras.utils.set_random_seed(5)
    model = BertSentenceEmbedder(tiny_config, "mean", True)
    features = {k: v.reshape(6, 2, 24) for k, v in random_inputs(tiny_config, 12, 24, seed=6).items()}
    features["input_mask"][0, 1] = 1
    got = BatchedInference(lambda inputs: model(inputs, training=False)).predict(features, batch_size=4)
    expected = model(features, training=False)
    for got_part, expected_part in zip(tf.nest.flatten(got), tf.nest.flatten(expected)):
        assert got_part.shape == tuple(expected_part.shape)
        np.testing.assert_allclose(got_part, expected_part, atol=TOLERANCE)
