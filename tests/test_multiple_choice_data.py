"""SWAG CSV reading and the 4 x `[CLS] context [SEP] ending [SEP]` features."""

import os

import pytest

from bert_tf.data.tasks import multiple_choice
from bert_tf.tokenization import FullTokenizer
from tests.helpers.task_data import SWAG_HEADER as HEADER
from tests.helpers.task_data import SWAG_ROWS as ROWS


def test_reads_swag_and_builds_four_pairs(tmp_path, minilm_dir):
    path = tmp_path / "val.csv"
    path.write_text(HEADER + ROWS, encoding="utf-8")
    examples = multiple_choice.read_swag(str(path), "dev")
    assert [e.label for e in examples] == [0, 2] and examples[1].guid == "dev-2"
    assert examples[0].context.startswith("Members of the procession")
    assert examples[0].endings[0] == "A drum line passes by walking down the street playing their instruments."
    tokenizer = FullTokenizer(os.path.join(minilm_dir, "vocab.txt"))
    features = multiple_choice.convert_examples(examples, 24, tokenizer)
    assert features["input_ids"].shape == (2, 4, 24) and features["label_ids"].tolist() == [0, 2]
    tokens = tokenizer.convert_ids_to_tokens(features["input_ids"][0, 0].tolist())
    first_sep = tokens.index("[SEP]")
    assert tokens[0] == "[CLS]" and tokens[first_sep + 1:first_sep + 4] == ["a", "drum", "line"]
    assert tokens[-1] == "[SEP]" and features["segment_ids"][0, 0, first_sep + 1] == 1
    test = tmp_path / "test.csv"
    test.write_text(HEADER.replace(",label", "") + ROWS.replace(",0\n", "\n").replace(",2\n", "\n"), encoding="utf-8")
    assert [e.label for e in multiple_choice.read_swag(str(test), "test")] == [None, None]


def test_bad_files(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("sent1,sent2,ending0\n")
    with pytest.raises(ValueError, match=r"bad.csv:1: the header .* needs sent1, sent2 and ending0"):
        multiple_choice.read_swag(str(path), "train")
    path.write_text("sent1,sent2,ending0,ending1,label\na,b,c,d,2\n")
    with pytest.raises(ValueError, match=r"bad.csv:2: label '2' is not the index of one of the 2 endings"):
        multiple_choice.read_swag(str(path), "train")
    path.write_text("sent1,sent2,ending0,ending1,label\na,b,c,d\n")
    with pytest.raises(ValueError, match=r"bad.csv:2: 4 columns, expected 5"):
        multiple_choice.read_swag(str(path), "train")
    path.write_text("sent1,sent2,ending0,ending1,label\n")
    with pytest.raises(ValueError, match="no examples in the train set"):
        multiple_choice.read_swag(str(path), "train")
