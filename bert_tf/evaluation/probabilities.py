"""Probabilities and losses of logits on the host (NumPy, float64): what the fine-tuning scripts compute from
the logits that `FineTuner.predict` gathers (eval_loss, test_results.tsv)."""

import numpy as np


def log_softmax(logits):
    """logits float [..., C] -> float64 log-probabilities [..., C]."""
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def softmax_cross_entropy(logits, labels):
    """logits float [N, C], labels int [N] -> cross-entropy float64 [N]."""
    return -np.take_along_axis(log_softmax(logits), np.asarray(labels)[:, None], axis=-1)[:, 0]


def softmax(logits):
    """logits float [..., C] -> float64 probabilities [..., C]."""
    return np.exp(log_softmax(logits))
