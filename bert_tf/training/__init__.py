"""Training shared by every script: optimizers, tf.distribute strategies, the one custom training loop, and the
fine-tuning runner (FineTuner, early stopping on a dev metric).

Never imported by `bert_tf.modeling`: models define their objective (bert_tf/modeling/tasks/objective.py) and
the loop runs any such model without importing a model class. The design: docs/DESIGN.md.
"""
