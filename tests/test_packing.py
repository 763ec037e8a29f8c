"""bert_tf.data.packing: the original truncation and [CLS] A [SEP] (B [SEP]) layout."""

import pytest

from bert_tf.data.packing import PackedInput, pack_tokens, truncate_seq_pair
from bert_tf.tokenization import FullTokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a1", "a2", "a3", "a4", "a5", "b1", "b2", "b3"]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return FullTokenizer(str(path))


@pytest.mark.parametrize("len_a, len_b, max_length, expected", [
    (2, 2, 4, (2, 2)),  # fits: untouched
    (5, 3, 6, (3, 3)),  # the longer loses tokens until they are equal
    (3, 5, 6, (3, 3)),
    (3, 3, 5, (3, 2)),  # a tie takes from B
    (7, 1, 4, (3, 1)),  # the short one keeps everything
    (4, 4, 3, (2, 1)),
    (1, 0, 0, (0, 0)),
])
def test_truncate_seq_pair(len_a, len_b, max_length, expected):
    tokens_a, tokens_b = [f"a{i}" for i in range(len_a)], [f"b{i}" for i in range(len_b)]
    truncate_seq_pair(tokens_a, tokens_b, max_length)
    assert (len(tokens_a), len(tokens_b)) == expected
    # The ends are removed, in place.
    assert tokens_a == [f"a{i}" for i in range(expected[0])]
    assert tokens_b == [f"b{i}" for i in range(expected[1])]


def test_pack_single_segment(tokenizer):
    packed = pack_tokens(["a1", "a2"], None, 6, tokenizer)
    assert packed == PackedInput(tokens=["[CLS]", "a1", "a2", "[SEP]"], input_ids=[2, 4, 5, 3, 0, 0],
                                 input_mask=[1, 1, 1, 1, 0, 0], segment_ids=[0, 0, 0, 0, 0, 0])


def test_pack_single_segment_truncates_the_end(tokenizer):
    tokens_a = ["a1", "a2", "a3", "a4", "a5"]
    packed = pack_tokens(tokens_a, None, 5, tokenizer)
    assert packed.tokens == ["[CLS]", "a1", "a2", "a3", "[SEP]"]
    assert packed.input_ids == [2, 4, 5, 6, 3]
    assert packed.input_mask == [1] * 5
    assert tokens_a == ["a1", "a2", "a3", "a4", "a5"]  # the caller's list is left alone
    assert pack_tokens(tokens_a, None, 2, tokenizer).tokens == ["[CLS]", "[SEP]"]


def test_pack_pair(tokenizer):
    packed = pack_tokens(["a1", "a2"], ["b1"], 8, tokenizer)
    assert packed == PackedInput(tokens=["[CLS]", "a1", "a2", "[SEP]", "b1", "[SEP]"],
                                 input_ids=[2, 4, 5, 3, 9, 3, 0, 0], input_mask=[1, 1, 1, 1, 1, 1, 0, 0],
                                 segment_ids=[0, 0, 0, 0, 1, 1, 0, 0])


def test_pack_pair_truncates_the_longer_segment(tokenizer):
    tokens_a, tokens_b = ["a1", "a2", "a3", "a4", "a5"], ["b1", "b2", "b3"]
    packed = pack_tokens(tokens_a, tokens_b, 8, tokenizer)
    assert packed.tokens == ["[CLS]", "a1", "a2", "a3", "[SEP]", "b1", "b2", "[SEP]"]
    assert packed.segment_ids == [0, 0, 0, 0, 0, 1, 1, 1]
    assert (len(tokens_a), len(tokens_b)) == (5, 3)
    assert pack_tokens([], [], 3, tokenizer).tokens == ["[CLS]", "[SEP]", "[SEP]"]


@pytest.mark.parametrize("tokens_b, max_seq_length, message", [
    (None, 1, "max_seq_length=1 leaves no room for [CLS] and 1 [SEP]; expected >= 2"),
    (["b1"], 2, "max_seq_length=2 leaves no room for [CLS] and 2 [SEP]; expected >= 3"),
])
def test_pack_rejects_too_short_max_seq_length(tokenizer, tokens_b, max_seq_length, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        pack_tokens(["a1"], tokens_b, max_seq_length, tokenizer)


def test_pack_unknown_token(tokenizer):
    with pytest.raises(ValueError, match="token 'zz' is not in the vocab"):
        pack_tokens(["zz"], None, 4, tokenizer)
