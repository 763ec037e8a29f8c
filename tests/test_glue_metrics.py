"""Every GLUE metric on values computed by hand."""

import math

import numpy as np
import pytest

from bert_tf.evaluation import glue_metrics


def test_accuracy():
    assert glue_metrics.accuracy([0, 1, 1, 0], [0, 1, 0, 0]) == 0.75
    assert glue_metrics.accuracy(["a", "b"], ["a", "b"]) == 1.0


def test_f1_of_the_positive_class():
    # TP 2, FP 1, FN 1: precision = recall = 2/3.
    assert glue_metrics.f1_score([1, 1, 0, 0, 1], [1, 0, 0, 1, 1]) == pytest.approx(2 / 3)
    assert glue_metrics.f1_score([0, 0], [0, 0]) == 0.0  # never true nor predicted
    assert glue_metrics.f1_score([0, 2, 2], [2, 2, 1], positive=2) == pytest.approx(2 * 1 / (2 + 2))


def test_matthews_binary():
    # TP 3, FN 1, FP 2, TN 4: (3*4 - 2*1) / sqrt(5 * 4 * 6 * 5).
    labels = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    predictions = [1, 1, 1, 0, 1, 1, 0, 0, 0, 0]
    assert glue_metrics.matthews_corrcoef(labels, predictions) == pytest.approx(10 / math.sqrt(600))
    # TP 2, FN 1, FP 1, TN 0: (0 - 1) / sqrt(3 * 3 * 1 * 1).
    assert glue_metrics.matthews_corrcoef([1, 1, 1, 0], [1, 0, 1, 1]) == pytest.approx(-1 / 3)
    assert glue_metrics.matthews_corrcoef([1, 0, 1], [1, 1, 1]) == 0.0  # one predicted class
    assert glue_metrics.matthews_corrcoef([0, 1], [0, 1]) == 1.0


def test_matthews_multiclass():
    # Gorodkin: correct c = 5 of s = 6; predicted counts (2, 3, 1), true counts (2, 2, 2):
    # (c s - p.t) / sqrt((s^2 - p.p)(s^2 - t.t)) = (30 - 12) / sqrt((36 - 14)(36 - 12)).
    value = glue_metrics.matthews_corrcoef([0, 1, 2, 0, 1, 2], [0, 1, 1, 0, 1, 2])
    assert value == pytest.approx(18 / math.sqrt(22 * 24))


def test_pearson():
    # deviations (-1.5, -.5, .5, 1.5) and (-3, -1, 0, 4): 11 / sqrt(5 * 26).
    assert glue_metrics.pearson([1, 2, 3, 4], [2, 4, 5, 9]) == pytest.approx(11 / math.sqrt(130))
    assert math.isnan(glue_metrics.pearson([1, 2, 3], [2, 2, 2]))


def test_spearman_with_ties_uses_average_ranks():
    # ranks (1, 2.5, 2.5, 4) and (1, 3, 2, 4): 4.5 / sqrt(4.5 * 5).
    assert glue_metrics.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert glue_metrics.spearman([1, 2, 3, 4], [1, 4, 9, 16]) == pytest.approx(1.0)
    assert glue_metrics.spearman(np.array([0.5, 0.1, 0.3]), np.array([3.0, 1.0, 2.0])) == pytest.approx(1.0)


def test_compute_and_per_class_f1():
    assert glue_metrics.compute(("f1", "accuracy"), [1, 0, 1, 1], [1, 0, 0, 1]) == {
        "f1": pytest.approx(0.8), "accuracy": 0.75}
    scores = glue_metrics.per_class_f1([0, 0, 1, 1], [0, 1, 1, 1], ["ham", "spam"])
    assert scores == {"f1_ham": pytest.approx(2 / 3), "f1_spam": pytest.approx(0.8),
                      "macro_f1": pytest.approx((2 / 3 + 0.8) / 2)}


def test_bad_input():
    with pytest.raises(ValueError, match="unknown metric"):
        glue_metrics.compute(("bleu",), [1], [1])
    with pytest.raises(ValueError, match="equal length"):
        glue_metrics.accuracy([1, 0], [1])
    with pytest.raises(ValueError, match="no examples"):
        glue_metrics.accuracy([], [])


def test_dev_results_of_logits_and_scores():
    logits = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, -1.0], [0.5, 0.0]])
    labels = np.array([0, 1, 1, 0])
    results = glue_metrics.logits_results(logits, labels, ["f1"], label_names=["neg", "pos"])
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    assert results["loss"] == pytest.approx(-np.mean(np.log(probabilities[np.arange(4), labels])))
    assert results["accuracy"] == 0.75 and results["f1"] == pytest.approx(2 / 3)  # predictions 0, 1, 0, 0
    assert results["f1_neg"] == pytest.approx(0.8) and results["macro_f1"] == pytest.approx((0.8 + 2 / 3) / 2)
    assert "f1_neg" not in glue_metrics.logits_results(logits, labels)
    scores = glue_metrics.regression_results(np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 4.0]), ["pearson"])
    assert scores["loss"] == pytest.approx(1 / 3) and 0.9 < scores["pearson"] < 1
