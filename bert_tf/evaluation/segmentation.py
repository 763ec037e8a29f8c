"""Chinese word segmentation scored as the SIGHAN bakeoff's `score` script scores it: a predicted word is
correct when the gold segmentation has the same word at the same place; precision = correct / predicted
words, recall = correct / gold words, F1 their harmonic mean; the OOV rate is the share of gold words that
the training dictionary lacks, and recall is also given on those (OOV) and on the others (IV).

Words come from B / M / E / S tags (one per character, `bert_tf.data.tasks.tagging`). Predicted tags need not
be well formed: a word starts at B or S, at any character after E or S, and at the first character; so
`B B` is two words, `S M E` two, `M M` one.
"""

import dataclasses

from bert_tf.evaluation.matching import PrecisionRecall, ratio


def word_spans(tags):
    """B / M / E / S tags -> the words as (start, end) character offsets, end exclusive."""
    starts = [i for i, tag in enumerate(tags) if i == 0 or tag in ("B", "S") or tags[i - 1] in ("E", "S")]
    return list(zip(starts, starts[1:] + [len(tags)]))


def words_of(characters, tags):
    """The words of a sentence: its characters (list of str) joined along `word_spans(tags)`."""
    return ["".join(characters[start:end]) for start, end in word_spans(tags)]


@dataclasses.dataclass
class SegmentationScores(PrecisionRecall):
    """The SIGHAN scores; counts of gold, predicted and correct words, and of the gold words (and the correct
    ones) outside the training dictionary. precision, recall, f1: `matching.PrecisionRecall`'s."""
    gold_words: int
    predicted_words: int
    correct: int
    oov_words: int
    oov_correct: int

    def match_counts(self):
        return self.correct, self.predicted_words, self.gold_words

    @property
    def oov_rate(self):
        return ratio(self.oov_words, self.gold_words)

    @property
    def oov_recall(self):
        return ratio(self.oov_correct, self.oov_words)

    @property
    def iv_recall(self):
        return ratio(self.correct - self.oov_correct, self.gold_words - self.oov_words)

    def __str__(self):
        return (f"{self.gold_words} gold words, {self.predicted_words} predicted, {self.correct} correct; "
                f"precision {self.precision:.4f}, recall {self.recall:.4f}, F1 {self.f1:.4f}; OOV rate "
                f"{self.oov_rate:.4f}, OOV recall {self.oov_recall:.4f}, IV recall {self.iv_recall:.4f}")


def evaluate(sentences, gold_tags, predicted_tags, dictionary=()):
    """Scores predicted segmentations against gold ones.

    Args:
      sentences: per sentence, its characters (list of str).
      gold_tags, predicted_tags: per sentence, one B / M / E / S tag per character.
      dictionary: the training words (a set of str); gold words outside it are the OOV words.
    Returns:
      SegmentationScores.
    """
    counts = SegmentationScores(0, 0, 0, 0, 0)
    for characters, gold, predicted in zip(sentences, gold_tags, predicted_tags, strict=True):
        if len(gold) != len(characters) or len(predicted) != len(characters):
            raise ValueError(f"{len(characters)} characters but {len(gold)} gold and {len(predicted)} predicted "
                             f"tags: {''.join(characters)[:40]!r}")
        gold_spans, predicted_spans = word_spans(gold), set(word_spans(predicted))
        counts.gold_words += len(gold_spans)
        counts.predicted_words += len(predicted_spans)
        for start, end in gold_spans:
            correct = (start, end) in predicted_spans
            counts.correct += correct
            if "".join(characters[start:end]) not in dictionary:
                counts.oov_words += 1
                counts.oov_correct += correct
    return counts
