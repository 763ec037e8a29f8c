"""Keras 3 layers and models of BERT. Imports neither `bert_tf.data` nor `bert_tf.training`."""

from bert_tf.modeling.encoder import BertEncoder

__all__ = ["BertEncoder"]
