"""SQuAD v1.1 / v2.0 examples and features, built as the original `run_squad.py` builds them.

Reading: the context is split on whitespace (space, tab, CR, LF, U+202F, exactly the original's set) into
`doc_tokens`, with a char -> word offset map that places the character-based answers on words; one change
from the original: each CJK character is a word of its own, as in the CMRC 2018 baseline. The original makes
a Chinese paragraph without spaces one "word", which labels an answer at its first occurrence instead of at
`answer_start`, searches the answer's pieces in time cubic in the paragraph's length, and labels the whole
paragraph for an answer that starts or ends inside a word piece (e.g. "58" of "99∶58"; now that word).
Features:
the question (at most `max_query_length` word pieces) and a window of the context's word pieces,
`[CLS] question [SEP] window [SEP]`; windows slide by `doc_stride` until the context is covered, and each
token is marked "max context" in the window where it has the most context on both sides. Training labels
are the answer's word-piece positions in the window, or 0 ([CLS]) when the window does not hold the whole
answer or the question is impossible. For the same inputs without CJK characters the examples and features
(unique ids included) equal the original's; `tests/test_squad_data.py` checks that against the original code.

Bad input is reported with the file and the question id: malformed JSON or a missing key raises
ValueError; a training answer that cannot be found in its context at `answer_start` is skipped with a
warning and counted (`ReadResult.skipped`), as the original skips them.
"""

import dataclasses
import json

from absl import logging

from bert_tf.data.windows import doc_spans, max_context_windows
from bert_tf.tokenization import is_cjk

FIRST_UNIQUE_ID = 1000000000  # the original's first feature id


@dataclasses.dataclass
class SquadExample:
    """One question on one context.

    Attributes:
      qas_id: the question's `id` (str).
      question_text: the question (str).
      doc_tokens: the context split on whitespace and around CJK characters (list of str).
      orig_answer_text: training only: the answer's text ("" for an impossible question), else None.
      start_position, end_position: training only: the answer's first and last index in `doc_tokens`
        (-1 for an impossible question), else None.
      is_impossible: training with `version_2_with_negative` only: the question has no answer.
      glued: per doc token, True when it follows the previous one without whitespace (a CJK character or the
        word next to one); None: all spaced.
    """

    qas_id: str
    question_text: str
    doc_tokens: list
    orig_answer_text: str = None
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False
    glued: list = None

    def words_text(self, first, last):
        """The doc tokens first..last joined as in the context: a space where it had whitespace, none between
        glued words (so a Chinese span is a substring of its context)."""
        return join_words(self.doc_tokens, self.glued, first, last)


@dataclasses.dataclass
class SquadFeatures:
    """One window of one example, packed as `[CLS] question [SEP] window [SEP]` and zero-padded.

    Attributes:
      unique_id: int, FIRST_UNIQUE_ID + the feature's index over the whole conversion.
      example_index: int, index of the example in the converted list; doc_span_index: the window's index.
      tokens: list of str, the word pieces (without padding).
      token_to_orig_map: {index in `tokens`: index in the example's `doc_tokens`}, for the window's tokens.
      token_is_max_context: {index in `tokens`: bool}, same keys: True where this window gives the token the
        most context of all the windows holding it (a prediction starts only on such a token).
      input_ids, input_mask, segment_ids: lists of int, `max_seq_length` long.
      start_position, end_position: training only: the answer's first and last index in `tokens`, 0 when the
        window does not hold the answer or the question is impossible; else None.
      is_impossible: the example's `is_impossible`.
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: list
    token_to_orig_map: dict
    token_is_max_context: dict
    input_ids: list
    input_mask: list
    segment_ids: list
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False


@dataclasses.dataclass
class ReadResult:
    """What `read_squad_examples` read: `examples` (list of SquadExample) and `skipped`, a list of
    (qas_id, reason) for the training questions whose answer could not be found in the context."""

    examples: list
    skipped: list


def is_whitespace(char):
    """The original's whitespace for splitting contexts: space, tab, CR, LF and U+202F (narrow no-break
    space). Other Unicode spaces (e.g. U+00A0) stay inside a word here; WordPiece tokenization splits on
    them later."""
    return char in " \t\r\n\u202f"


def split_context(text):
    """Splits a context into words on `is_whitespace`, and around each CJK character (a word of its own).

    Returns (doc_tokens, char_to_word_offset, glued): the words; for every character of `text` the index of
    the word it belongs to (a whitespace character maps to the word before it, -1 before the first word); per
    word, True when no whitespace separates it from the previous word.
    """
    doc_tokens, char_to_word_offset, glued = [], [], []
    previous_is_whitespace = True
    for char in text:
        if is_whitespace(char):
            previous_is_whitespace = True
        else:
            if previous_is_whitespace or is_cjk(char) or is_cjk(doc_tokens[-1][-1]):
                glued.append(bool(doc_tokens) and not previous_is_whitespace)
                doc_tokens.append(char)
            else:
                doc_tokens[-1] += char
            previous_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset, glued


def join_words(doc_tokens, glued, first, last):
    """doc_tokens[first..last] joined with a space, or nothing before a glued word (`split_context`)."""
    text = doc_tokens[first]
    for index in range(first + 1, last + 1):
        text += ("" if glued and glued[index] else " ") + doc_tokens[index]
    return text


def read_json(path, what):
    """The JSON value in the file `path`; ValueError naming the file and `what` it should hold when it is not
    UTF-8 JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: {what} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: {what} is not valid JSON ({e})") from None


def load_squad_json(path):
    """The `data` list (articles) of a SQuAD JSON file; ValueError naming the file when it is not JSON
    or has no `data` list."""
    dataset = read_json(path, "a SQuAD file")
    if not isinstance(dataset, dict) or not isinstance(dataset.get("data"), list):
        got = type(dataset).__name__
        if isinstance(dataset, dict):  # a predictions file has a key per question: name a few, not all
            keys = ", ".join(repr(key)[:40] for key in list(dataset)[:3]) + (", ..." if len(dataset) > 3 else "")
            got += f" with {len(dataset)} key(s) {keys} (a predictions file? the SQuAD file comes first)"
        raise ValueError(f"{path}: expected a SQuAD JSON object with a 'data' list of articles, got {got}")
    return dataset["data"]


def _field(mapping, key, kind, where, path):
    """mapping[key] checked to be of type `kind`; ValueError naming the file and the place otherwise."""
    value = mapping.get(key) if isinstance(mapping, dict) else None
    if not isinstance(value, kind):
        raise ValueError(f"{path}: {where} has no {key!r} of type {kind.__name__} (got {value!r:.80})")
    return value


def iterate_questions(articles, path):
    """Yields (context, qa) for every question of the `data` list of a SQuAD file (`path` names it in
    errors), with the structure checked: ValueError naming the article / paragraph / question at fault."""
    for article_index, article in enumerate(articles):
        where = f"article {article_index}"
        for paragraph_index, paragraph in enumerate(_field(article, "paragraphs", list, where, path)):
            where = f"article {article_index} paragraph {paragraph_index}"
            context = _field(paragraph, "context", str, where, path)
            for qa in _field(paragraph, "qas", list, where, path):
                qas_id = _field(qa, "id", str, f"{where}, a question", path)
                _field(qa, "question", str, f"question {qas_id}", path)
                if "is_impossible" in qa:  # a string "false" would be true to training, false to evaluation
                    _field(qa, "is_impossible", bool, f"question {qas_id}", path)
                yield context, qa


def _locate_answer(qa, context, doc_tokens, char_to_word_offset, glued):
    """(start word, end word, None) of the first answer, or (None, None, reason) when its text is not in the
    context at `answer_start` (the original's test: the whitespace-normalised answer must occur in the
    words that `answer_start` and its length cover)."""
    answer = qa["answers"][0] if isinstance(qa["answers"][0], dict) else {}
    text, offset = answer.get("text"), answer.get("answer_start")
    if not isinstance(text, str) or not isinstance(offset, int) or isinstance(offset, bool):
        return None, None, f"answer has text={text!r:.40} answer_start={offset!r}; expected a str and an int"
    cleaned = " ".join(text.split())
    end_char = offset + len(text) - 1
    if not cleaned or offset < 0 or end_char >= len(context):
        return None, None, (f"answer {text!r:.40} at answer_start={offset} is empty or outside the "
                            f"context of {len(context)} characters")
    start, end = char_to_word_offset[offset], char_to_word_offset[end_char]
    actual = join_words(doc_tokens, glued, max(start, 0), end) if end >= 0 else ""
    if start < 0 or cleaned not in actual:
        return None, None, f"answer {cleaned!r:.60} is not in the context at answer_start={offset}: {actual!r:.60}"
    return start, end, None


def read_squad_examples(input_file, is_training, version_2_with_negative=False):
    """Reads a SQuAD v1.1 / v2.0 JSON file into SquadExamples, in file order.

    For prediction (`is_training=False`) answers are not read. For training each question needs exactly
    one answer, or `is_impossible: true` with `version_2_with_negative` (ValueError naming the question
    otherwise); an answer whose text is not found at its `answer_start` is skipped with a warning.

    Returns a ReadResult.
    """
    examples, skipped, seen = [], [], set()
    contexts = {}  # a paragraph's questions share its split context
    for context, qa in iterate_questions(load_squad_json(input_file), input_file):
        qas_id = qa["id"]
        if qas_id in seen:
            raise ValueError(f"{input_file}: question id {qas_id!r} appears twice; ids must be unique")
        seen.add(qas_id)
        if context not in contexts:
            contexts = {context: split_context(context)}
        doc_tokens, char_to_word_offset, glued = contexts[context]
        example = SquadExample(qas_id, qa["question"], doc_tokens, glued=glued)
        if is_training:
            example.is_impossible = bool(qa.get("is_impossible", False))
            if example.is_impossible and not version_2_with_negative:
                raise ValueError(f"{input_file}: question {qas_id} is_impossible, but version_2_with_negative "
                                 "is False (SQuAD 2.0 data needs version_2_with_negative=True)")
            answers = qa.get("answers")
            if example.is_impossible:
                example.start_position, example.end_position, example.orig_answer_text = -1, -1, ""
            elif not isinstance(answers, list) or len(answers) != 1:
                raise ValueError(f"{input_file}: question {qas_id} has "
                                 f"{len(answers) if isinstance(answers, list) else 'no'} answers; for training "
                                 "each question needs exactly 1 answer (or is_impossible with SQuAD 2.0)")
            else:
                start, end, reason = _locate_answer(qa, context, doc_tokens, char_to_word_offset, glued)
                if reason:
                    logging.warning("%s: skipping question %s: %s", input_file, qas_id, reason)
                    skipped.append((qas_id, reason))
                    continue
                example.start_position, example.end_position = start, end
                example.orig_answer_text = answers[0]["text"]
        examples.append(example)
    logging.info("%s: read %d questions%s", input_file, len(examples),
                 f", skipped {len(skipped)} whose answer is not in the context" if skipped else "")
    return ReadResult(examples, skipped)


# ----------------------------------------------------------------------------------------------- features

def improve_answer_span(doc_pieces, start, end, tokenizer, orig_answer_text):
    """The original `_improve_answer_span`: the sub-span of word pieces [start, end] whose text equals the
    tokenized answer, searched from the longest at the leftmost start; (start, end) when there is none.

    E.g. the answer "1895" in the word "(1895-1943)." is narrowed to the piece "1895".
    """
    answer = " ".join(tokenizer.tokenize(orig_answer_text))
    for new_start in range(start, end + 1):
        for new_end in range(end, new_start - 1, -1):
            if " ".join(doc_pieces[new_start:new_end + 1]) == answer:
                return new_start, new_end
    return start, end


def _word_pieces(doc_tokens, tokenizer):
    """(piece_to_word, word_to_piece, pieces): the word pieces of the words `doc_tokens`, each piece's word
    index, and each word's first piece index."""
    piece_to_word, word_to_piece, pieces = [], [], []
    for word_index, word in enumerate(doc_tokens):
        word_to_piece.append(len(pieces))
        for piece in tokenizer.tokenize(word):
            piece_to_word.append(word_index)
            pieces.append(piece)
    return piece_to_word, word_to_piece, pieces


def check_window_settings(max_seq_length, doc_stride, max_query_length):
    """ValueError unless the windows can be built: max_seq_length > max_query_length + 3, doc_stride >= 1."""
    if max_seq_length <= max_query_length + 3:
        raise ValueError(f"max_seq_length={max_seq_length} must be greater than max_query_length="
                         f"{max_query_length} + 3 ([CLS] and two [SEP])")
    if doc_stride < 1 or max_query_length < 0:
        raise ValueError(f"doc_stride={doc_stride} must be >= 1 and max_query_length={max_query_length} >= 0")


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                                 is_training):
    """Yields the SquadFeatures of `examples` (a list of SquadExample) window by window, unique ids counting
    from FIRST_UNIQUE_ID. A question longer than `max_query_length` word pieces is truncated to them (logged
    with its id). With `is_training` the features carry the start/end labels."""
    check_window_settings(max_seq_length, doc_stride, max_query_length)
    unique_id, truncated = FIRST_UNIQUE_ID, []
    doc_tokens = None
    for example_index, example in enumerate(examples):
        query = tokenizer.tokenize(example.question_text)
        if len(query) > max_query_length:
            truncated.append(example.qas_id)
            query = query[:max_query_length]
        if example.doc_tokens is not doc_tokens:  # the questions of a paragraph share its doc_tokens
            doc_tokens = example.doc_tokens
            piece_to_word, word_to_piece, pieces = _word_pieces(doc_tokens, tokenizer)
        answer_start = answer_end = None
        if is_training and not example.is_impossible:
            answer_start = word_to_piece[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                answer_end = word_to_piece[example.end_position + 1] - 1
            else:
                answer_end = len(pieces) - 1
            answer_start, answer_end = improve_answer_span(pieces, answer_start, answer_end, tokenizer,
                                                           example.orig_answer_text)
        spans = doc_spans(len(pieces), max_seq_length - len(query) - 3, doc_stride)
        best_windows = max_context_windows(spans, len(pieces))
        doc_offset = len(query) + 2
        for span_index, (span_start, span_length) in enumerate(spans):
            tokens = ["[CLS]"] + query + ["[SEP]"] + pieces[span_start:span_start + span_length] + ["[SEP]"]
            positions = range(span_start, span_start + span_length)
            token_to_orig_map = {doc_offset + i: piece_to_word[p] for i, p in enumerate(positions)}
            token_is_max_context = {doc_offset + i: best_windows[p] == span_index for i, p in enumerate(positions)}
            padding = [0] * (max_seq_length - len(tokens))
            feature = SquadFeatures(
                unique_id=unique_id, example_index=example_index, doc_span_index=span_index, tokens=tokens,
                token_to_orig_map=token_to_orig_map, token_is_max_context=token_is_max_context,
                input_ids=tokenizer.convert_tokens_to_ids(tokens) + padding,
                input_mask=[1] * len(tokens) + padding,
                segment_ids=[0] * doc_offset + [1] * (span_length + 1) + padding,
                is_impossible=example.is_impossible)
            if is_training:
                feature.start_position = feature.end_position = 0
                if (not example.is_impossible and span_start <= answer_start
                        and answer_end <= span_start + span_length - 1):
                    feature.start_position = answer_start - span_start + doc_offset
                    feature.end_position = answer_end - span_start + doc_offset
            yield feature
            unique_id += 1
    if truncated:
        logging.info("Truncated %d question(s) longer than max_query_length=%d word pieces: %s%s", len(truncated),
                     max_query_length, ", ".join(truncated[:10]), " ..." if len(truncated) > 10 else "")
