"""BertClassifier, BertTokenClassifier, BertMultipleChoice: shapes, names, objective, Keras fit, pretrained
weights, and the shared training loop (the `.keras` round trips are test_layer_harness')."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, load_checkpoint
from bert_tf.data.tasks import batches as in_memory
from bert_tf.data.tasks import pipeline as finetuning_pipeline
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier

BATCH, SEQ, CHOICES = 13, 7, 3


def inputs(config, shape=(BATCH, SEQ), seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, shape[-1] + 1, size=shape[:-1])
    mask = (np.arange(shape[-1]) < lengths[..., None]).astype(np.int32)
    return {"input_ids": (rng.integers(1, config.vocab_size, size=shape) * mask).astype(np.int32),
            "input_mask": mask, "segment_ids": np.zeros(shape, np.int32)}


def softmax_cross_entropy(logits, labels):
    logits = logits - logits.max(-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]


def test_classifier_has_the_original_head(tiny_config):
    model = BertClassifier(tiny_config, num_labels=3)
    features = inputs(tiny_config)
    logits = model(features)
    assert logits.shape == (BATCH, 3) and logits.dtype == "float32"
    names = model.checkpoint_variables()
    assert tuple(names["output_weights"].shape) == (3, 32) and tuple(names["output_bias"].shape) == (3,)
    assert len(names) == len(model.weights) and "bert/pooler/dense/kernel" in names
    pooled = model.encoder(features)["pooled_output"].numpy()
    expected = pooled @ names["output_weights"].numpy().T + names["output_bias"].numpy()
    np.testing.assert_allclose(logits, expected, atol=1e-5)  # dropout is off at inference
    assert BertClassifier(tiny_config, num_labels=1)(features).shape == (BATCH, 1)


def test_objective_weights_out_padding(tiny_config):
    model = BertClassifier(tiny_config, num_labels=3)
    features = {**inputs(tiny_config), "label_ids": np.arange(BATCH) % 3,
                "is_real_example": (np.arange(BATCH) < 10).astype(np.int32)}
    logits = model(features)
    expected = softmax_cross_entropy(logits.numpy(), features["label_ids"])[:10].mean()
    assert float(model.compute_loss(features, None, logits)) == pytest.approx(expected, rel=1e-5)
    regression = BertClassifier(tiny_config, num_labels=1)
    scores = regression(features)
    targets = np.linspace(0, 5, BATCH).astype(np.float32)
    loss = regression.compute_loss({k: v for k, v in features.items() if k != "label_ids"}, targets, scores)
    assert float(loss) == pytest.approx(np.mean((scores.numpy()[:10, 0] - targets[:10]) ** 2), rel=1e-5)
    with pytest.raises(ValueError, match="no labels"):
        model.compute_loss(inputs(tiny_config), None, logits)


def test_token_classifier_ignores_other_pieces(tiny_config):
    model = BertTokenClassifier(tiny_config, num_labels=5)
    features = inputs(tiny_config)
    logits = model(features).numpy()
    assert logits.shape == (BATCH, SEQ, 5)
    labels = np.where(np.random.default_rng(1).random((BATCH, SEQ)) < 0.5, -100, np.arange(SEQ) % 5).astype(np.int32)
    keep = labels != -100
    expected = softmax_cross_entropy(logits, np.maximum(labels, 0))[keep].mean()
    assert float(model.compute_loss(features, labels, logits)) == pytest.approx(expected, rel=1e-5)
    assert tuple(model.checkpoint_variables()["output_weights"].shape) == (5, 32)


def test_multiple_choice_scores_each_choice_alone(tiny_config):
    model = BertMultipleChoice(tiny_config)
    features = inputs(tiny_config, (4, CHOICES, SEQ))
    logits = model(features).numpy()
    assert logits.shape == (4, CHOICES)
    second = {k: v[:, 1] for k, v in features.items()}
    head = model.checkpoint_variables()
    pooled = model.encoder(second)["pooled_output"].numpy()
    np.testing.assert_allclose(logits[:, 1], (pooled @ head["output_weights"].numpy().T)[:, 0]
                               + head["output_bias"].numpy()[0], atol=1e-5)
    assert tuple(head["output_weights"].shape) == (1, 32)


@pytest.mark.slow
def test_fit_evaluate_predict(tiny_config):
    model = BertClassifier(tiny_config, num_labels=2)
    features = {**inputs(tiny_config), "label_ids": (np.arange(BATCH) % 2).astype(np.int32),
                "is_real_example": np.ones(BATCH, np.int32)}
    model.compile(keras.optimizers.Adam(1e-3), jit_compile=False)  # XLA compilation costs more than it saves here
    before = model.evaluate(finetuning_pipeline.make_dataset(features, BATCH, False), verbose=0, return_dict=True)
    history = model.fit(finetuning_pipeline.make_dataset(features, 4, True, seed=1), steps_per_epoch=8,
                        epochs=2, verbose=0)
    after = model.evaluate(finetuning_pipeline.make_dataset(features, BATCH, False), verbose=0, return_dict=True)
    assert set(history.history) == {"loss", "classification_loss", "classification_accuracy"}
    assert after["classification_loss"] < before["classification_loss"]
    assert model.predict(features, batch_size=BATCH, verbose=0).shape == (BATCH, 2)


def test_loads_pretrained_encoder_and_keeps_a_fresh_head(minilm_dir):
    config = BertConfig.from_json_file(os.path.join(minilm_dir, "config.json"))
    model = BertClassifier(config, num_labels=2)
    report = load_checkpoint(model, minilm_dir)
    assert report.missing == ["output_bias", "output_weights"]
    assert len(report.mapped) == len(model.checkpoint_variables()) - 2


@pytest.mark.slow
def test_trains_with_the_shared_loop(tiny_config, tmp_path):
    from bert_tf.training.trainers import create_trainer

    features = {**inputs(tiny_config), "label_ids": (np.arange(BATCH) % 3).astype(np.int32),
                "is_real_example": np.ones(BATCH, np.int32)}
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = BertClassifier(tiny_config, num_labels=3)
        optimizer = keras.optimizers.Adam(1e-3)
    trainer = create_trainer(strategy, model, optimizer, global_batch_size=4)
    results = trainer.train(lambda context, batch: finetuning_pipeline.make_dataset(
        features, batch, True, seed=0, input_context=context), str(tmp_path), num_train_steps=3, steps_per_loop=3,
        save_checkpoints_steps=3)
    assert set(results) == {"loss", "classification_loss", "classification_accuracy"}
    padded, count = in_memory.pad_to_multiple(features, 4)
    metrics = trainer.evaluate(finetuning_pipeline.make_dataset(padded, 4, False), num_steps=4)
    assert count == BATCH and metrics["global_step"] == 3
    restored = BertClassifier(tiny_config, num_labels=3)
    load_checkpoint(restored, str(tmp_path / "model.ckpt-3"))
    np.testing.assert_allclose(restored(features), model(features), atol=1e-6)


@pytest.mark.parametrize("make, shape", [
    (lambda config: BertClassifier(config, num_labels=3), (37, 40)),
    (lambda config: BertTokenClassifier(config, num_labels=5), (37, 40)),
    (lambda config: BertMultipleChoice(config), (19, CHOICES, 24))])
def test_predict_in_length_sorted_trimmed_batches_equals_full_length(tiny_config, make, shape):
    """FineTuner.predict drops the padding a batch shares; outputs equal the full-length forward, in order."""
    from bert_tf.training.finetuning import FineTuner, FineTuningOptions

    features = inputs(tiny_config, shape, seed=3)
    features["input_mask"][0] = 1  # one example uses the whole length, the second half at most 5 positions
    features["input_mask"][shape[0] // 2:, ..., 5:] = 0
    features["input_ids"] *= features["input_mask"]
    tuner = FineTuner(tf.distribute.OneDeviceStrategy("/cpu:0"), lambda: make(tiny_config), FineTuningOptions(),
                      "unused")
    expected = tuner.model(features, training=False).numpy()
    widths = [inputs["input_ids"].shape[-1] for _, inputs in in_memory.length_sorted_batches(features, 8)]
    assert widths[-1] == shape[-1] and min(widths) < shape[-1] and all(w % 8 == 0 or w == shape[-1] for w in widths)
    got = tuner.predict(features, batch_size=8)
    assert got.shape == expected.shape
    if got.ndim == 3:  # per token: the real positions (padding positions beyond a batch's width are zeros)
        real = features["input_mask"].astype(bool)
        np.testing.assert_allclose(got[real], expected[real], atol=1e-5)
        assert not got[-1, -1].any() and got[0, -1].any()  # a short example's last position was cut
    else:
        np.testing.assert_allclose(got, expected, atol=1e-5)
