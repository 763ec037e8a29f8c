"""bert_tf: a faithful TensorFlow 2 / Keras 3 port of BERT (Devlin et al. 2019)."""

from bert_tf.checkpoints import load_checkpoint, save_checkpoint
from bert_tf.config import BertConfig
from bert_tf.modeling.encoder import BertEncoder

__all__ = ["BertConfig", "BertEncoder", "load_checkpoint", "save_checkpoint"]
