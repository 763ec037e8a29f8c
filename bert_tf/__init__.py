"""bert_tf: a faithful TensorFlow 2 / Keras 3 port of BERT (Devlin et al. 2019).

Commands (installed by `pip install ".[tensorflow]"`, or `".[jax]"` for a JAX host without TensorFlow; `--help`
lists each one's flags; in a checkout also the original `python run_classifier.py ...` command lines), with the
guide (in the repository's docs/) that shows each at work:

    bert-tf-prepare-corpus, bert-tf-build-vocab, bert-tf-create-pretraining-data   docs/pretraining_data.md
    bert-tf-run-pretraining                                                        docs/pretraining.md
    bert-tf-run-classifier, bert-tf-run-ner, bert-tf-run-swag                      docs/fine_tuning.md
    bert-tf-run-squad, bert-tf-evaluate-squad                                      docs/squad.md
    bert-tf-extract-features                                                       docs/feature_extraction.md
    bert-tf-export-model                                                           docs/export_and_serving.md
    bert-tf-convert-checkpoint                                                     docs/interop.md
    bert-tf-encode-sentences, bert-tf-run-embedder                                 docs/embeddings.md

README.md is the front door (install, `make demo`, whose demo_output/minilm/ is a ready model directory, a
5-minute tour and the table of guides); docs/python_api.md covers the names below; docs/DESIGN.md: the
design, the layout and the contracts between the modules.

Python API (`help(bert_tf.BertEncoder)` and so on for each):

    BertConfig            the model's hyperparameters (Google's bert_config.json or HF config.json)
    BertEncoder           the Keras 3 encoder, with Google's checkpoint variable names
    BertPretrainer        masked LM + next sentence pretraining model
    BertClassifier        sentence (pair) classification / regression (run_classifier.py)
    BertTokenClassifier   token classification (run_ner.py)
    BertSpanLabeler       SQuAD answer spans (run_squad.py)
    BertMultipleChoice    multiple choice (run_swag.py)
    FullTokenizer         the original Python WordPiece tokenizer
    BertTokenizer         in-graph WordPiece tokenization (tensorflow-text): same ids as FullTokenizer
    BertPacker            [CLS] a [SEP] b [SEP] packing into input_ids / input_mask / segment_ids
    load_checkpoint       Google TF1, HuggingFace, KerasHub or bert_tf checkpoint -> a model's variables
    save_checkpoint       weights -> a bert_tf checkpoint (Google variable names)

These names are imported on first use (PEP 562), so pure-Python parts (tokenization, data creation
workers, `bert-tf-evaluate-squad`) do not pay for importing TensorFlow. They are in `__all__` but not in
`dir(bert_tf)`: listing them there would make `help(bert_tf)` import TensorFlow and print every method
each Keras class inherits.
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
    "BertTokenizer": "bert_tf.tokenization.in_graph",
    "BertPacker": "bert_tf.tokenization.in_graph",
    "load_checkpoint": "bert_tf.checkpoints",
    "save_checkpoint": "bert_tf.checkpoints",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    """`bert_tf.<name>` of the names above: imports the module that defines it (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'bert_tf' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
