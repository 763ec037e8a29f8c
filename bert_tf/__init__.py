"""bert_tf: a faithful TensorFlow 2 / Keras 3 port of BERT (Devlin et al. 2019).

The design, the layout and the contracts between the modules: docs/DESIGN.md in the repository; the
scripts (run_pretraining.py, run_classifier.py, ...) and their commands: README.md.

The names below are imported on first use (PEP 562), so pure-Python parts (tokenization, data creation
workers, `bert-tf-evaluate-squad`) do not pay for importing TensorFlow.
"""

import importlib

_EXPORTS = {
    "BertConfig": "bert_tf.config",
    "BertEncoder": "bert_tf.modeling.encoder",
    "BertPretrainer": "bert_tf.modeling.tasks.pretrainer",
    "BertClassifier": "bert_tf.modeling.tasks.classifier",
    "BertSpanLabeler": "bert_tf.modeling.tasks.span_labeler",
    "BertTokenClassifier": "bert_tf.modeling.tasks.token_classifier",
    "BertMultipleChoice": "bert_tf.modeling.tasks.multiple_choice",
    "FullTokenizer": "bert_tf.tokenization",
    "BertTokenizer": "bert_tf.in_graph_tokenization",
    "BertPacker": "bert_tf.in_graph_tokenization",
    "load_checkpoint": "bert_tf.checkpoints",
    "save_checkpoint": "bert_tf.checkpoints",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'bert_tf' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__():
    return __all__
