"""Retrieval metrics of sentence embeddings: for each query, rank every candidate by cosine similarity."""

import numpy as np


def retrieval_metric_names(k=10):
    """The keys of `retrieval_metrics(..., k)`."""
    return ["accuracy_at_1", f"mrr_at_{k}"]


def retrieval_metrics(queries, candidates, k=10):
    """Query i's right answer is candidate i. queries, candidates: float [N, H].

    Returns {"accuracy_at_1": share of queries whose answer ranks first, f"mrr_at_{k}": mean of 1/rank of the
    answer (0 when it ranks below k)}; ties rank the answer after the candidates it ties with."""
    queries = queries / np.maximum(np.linalg.norm(queries, axis=-1, keepdims=True), 1e-12)
    candidates = candidates / np.maximum(np.linalg.norm(candidates, axis=-1, keepdims=True), 1e-12)
    scores = queries @ candidates.T  # [N, N]
    right = np.diagonal(scores)[:, None]
    ranks = np.sum(scores >= right, axis=1)  # the answer itself, those above it, those tied with it
    values = (np.mean(ranks == 1), np.mean(np.where(ranks <= k, 1.0 / ranks, 0.0)))
    return {name: float(value) for name, value in zip(retrieval_metric_names(k), values)}
