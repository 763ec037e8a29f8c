"""build_vocab.py: a WordPiece vocab learned from real text (State of the Union, ChatterBot Chinese), in
Google's layout, loaded by FullTokenizer and the in-graph tokenizer."""

import glob
import os
import subprocess
import sys

import pytest

from bert_tf.data.pretraining.corpus import prepare_corpus
from bert_tf.data.pretraining.vocab_builder import count_words, learn_vocab, unknown_rate
from bert_tf.tokenization import FullTokenizer, is_cjk
from bert_tf.tokenization.in_graph import BertTokenizer
from tests.helpers.sotu_speeches import SPEECHES
from tools import pypi_data

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def chinese_lines():
    """Sentences of the ChatterBot Chinese corpus (its YAML lists: `- - text` and `  - text`)."""
    lines = []
    for path in sorted(glob.glob(os.path.join(pypi_data.package_dir("chatterbot_corpus"), "data", "chinese",
                                              "*.yml"))):
        for line in open(path, encoding="utf-8"):
            if line.startswith(("- - ", "  - ")):
                lines.append(line[4:].strip())
    return lines


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    directory = tmp_path_factory.mktemp("vocab")
    corpus = str(directory / "corpus.txt")
    prepare_corpus(SPEECHES[230:236], corpus)
    vocab = str(directory / "vocab.txt")
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "build_vocab.py"), f"--input_file={corpus}", f"--output_file={vocab}",
         "--vocab_size=800"], capture_output=True, text=True, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr
    return corpus, vocab, result.stderr


@pytest.mark.subprocess
@pytest.mark.extended
def test_vocab_has_googles_layout(built):
    _, vocab, log = built
    tokens = open(vocab, encoding="utf-8").read().split("\n")[:-1]
    assert 760 <= len(tokens) <= 800 and len(set(tokens)) == len(tokens)
    assert tokens[0] == "[PAD]" and tokens[1] == "[unused0]" and tokens[99] == "[unused98]"
    assert tokens[100:104] == ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert {"the", "##s", "##ing", "##ed", "##ment", "congress"} <= set(tokens)
    assert f"Wrote {len(tokens)} tokens" in log and "0.000% of word occurrences become [UNK]" in log


@pytest.mark.subprocess
def test_full_and_in_graph_tokenizers_load_it(built):
    corpus, vocab, _ = built
    tokenizer = FullTokenizer(vocab)
    lines = [line for line in open(corpus, encoding="utf-8").read().split("\n") if line][:300]
    pieces = [tokenizer.tokenize(line) for line in lines]
    assert all("[UNK]" not in p for p in pieces)
    assert sum(map(len, pieces)) < 2.5 * sum(len(line.split()) for line in lines)  # pieces, not letters
    in_graph = BertTokenizer(vocab).tokenize(lines).to_list()
    assert in_graph == [tokenizer.convert_tokens_to_ids(p) for p in pieces]


def test_chinese_gets_a_piece_per_character():
    lines = chinese_lines()
    assert len(lines) > 500
    words = count_words(lines)
    tokens = learn_vocab(words, 4000)
    characters = {c for line in lines for c in line if is_cjk(c)}
    assert characters <= set(tokens) and len(characters) > 800
    assert not [t for t in tokens if t.startswith("##") and is_cjk(t[2:3])]
    vocab = {token: i for i, token in enumerate(tokens)}
    from bert_tf.tokenization import BasicTokenizer, WordpieceTokenizer
    basic, wordpiece = BasicTokenizer(), WordpieceTokenizer(vocab)
    for line in lines[:200]:
        pieces = [p for word in basic.tokenize(line) for p in wordpiece.tokenize(word)]
        assert [p for p in pieces if is_cjk(p[0])] == [c for c in line if is_cjk(c)]
    assert unknown_rate(tokens, words) == 0.0


def test_word_counts_follow_basic_tokenizer():
    words = count_words(["Hello, World! Hello world.", "naïve  café", "東京タワー"])
    assert words == {"hello": 2, ",": 1, "world": 2, "!": 1, ".": 1, "naive": 1, "cafe": 1, "東": 1, "京": 1,
                     "タワー": 1}


def test_impossible_sizes_are_errors():
    words = count_words(open(SPEECHES[0], encoding="utf-8"))
    with pytest.raises(ValueError, match="vocab_size=150 is too small"):
        learn_vocab(words, 150)
    with pytest.raises(ValueError, match="no words"):
        learn_vocab(count_words([""]), 1000)
