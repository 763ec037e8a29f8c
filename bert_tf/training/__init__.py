"""Training shared by every script: optimizers, tf.distribute strategies and the one custom training loop.

Imports `bert_tf.modeling` (never the other way round); models define their objective, the loop runs it.
"""
