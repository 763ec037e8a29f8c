"""Training shared by every script: optimizers, tf.distribute strategies, the one custom training loop, and the
fine-tuning runner (FineTuner, early stopping on a dev metric).

Imports `bert_tf.modeling` (never the other way round); models define their objective
(bert_tf/modeling/tasks/objective.py), the loop runs it.
"""
