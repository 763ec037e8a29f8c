"""Evaluation on the host: GLUE metrics, CoNLL's entity F1, the official SQuAD evaluation."""
