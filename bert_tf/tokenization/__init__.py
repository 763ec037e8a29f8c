"""BERT's WordPiece tokenization, three ways with the same ids:

    full_tokenizer.py   the original's Python tokenizer (FullTokenizer = BasicTokenizer + WordpieceTokenizer),
                        character for character; pure Python. Its public names are this package's, as the
                        original's `tokenization` module: `from bert_tf.tokenization import FullTokenizer`.
    in_graph.py         BertTokenizer / BertPacker: the same tokenization as TensorFlow ops (tensorflow-text),
                        for tf.data pipelines and SavedModel serving.
    lite.py             LiteTokenizer: the same again from LiteRT-compatible ops, for the .tflite export.
"""

from bert_tf.tokenization.full_tokenizer import (
    BasicTokenizer,
    FullTokenizer,
    WordpieceTokenizer,
    convert_to_unicode,
    is_cjk,
    is_control,
    is_punctuation,
    is_whitespace,
    load_vocab,
    strip_accents,
    vocab_from_tokens,
)

__all__ = ["BasicTokenizer", "FullTokenizer", "WordpieceTokenizer", "convert_to_unicode", "is_cjk", "is_control",
           "is_punctuation", "is_whitespace", "load_vocab", "strip_accents", "vocab_from_tokens"]
