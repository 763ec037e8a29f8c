"""The conlleval scorer on hand-made cases; the counts are what conlleval.pl prints for the same input."""

import pytest

from bert_tf.evaluation import conlleval


def counts(result):
    o = result.overall
    return result.tokens, result.correct_tags, o.found_correct, o.found_guessed, o.correct


def test_two_sentences_three_types():
    gold = [["B-PER", "I-PER", "O", "B-LOC", "O"], ["B-ORG", "I-ORG", "I-ORG", "O", "B-PER"]]
    predicted = [["B-PER", "I-PER", "O", "B-ORG", "O"], ["B-ORG", "I-ORG", "O", "O", "B-PER"]]
    result = conlleval.evaluate(gold, predicted)
    assert counts(result) == (10, 8, 4, 4, 2)
    assert (result.precision, result.recall, result.f1, result.accuracy) == (0.5, 0.5, 0.5, 0.8)
    per_type = {k: (c.correct, c.found_correct, c.found_guessed) for k, c in result.per_type.items()}
    assert per_type == {"PER": (2, 2, 2), "LOC": (0, 1, 0), "ORG": (0, 1, 2)}
    assert str(result).splitlines()[:2] == [
        "processed 10 tokens with 4 phrases; found: 4 phrases; correct: 2.",
        "accuracy:  80.00%; precision:  50.00%; recall:  50.00%; FB1:  50.00"]
    assert str(result).splitlines()[2] == "              LOC: precision:   0.00%; recall:   0.00%; FB1:   0.00  0"


def test_iob1_chunks():
    # In IOB1, B- only separates two adjacent chunks of one type: gold has 2 chunks, the prediction 1.
    result = conlleval.evaluate([["I-PER", "I-PER", "B-PER", "O"]], [["I-PER", "I-PER", "I-PER", "O"]])
    assert counts(result) == (4, 3, 2, 1, 0)
    assert result.f1 == 0.0


def test_i_after_o_starts_a_chunk():
    result = conlleval.evaluate([["O", "B-PER", "I-PER"]], [["O", "I-PER", "I-PER"]])
    assert counts(result) == (3, 2, 1, 1, 1)
    assert result.f1 == 1.0


def test_sentence_break_ends_a_chunk():
    result = conlleval.evaluate([["B-PER"], ["I-PER"]], [["B-PER"], ["I-PER"]])
    assert counts(result) == (2, 2, 2, 2, 2)


def test_boundary_and_type_errors():
    assert counts(conlleval.evaluate([["B-PER", "I-PER", "O"]], [["B-PER", "O", "O"]])) == (3, 2, 1, 1, 0)
    assert counts(conlleval.evaluate([["B-PER"]], [["B-LOC"]])) == (1, 0, 1, 1, 0)
    assert counts(conlleval.evaluate([["B-PER", "I-PER", "B-PER", "I-PER"]],
                                     [["B-PER", "I-PER", "I-PER", "I-PER"]])) == (4, 3, 2, 1, 0)


def test_iobes_is_mapped_to_bio():
    # conlleval.pl itself reads "B-PER E-PER B-PER E-PER" as one chunk; after to_bio it is two.
    tags = ["B-PER", "E-PER", "B-PER", "E-PER"]
    assert counts(conlleval.evaluate([tags], [tags]))[2] == 1
    assert conlleval.to_bio(tags + ["S-LOC", "O", "I-X"]) == ["B-PER", "I-PER", "B-PER", "I-PER", "B-LOC", "O", "I-X"]
    gold = conlleval.to_bio(["S-PER", "B-LOC", "E-LOC", "S-LOC"])
    predicted = conlleval.to_bio(["S-PER", "B-LOC", "I-LOC", "E-LOC"])
    assert counts(conlleval.evaluate([gold], [predicted])) == (4, 3, 3, 2, 1)


def test_hyphenated_types_keep_their_name():
    result = conlleval.evaluate([["B-geo-loc", "I-geo-loc"]], [["B-geo-loc", "I-geo-loc"]])
    assert list(result.per_type) == ["geo-loc"] and result.f1 == 1.0


def test_no_entities():
    result = conlleval.evaluate([["O", "O"]], [["O", "O"]])
    assert counts(result) == (2, 2, 0, 0, 0) and result.f1 == 0.0 and result.per_type == {}


def test_misaligned_input():
    with pytest.raises(ValueError, match="sentence 0: 2 gold tags but 1 predicted"):
        conlleval.evaluate([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="1 gold sentences but 2 predicted"):
        conlleval.evaluate([["O"]], [["O"], ["O"]])
