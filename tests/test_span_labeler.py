"""BertSpanLabeler: the original run_squad.py head (names, math, loss), Keras fit, checkpoint names and
pretrained weights (the `.keras` round trip is test_layer_harness'). Training with the shared loop is tested
end to end in test_run_squad.py."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import load_checkpoint, save_checkpoint
from bert_tf.modeling.tasks.span_labeler import PADDING_LOGIT, BertSpanLabeler

BATCH, SEQ = 13, 7


def inputs(config, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, SEQ + 1, size=BATCH)
    mask = (np.arange(SEQ) < lengths[:, None]).astype(np.int32)
    labels = {"start_positions": (rng.integers(0, SEQ, BATCH) % lengths).astype(np.int32),
              "end_positions": (rng.integers(0, SEQ, BATCH) % lengths).astype(np.int32)}
    return {"input_ids": (rng.integers(1, config.vocab_size, (BATCH, SEQ)) * mask).astype(np.int32),
            "input_mask": mask, "segment_ids": (np.arange(SEQ) >= 3).astype(np.int32) * mask}, labels


def log_softmax(logits):
    logits = logits - logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def test_head_is_the_originals(tiny_config):
    model = BertSpanLabeler(tiny_config)
    features, labels = inputs(tiny_config)
    outputs = model({**features, **labels, "unique_ids": np.arange(BATCH)})
    assert sorted(outputs) == ["end_logits", "start_logits"]
    assert all(v.shape == (BATCH, SEQ) and v.dtype == "float32" for v in outputs.values())
    names = model.checkpoint_variables()
    assert tuple(names["cls/squad/output_weights"].shape) == (2, 32)
    assert tuple(names["cls/squad/output_bias"].shape) == (2,)
    assert len(names) == len(model.weights) and sum(n.startswith("bert/") for n in names) == len(names) - 2
    # The original: logits = final_hidden @ output_weights^T + output_bias, unstacked into start and end.
    names["cls/squad/output_bias"].assign([0.5, -0.25])
    hidden = model.encoder(features)["sequence_output"].numpy()
    expected = hidden @ names["cls/squad/output_weights"].numpy().T + [0.5, -0.25]
    # But at the padding: out of the softmax, and out of the n best positions a prediction ranks (the
    # padding's untrained logits took places of the n-best there).
    padding = np.asarray(features["input_mask"]) == 0
    assert padding.any() and not padding.all()
    expected[padding] = PADDING_LOGIT
    outputs = model(features)
    np.testing.assert_allclose(outputs["start_logits"], expected[..., 0], atol=1e-5)
    np.testing.assert_allclose(outputs["end_logits"], expected[..., 1], atol=1e-5)
    assert not model.encoder.pooler.trainable and all("pooler" not in v.path for v in model.trainable_variables)
    with pytest.raises(ValueError, match="inputs must be a dict with input_ids"):
        model(features["input_ids"])


def test_loss_is_the_mean_of_start_and_end_cross_entropy(tiny_config):
    model = BertSpanLabeler(tiny_config)
    features, labels = inputs(tiny_config)
    outputs = model(features)
    padding = np.where(features["input_mask"] == 1, 0.0, -np.inf)  # out of the softmax (the original: in it)
    start = -np.take_along_axis(log_softmax(outputs["start_logits"].numpy() + padding),
                                labels["start_positions"][:, None], 1)
    end = -np.take_along_axis(log_softmax(outputs["end_logits"].numpy() + padding), labels["end_positions"][:, None], 1)
    expected = (start.mean() + end.mean()) / 2  # the original's total_loss, over the real positions
    assert float(model.compute_loss({**features, **labels}, None, outputs)) == pytest.approx(expected, rel=1e-5)
    assert float(model.compute_loss(features, labels, outputs)) == pytest.approx(expected, rel=1e-5)
    real = {**features, **labels, "is_real_example": (np.arange(BATCH) < 9).astype(np.int32)}
    assert float(model.compute_loss(real, None, outputs)) == pytest.approx(
        (start[:9].mean() + end[:9].mean()) / 2, rel=1e-5)
    with pytest.raises(ValueError, match=r"no labels \['start_positions', 'end_positions'\]"):
        model.compute_loss(features, None, outputs)


@pytest.mark.slow
def test_fit_learns_and_predict(tiny_config):
    model = BertSpanLabeler(tiny_config)
    features, labels = inputs(tiny_config)
    data = tf.data.Dataset.from_tensor_slices({**features, **labels}).batch(BATCH)
    model.compile(keras.optimizers.Adam(3e-3), jit_compile=False)
    before = model.evaluate(data, verbose=0, return_dict=True)
    history = model.fit(data.repeat(), steps_per_epoch=8, epochs=1, shuffle=False, verbose=0)
    after = model.evaluate(data, verbose=0, return_dict=True)
    assert set(history.history) == {"loss", "span_loss", "span_accuracy"}
    assert after["span_loss"] < before["span_loss"] and after["span_accuracy"] > before["span_accuracy"]
    assert model.predict(features, batch_size=BATCH, verbose=0)["start_logits"].shape == (BATCH, SEQ)


def test_checkpoint_names_round_trip_and_pretrained_encoder(tiny_config, minilm_dir, tmp_path):
    model = BertSpanLabeler(tiny_config)
    features, _ = inputs(tiny_config)
    prefix = str(tmp_path / "squad.ckpt")
    save_checkpoint(model, prefix, tiny_config)
    names = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    assert names["cls/squad/output_weights"] == [2, 32] and names["cls/squad/output_bias"] == [2]
    restored = BertSpanLabeler(tiny_config)
    report = load_checkpoint(restored, prefix)
    assert report.missing == []
    np.testing.assert_allclose(restored(features)["end_logits"], model(features)["end_logits"], atol=1e-6)

    from bert_tf import BertConfig

    config = BertConfig.from_json_file(os.path.join(minilm_dir, "config.json"))
    pretrained = BertSpanLabeler(config)
    report = load_checkpoint(pretrained, minilm_dir)
    assert report.missing == ["cls/squad/output_bias", "cls/squad/output_weights"]

