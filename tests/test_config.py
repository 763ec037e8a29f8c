import json

import pytest

from bert_tf import BertConfig, BertEncoder, configs

# The exact parameter counts of the released Google checkpoints (embeddings + encoder + pooler).
PARAMETER_COUNTS = {"tiny": 4_385_920, "mini": 11_170_560, "small": 28_763_648, "medium": 41_373_184,
                    "base": 109_482_240, "large": 335_141_888}


@pytest.mark.parametrize("size", [pytest.param(size, marks=pytest.mark.slow) if size == "large" else size
                                  for size in sorted(PARAMETER_COUNTS)])  # large: > 10 s
def test_bundled_configs_have_the_exact_parameter_counts(size):
    config = BertConfig.from_json_file(configs.path(size))
    assert config.vocab_size == 30522 and config.type_vocab_size == 2
    encoder = BertEncoder(config)
    encoder.build()
    assert encoder.count_params() == PARAMETER_COUNTS[size]


def bert_parameters(vocab, hidden, layers, intermediate, positions=512, segments=2):
    """BERT's parameter count by its formula: embeddings (+ LayerNorm), per layer Q/K/V/output, LayerNorm,
    feed-forward in and out, LayerNorm, then the pooler."""
    embeddings = (vocab + positions + segments) * hidden + 2 * hidden
    layer = 4 * (hidden * hidden + hidden) + 2 * hidden + 2 * hidden * intermediate + intermediate + hidden + 2 * hidden
    return embeddings + layers * layer + hidden * hidden + hidden


@pytest.mark.parametrize("name, expected", [("chinese", 102_267_648), ("chinese_small", None)])
def test_bundled_chinese_configs(name, expected):
    """chinese: Google's chinese_L-12_H-768_A-12 (its released checkpoint holds 102,267,648 model parameters);
    chinese_small: L4/H512 on the same 21,128-character vocab."""
    config = BertConfig.from_json_file(configs.path(name))
    assert config.vocab_size == 21128
    encoder = BertEncoder(config)
    encoder.build()
    formula = bert_parameters(21128, config.hidden_size, config.num_hidden_layers, config.intermediate_size)
    assert encoder.count_params() == formula == (expected or formula)
    assert bert_parameters(30522, 768, 12, 3072) == PARAMETER_COUNTS["base"]  # the formula, on a released count


def test_reads_huggingface_config_json(minilm_dir):
    config = BertConfig.from_json_file(f"{minilm_dir}/config.json")
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (6, 384, 12)
    assert config.hidden_act == "gelu" and config.layer_norm_eps == 1e-12
    assert BertConfig.from_json_file(minilm_dir) == config  # a directory works too


def test_round_trips_through_json(tmp_path):
    config = BertConfig(vocab_size=99, hidden_size=32, num_attention_heads=4, hidden_act="gelu_new")
    config.to_json_file(tmp_path / "c.json")
    assert BertConfig.from_json_file(tmp_path / "c.json") == config


@pytest.mark.parametrize("values, message", [
    ({"vocab_size": 10, "hidden_size": 30, "num_attention_heads": 4},
     "hidden_size=30 is not a multiple of num_attention_heads=4"),
    ({"vocab_size": 0}, "vocab_size=0 must be a positive integer"),
    ({"vocab_size": 10, "hidden_dropout_prob": 1.5}, "hidden_dropout_prob=1.5 must be a number in [0, 1)"),
    ({"vocab_size": 10, "hidden_act": "gelu_fast"}, "hidden_act='gelu_fast' is not one of"),
    ({"vocab_size": 10, "hidden_sise": 3}, "unknown field(s) hidden_sise"),
    ({"hidden_size": 768}, "missing required field 'vocab_size'"),
    ({"vocab_size": 10, "model_type": "roberta"}, "model_type='roberta', expected 'bert'"),
    ({"vocab_size": 10, "num_hidden_layers": 2.5}, "num_hidden_layers=2.5 must be a positive integer"),
])
def test_invalid_values_name_the_field(tmp_path, values, message):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(values))
    with pytest.raises(ValueError) as error:
        BertConfig.from_json_file(path)
    assert message in str(error.value) and str(path) in str(error.value)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ValueError, match="config file not found"):
        BertConfig.from_json_file(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text('{"vocab_size": 10,')
    with pytest.raises(ValueError, match="not a valid JSON config file"):
        BertConfig.from_json_file(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="no bert_config.json or config.json"):
        BertConfig.from_json_file(tmp_path)


def test_vocab_and_sequence_length_checks():
    config = BertConfig(vocab_size=99, max_position_embeddings=64)
    config.check_vocab_size(99, "vocab.txt")
    with pytest.raises(ValueError, match="vocab.txt has 98 tokens but the config says vocab_size=99"):
        config.check_vocab_size(98, "vocab.txt")
    config.check_seq_length(64)
    with pytest.raises(ValueError, match="max_seq_length=65 must be between 2 and the config's "
                                         "max_position_embeddings=64"):
        config.check_seq_length(65)
