"""The one tiny BertConfig of the tests, and its variants through overrides."""

import json

from bert_tf import BertConfig

# All dimensions differ, so a transposed axis cannot pass by accident.
TINY = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
            max_position_embeddings=64, type_vocab_size=3, hidden_dropout_prob=0.1,
            attention_probs_dropout_prob=0.1)
# What the script and training tests change: the real uncased vocab (MiniLM's, 30,522 tokens) their text is
# tokenized with, and the 2 segment types of BERT's records and checkpoints.
MINILM_VOCAB_SIZE = 30522
SCRIPTS = dict(vocab_size=MINILM_VOCAB_SIZE, type_vocab_size=2)


def tiny_config(**overrides):
    """BertConfig: vocab 99, hidden 32, 2 layers, 4 heads, intermediate 37, 64 positions, 3 segment types,
    dropout 0.1; `overrides` replace any field (e.g. vocab_size=30522, hidden_act="relu")."""
    return BertConfig(**{**TINY, **overrides})


def script_config(**overrides):
    """tiny_config with the real uncased vocab and 2 segment types (SCRIPTS): the model of the tests that
    run the scripts or train on real text."""
    return tiny_config(**{**SCRIPTS, **overrides})


def write_config(path, config):
    """Writes `config` as a bert_config.json at `path` (plain json, not the library's writer under test);
    returns `path`."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config.to_dict(), f)
    return path
