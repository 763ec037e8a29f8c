"""Precision, recall and F1 of matched items, the one place conlleval's chunks (`conlleval.ChunkCounts`) and
SIGHAN's words (`segmentation.SegmentationScores`) are scored from their counts: precision = correct /
predicted, recall = correct / gold, F1 their harmonic mean; 0.0 where a count is 0 (as both scripts report it).
"""


def ratio(numerator, denominator):
    """numerator / denominator; 0.0 when the denominator is 0."""
    return numerator / denominator if denominator else 0.0


class PrecisionRecall:
    """precision, recall and f1 of a class of counts; `match_counts()` gives (correct, predicted, gold): the
    items both predicted and in the gold standard, the items predicted, the items in the gold standard."""

    def match_counts(self):
        raise NotImplementedError

    @property
    def precision(self):
        correct, predicted, _ = self.match_counts()
        return ratio(correct, predicted)

    @property
    def recall(self):
        correct, _, gold = self.match_counts()
        return ratio(correct, gold)

    @property
    def f1(self):
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0
