"""The GLUE metrics (Wang et al. 2019): accuracy, F1, Matthews correlation, Pearson and Spearman correlation.

Pure NumPy on host-side arrays of labels and predictions, so the numbers are the leaderboard's definitions
(scikit-learn's / SciPy's conventions for degenerate inputs) and do not depend on batching or replicas.

    compute(("f1", "accuracy"), labels, predictions)  # -> {"f1": 0.88, "accuracy": 0.84}
"""

import numpy as np

from bert_tf.evaluation.probabilities import softmax_cross_entropy


def _pair(labels, predictions):
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    if labels.shape != predictions.shape or labels.ndim != 1:
        raise ValueError(f"labels {labels.shape} and predictions {predictions.shape} must be 1-D of equal length")
    if not len(labels):
        raise ValueError("no examples to score")
    return labels, predictions


def accuracy(labels, predictions):
    """Fraction of exact matches. labels, predictions: int or str [N]."""
    labels, predictions = _pair(labels, predictions)
    return float(np.mean(labels == predictions))


def f1_score(labels, predictions, positive=1):
    """F1 of the class `positive` (MRPC/QQP: 1): 2PR / (P + R); 0.0 when it is never predicted nor true."""
    labels, predictions = _pair(labels, predictions)
    true_positives = np.sum((predictions == positive) & (labels == positive))
    denominator = np.sum(predictions == positive) + np.sum(labels == positive)
    return float(2 * true_positives / denominator) if denominator else 0.0


def matthews_corrcoef(labels, predictions):
    """Matthews correlation (CoLA), in its multi-class form (Gorodkin 2004), which for two classes is
    (TP TN - FP FN) / sqrt((TP + FP)(TP + FN)(TN + FP)(TN + FN)). 0.0 when a denominator factor is 0."""
    labels, predictions = _pair(labels, predictions)
    classes, indexes = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
    confusion = np.zeros((len(classes), len(classes)), np.float64)
    np.add.at(confusion, (indexes[: len(labels)], indexes[len(labels):]), 1.0)
    true_counts, predicted_counts = confusion.sum(axis=1), confusion.sum(axis=0)
    total, correct = confusion.sum(), np.trace(confusion)
    numerator = correct * total - np.dot(predicted_counts, true_counts)
    denominator = np.sqrt((total ** 2 - np.dot(predicted_counts, predicted_counts))
                          * (total ** 2 - np.dot(true_counts, true_counts)))
    return float(numerator / denominator) if denominator else 0.0


def pearson(labels, predictions):
    """Pearson correlation (STS-B) of two float [N] arrays; NaN when either is constant (as SciPy)."""
    labels, predictions = _pair(labels, predictions)
    x = labels.astype(np.float64) - np.mean(labels)
    y = predictions.astype(np.float64) - np.mean(predictions)
    denominator = np.sqrt(np.dot(x, x) * np.dot(y, y))
    return float(np.dot(x, y) / denominator) if denominator else float("nan")


def _ranks(values):
    """1-based ranks, tied values sharing their mean rank (SciPy's rankdata "average")."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), np.float64)
    ranks[order] = np.arange(1, len(values) + 1)
    unique, inverse = np.unique(values, return_inverse=True)
    sums = np.bincount(inverse, weights=ranks, minlength=len(unique))
    counts = np.bincount(inverse, minlength=len(unique))
    return (sums / counts)[inverse]


def spearman(labels, predictions):
    """Spearman rank correlation (STS-B): Pearson of the average ranks."""
    labels, predictions = _pair(labels, predictions)
    return pearson(_ranks(labels), _ranks(predictions))


METRICS = {"accuracy": accuracy, "f1": f1_score, "mcc": matthews_corrcoef, "pearson": pearson,
           "spearman": spearman}


def compute(names, labels, predictions):
    """{name: value} for each metric name in `names` (keys of METRICS). labels/predictions: [N] arrays of
    class ids (classification) or floats (regression)."""
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; expected some of {sorted(METRICS)}")
    return {name: METRICS[name](labels, predictions) for name in names}


def per_class_f1(labels, predictions, label_names):
    """{"f1_<name>": F1 of that class} for every class id i with name label_names[i], and "macro_f1", their
    mean: the report of a user's own classification task, where no class is "the positive one"."""
    scores = {f"f1_{name}": f1_score(labels, predictions, positive=i) for i, name in enumerate(label_names)}
    scores["macro_f1"] = float(np.mean(list(scores.values())))
    return scores


def logits_results(logits, labels, names=(), label_names=None):
    """The dev results of a classifier's (or multiple-choice model's) logits float [N, C] for int labels [N]:
    {"loss": mean cross-entropy, "accuracy", each metric of `names`, and with `label_names` (a user's own
    task) every class's F1 and "macro_f1"}."""
    predictions = np.asarray(logits).argmax(-1)
    results = {"loss": float(np.mean(softmax_cross_entropy(logits, labels))), "accuracy": accuracy(labels, predictions)}
    results.update(compute(names, labels, predictions))
    if label_names is not None:
        results.update(per_class_f1(labels, predictions, label_names))
    return results


def result_names(names=(), label_names=None, regression=False):
    """The keys of `logits_results(..., names, label_names)`, or with `regression` of `regression_results(...,
    names)`, known before any prediction (a best_metric is checked against them before training)."""
    if regression:
        return ["loss", *names]
    per_class = [f"f1_{name}" for name in label_names] + ["macro_f1"] if label_names is not None else []
    return list(dict.fromkeys(["loss", "accuracy", *names, *per_class]))  # a task's metrics may name accuracy


def regression_results(scores, labels, names=()):
    """The dev results of a regression model's scores float [N] for float labels [N]: {"loss": mean squared
    error, each metric of `names`}."""
    return {"loss": float(np.mean((scores - labels) ** 2)), **compute(names, labels, scores)}
