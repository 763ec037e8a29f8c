"""Entity-level precision / recall / F1 computed exactly as the CoNLL shared tasks' `conlleval` script.

A chunk (entity) counts as correct only if its first token, its last token and its type all match. Chunk
boundaries follow conlleval's rules for B/I/E/O tags (and its `[`, `]`, `.` tags), so IOB1 and IOB2 (BIO)
are scored as conlleval scores them. conlleval has no `S` tag and does not end a chunk at `E` followed by
`B`; `to_bio` maps IOBES to BIO first (S -> B, E -> I), which keeps every entity's boundaries.

One difference: conlleval splits a tag at every hyphen and keeps two parts (`B-geo-loc` has type `geo`);
here the type is everything after the first hyphen (`geo-loc`). Per-type tables differ only in the names,
and overall scores differ only when two types share the part before their second hyphen.
"""

import dataclasses

from bert_tf.evaluation.matching import PrecisionRecall, ratio

OUTSIDE = ("O", "")


def _split(tag):
    """"B-PER" -> ("B", "PER"); "O" -> ("O", "")."""
    prefix, _, chunk_type = tag.partition("-")
    return prefix, chunk_type


def _end_of_chunk(prev_tag, tag, prev_type, chunk_type):
    """conlleval's endOfChunk: did a chunk end between the previous and the current token?"""
    if (prev_tag, tag) in {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}:
        return True
    if prev_tag not in ("O", ".") and prev_type != chunk_type:
        return True
    return prev_tag in ("]", "[")


def _start_of_chunk(prev_tag, tag, prev_type, chunk_type):
    """conlleval's startOfChunk: did a chunk start between the previous and the current token?"""
    if (prev_tag, tag) in {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}:
        return True
    if tag not in ("O", ".") and prev_type != chunk_type:
        return True
    return tag in ("[", "]")


def to_bio(tags):
    """IOBES tags -> BIO tags: S-X -> B-X, E-X -> I-X; other tags unchanged."""
    return [{"S": "B-", "E": "I-"}.get(t[0], t[0] + "-") + t[2:] if t[1:2] == "-" else t for t in tags]


@dataclasses.dataclass
class ChunkCounts(PrecisionRecall):
    """Counts of one entity type (or of all): chunks in the gold tags, chunks predicted, chunks correct; their
    precision, recall and f1 (`matching.PrecisionRecall`)."""
    found_correct: int = 0
    found_guessed: int = 0
    correct: int = 0

    def match_counts(self):
        return self.correct, self.found_guessed, self.found_correct


@dataclasses.dataclass
class ConllevalResult:
    """What conlleval reports. `overall` and `per_type` hold chunk counts; precision/recall/f1 are fractions
    (conlleval prints them as percentages); `accuracy` is the token-level tag accuracy."""
    tokens: int
    correct_tags: int
    overall: ChunkCounts
    per_type: dict

    @property
    def accuracy(self):
        return ratio(self.correct_tags, self.tokens)

    @property
    def precision(self):
        return self.overall.precision

    @property
    def recall(self):
        return self.overall.recall

    @property
    def f1(self):
        return self.overall.f1

    def __str__(self):
        """The report in conlleval's own layout."""
        o = self.overall
        lines = [f"processed {self.tokens} tokens with {o.found_correct} phrases; found: {o.found_guessed} "
                 f"phrases; correct: {o.correct}."]
        if self.tokens:
            lines.append(f"accuracy: {100 * self.accuracy:6.2f}%; precision: {100 * o.precision:6.2f}%; "
                         f"recall: {100 * o.recall:6.2f}%; FB1: {100 * o.f1:6.2f}")
        for name, c in sorted(self.per_type.items()):
            lines.append(f"{name:>17}: precision: {100 * c.precision:6.2f}%; recall: {100 * c.recall:6.2f}%; "
                         f"FB1: {100 * c.f1:6.2f}  {c.found_guessed}")
        return "\n".join(lines)


def evaluate(gold_sentences, predicted_sentences):
    """Scores predicted tag sequences against gold ones as conlleval does.

    Args:
      gold_sentences, predicted_sentences: lists of sentences, each a list of str tags (`O`, `B-PER`,
        `I-LOC`, ...), the two sentence lists aligned token by token. A sentence break ends every chunk.

    Returns:
      A ConllevalResult.

    Raises:
      ValueError: if the sentence counts or the lengths of a sentence pair differ.
    """
    if len(gold_sentences) != len(predicted_sentences):
        raise ValueError(f"{len(gold_sentences)} gold sentences but {len(predicted_sentences)} predicted")
    tokens = correct_tags = 0
    overall, per_type = ChunkCounts(), {}
    in_correct = False
    last_correct, last_guessed = OUTSIDE, OUTSIDE

    def counts(chunk_type):
        return per_type.setdefault(chunk_type, ChunkCounts())

    def step(correct, guessed):
        nonlocal in_correct
        correct_end = _end_of_chunk(last_correct[0], correct[0], last_correct[1], correct[1])
        guessed_end = _end_of_chunk(last_guessed[0], guessed[0], last_guessed[1], guessed[1])
        if in_correct:
            if correct_end and guessed_end and last_guessed[1] == last_correct[1]:
                in_correct = False
                overall.correct += 1
                counts(last_correct[1]).correct += 1
            elif correct_end != guessed_end or guessed[1] != correct[1]:
                in_correct = False
        correct_start = _start_of_chunk(last_correct[0], correct[0], last_correct[1], correct[1])
        guessed_start = _start_of_chunk(last_guessed[0], guessed[0], last_guessed[1], guessed[1])
        if correct_start and guessed_start and guessed[1] == correct[1]:
            in_correct = True
        if correct_start:
            overall.found_correct += 1
            counts(correct[1]).found_correct += 1
        if guessed_start:
            overall.found_guessed += 1
            counts(guessed[1]).found_guessed += 1

    for index, (gold, predicted) in enumerate(zip(gold_sentences, predicted_sentences)):
        if len(gold) != len(predicted):
            raise ValueError(f"sentence {index}: {len(gold)} gold tags but {len(predicted)} predicted")
        for gold_tag, predicted_tag in zip(gold, predicted):
            correct, guessed = _split(gold_tag), _split(predicted_tag)
            step(correct, guessed)
            tokens += 1
            correct_tags += correct == guessed
            last_correct, last_guessed = correct, guessed
        step(OUTSIDE, OUTSIDE)  # the sentence break: an O/O token that is not counted
        last_correct, last_guessed = OUTSIDE, OUTSIDE
    if in_correct:
        overall.correct += 1
        counts(last_correct[1]).correct += 1
    per_type.pop("", None)  # conlleval ignores the empty type in its table
    return ConllevalResult(tokens, correct_tags, overall, per_type)
