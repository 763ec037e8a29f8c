"""Token classification data in the CoNLL format: reading, features, predictions.

CoNLL format: one word per line, its tag in the last whitespace-separated column (CoNLL-2003's
`word POS chunk NER`, WNUT's `word<TAB>tag` and the one-character-per-line Chinese files of MSRA NER all
work), a blank line between sentences, `-DOCSTART-` lines ignored. A file to predict may have the words alone.

The tags follow one of SCHEMES: "entities" (`O` or `<prefix>-<type>` with prefix B, I (BIO / IOB1) or
B, I, E, S (IOBES); scored by conlleval), "segmentation" (Chinese word segmentation: one character per word,
tagged B / M / E / S for the begin, middle and end of a word and a single-character word; scored by word
precision / recall / F1 as the SIGHAN bakeoff) or "pos" (any tag per word, e.g. part of speech; scored by
accuracy). People's Daily `word/TAG` files are read by `bert_tf.data.tasks.peoples_daily` into the same
sentences.

Each word is split into word pieces; as in the BERT paper (section 5.3) the word's label is predicted at
its first piece and the other pieces are ignored (label IGNORE_LABEL).
"""

import dataclasses
import re

import numpy as np
from absl import logging

from bert_tf import atomic_io
from bert_tf.data import windows
from bert_tf.data.packing import truncation_note
from bert_tf.data.text_lines import read_lines
from bert_tf.feature_schema import IGNORE_LABEL, INPUT_IDS, INPUT_MASK, IS_REAL_EXAMPLE, LABEL_IDS, SEGMENT_IDS

SCHEMES = ("entities", "segmentation", "pos")
_TAG_PATTERNS = {"entities": re.compile(r"^(O|[BIES]-\S+)$"), "segmentation": re.compile(r"^[BMES]$"),
                 "pos": re.compile(r"^\S+$")}
_TAG_HELP = {"entities": "O, B-X, I-X, E-X or S-X", "segmentation": "B, M, E or S", "pos": "a tag"}
# The tag predicted for words beyond max_seq_length: outside any entity, a one-character word, no POS tag.
TRUNCATED_TAG = {"entities": "O", "segmentation": "S", "pos": "O"}


def check_scheme(scheme):
    """ValueError unless `scheme` is one of SCHEMES."""
    if scheme not in SCHEMES:
        raise ValueError(f"tag scheme {scheme!r} is not one of {', '.join(SCHEMES)}")


def check_tag(tag, scheme, where):
    """ValueError naming `where` ("path:line") unless `tag` is a tag of `scheme`."""
    if not _TAG_PATTERNS[scheme].match(tag):
        raise ValueError(f"{where}: tag {tag!r} is not {_TAG_HELP[scheme]} (tag scheme {scheme})")


@dataclasses.dataclass
class TaggedSentence:
    """words: list of str; tags: list of str, or None when the file has no tags; source: "path:line" of the
    first word; one_line: all the words are on that line (People's Daily), else word i is on line + i (CoNLL)."""
    words: list
    tags: list
    source: str
    one_line: bool = False

    def where(self, index):
        """"path:line" of word `index`."""
        if self.one_line:
            return self.source
        path, line = self.source.rsplit(":", 1)
        return f"{path}:{int(line) + index}"


def read_conll(path, scheme="entities"):
    """The sentences of a CoNLL file whose tags follow `scheme` (one of SCHEMES).

    Raises:
      ValueError naming `path:line`: a tag not of the scheme, lines with and without a tag column in the same
      file, invalid UTF-8; naming `path`: a file without sentences.
    """
    check_scheme(scheme)
    sentences, words, tags, start, tagged = [], [], [], None, None
    for number, text in list(read_lines(path)) + [(None, "")]:
        fields = text.split()
        if not fields or fields[0] == "-DOCSTART-":
            if words:
                sentences.append(TaggedSentence(words, tags if tagged else None, f"{path}:{start}"))
            words, tags = [], []
            continue
        if tagged is None:
            tagged = len(fields) > 1
        if tagged != (len(fields) > 1):
            raise ValueError(f"{path}:{number}: {len(fields)} column(s), but the file's first word line had "
                             f"{'a tag' if tagged else 'no tag'}")
        if tagged:
            check_tag(fields[-1], scheme, f"{path}:{number}")
        if not words:
            start = number
        words.append(fields[0])
        tags.append(fields[-1] if tagged else None)
    if not sentences:
        raise ValueError(f"{path}: no sentences")
    return sentences


def label_list(sentences):
    """The sorted distinct tags of `sentences`, "O" first (label id 0)."""
    tags = {t for s in sentences for t in s.tags or ()}
    return ["O"] * ("O" in tags) + sorted(tags - {"O"})


def check_tagged(sentences, role):
    """ValueError naming the file (`path:line` of its first sentence) unless `sentences` have tags: a "training"
    file (`role`) is learnt from them, a "dev" file scored against them. A file of words alone (a CoNLL file
    without a tag column, People's Daily text without `/TAG`, or a CoNLL file read as People's Daily) is one to
    predict. The readers refuse files with and without tags, so the first sentence tells."""
    first = sentences[0]
    if first.tags is None:
        expected = ("`word/TAG` items (People's Daily format; input_format=conll reads CoNLL files)" if first.one_line
                    else "a tag after each word (`word tag` lines, CoNLL format)")
        raise ValueError(f"{first.source}: the {role} file has no tags; expected {expected}")


def check_training_tags(sentences, scheme):
    """ValueError naming the file unless the training `sentences` can train a tagger of `scheme`: they have tags
    (`check_tagged`) and, for "entities", at least one entity tag (with O alone the model has one label to
    predict, and predicts it)."""
    check_tagged(sentences, "training")
    if scheme == "entities" and label_list(sentences) == ["O"]:
        path = sentences[0].source.rsplit(":", 1)[0]
        raise ValueError(f"{path}: no entity tags (every tag is O); an entity tagger needs B-X / I-X tags to learn "
                         "from (tag_scheme=pos for other tags?)")


def check_tags(sentences, labels, scheme="entities"):
    """ValueError naming `path:line` at the first tag of `sentences` that is not in `labels` (the training
    file's tags, `label_list`): the model cannot predict it, so a dev or test file with it cannot be scored.
    Untagged sentences pass. Scheme "pos" only warns: a rare part of speech missing from the training file is
    common, and its words simply count as errors (their label is IGNORE_LABEL in `convert_sentences`)."""
    known = set(labels)
    unknown = [(sentence, index) for sentence in sentences for index, tag in enumerate(sentence.tags or ())
               if tag not in known]
    if not unknown:
        return
    sentence, index = unknown[0]
    message = f"{sentence.where(index)}: tag {sentence.tags[index]!r} is not one of the training tags"
    if scheme != "pos":
        raise ValueError(f"{message} ({' '.join(labels)})")
    logging.warning("%s; %d word(s) have tags the training file lacks (%s): they cannot be predicted and count "
                    "as errors", message, len(unknown), " ".join(sorted({s.tags[i] for s, i in unknown})))


def is_iobes(labels):
    """True when the tags use the E- / S- prefixes (IOBES), which conlleval needs mapped to BIO."""
    return any(t[:2] in ("E-", "S-") for t in labels)


def convert_sentences(sentences, labels, max_seq_length, tokenizer, scheme="entities", doc_stride=None):
    """Sentences -> features for BertTokenClassifier.

    `[CLS] pieces [SEP]`, zero-padded; a word that tokenizes to nothing becomes [UNK] so every word has a
    first piece. A tag not in `labels` is a ValueError, or for scheme "pos" a warning and the label
    IGNORE_LABEL (`check_tags`). A sentence longer than max_seq_length - 2 pieces:
      doc_stride None: cut there; the words that do not fit whole are dropped (counted and logged, and
        predicted TRUNCATED_TAG).
      doc_stride N: read whole, as windows of max_seq_length - 2 pieces N apart (`bert_tf.data.windows`), one
        row each; a word is labelled in every window that holds its first piece and predicted in the one where
        that piece has the most context. No word is dropped.

    Returns:
      (features, word_positions): features {"input_ids", "input_mask", "segment_ids": int32 [R, T],
      "label_ids": int32 [R, T] (label id at each word's first piece, IGNORE_LABEL elsewhere and for
      untagged sentences), "is_real_example": int32 [R]}, R rows (one per sentence, or per window);
      word_positions: per sentence, a (row, position) pair for each predicted word: where its tag is read.
    """
    check_tags(sentences, labels, scheme)
    label_map = {label: i for i, label in enumerate(labels)}
    window = max_seq_length - 2
    rows, word_positions, truncated_words, truncated_sentences, windowed = [], [], 0, 0, 0
    for sentence in sentences:
        pieces, first_pieces, piece_labels = [], [], []
        for index, word in enumerate(sentence.words):
            word_pieces = tokenizer.tokenize(word) or ["[UNK]"]
            tag = sentence.tags[index] if sentence.tags else None
            first_pieces.append(len(pieces))
            piece_labels += [label_map.get(tag, IGNORE_LABEL)] + [IGNORE_LABEL] * (len(word_pieces) - 1)
            pieces += word_pieces
        if doc_stride is None:
            ends = first_pieces[1:] + [len(pieces)]  # each word's end: where the next word starts
            kept = sum(end <= window for end in ends)
            if kept < len(sentence.words):
                truncated_words += len(sentence.words) - kept
                truncated_sentences += 1
            spans = [(0, ends[kept - 1] if kept else 0)]
            best = [0] * kept
        else:
            spans = windows.doc_spans(len(pieces), window, doc_stride)
            windowed += len(spans) > 1
            best_windows = windows.max_context_windows(spans, len(pieces))
            best = [best_windows[first] for first in first_pieces]
        word_positions.append([(len(rows) + w, 1 + first - spans[w][0]) for w, first in zip(best, first_pieces)])
        rows += [(pieces[start:start + length], piece_labels[start:start + length]) for start, length in spans]
    features = {k: np.zeros((len(rows), max_seq_length), np.int32) for k in (INPUT_IDS, INPUT_MASK, SEGMENT_IDS)}
    features[LABEL_IDS] = np.full((len(rows), max_seq_length), IGNORE_LABEL, np.int32)
    features[IS_REAL_EXAMPLE] = np.ones(len(rows), np.int32)
    for row, (pieces, piece_labels) in enumerate(rows):
        length = len(pieces) + 2
        features[INPUT_IDS][row, :length] = tokenizer.convert_tokens_to_ids(["[CLS]", *pieces, "[SEP]"])
        features[INPUT_MASK][row, :length] = 1
        features[LABEL_IDS][row, 1:length - 1] = piece_labels
    if len(rows) > len(sentences):
        logging.info("%s: read whole in windows of %d word pieces, %d apart (%d rows for %d sentences)",
                     truncation_note(windowed, len(sentences), "sentences", max_seq_length), window, doc_stride,
                     len(rows), len(sentences))
    if truncated_words:
        logging.warning("%s: %d of their words did not fit and get the tag of a truncated word (O, or S in "
                        "segmentation)", truncation_note(truncated_sentences, len(sentences), "sentences",
                                                         max_seq_length), truncated_words)
    return features, word_positions


def predicted_tags(logits, word_positions, labels, sentences, truncated_tag="O"):
    """Per sentence, the predicted tag of every word: the argmax at its first piece in the row
    `word_positions` names (`convert_sentences`), `truncated_tag` for words that were truncated away.
    logits: float [R, T, num_labels] (or label ids int [R, T])."""
    ids = np.asarray(logits)
    if ids.ndim == 3:
        ids = ids.argmax(-1)
    result = []
    for positions, sentence in zip(word_positions, sentences):
        tags = [labels[ids[row, position]] for row, position in positions]
        result.append(tags + [truncated_tag] * (len(sentence.words) - len(tags)))
    return result


def write_predictions(path, sentences, predictions):
    """CoNLL output, one `word gold predicted` line per word (`word predicted` for untagged input) and a
    blank line after each sentence: the input format of the conlleval script."""
    with atomic_io.atomic_write(path) as f:
        for sentence, tags in zip(sentences, predictions):
            for index, (word, tag) in enumerate(zip(sentence.words, tags)):
                gold = f" {sentence.tags[index]}" if sentence.tags else ""
                f.write(f"{word}{gold} {tag}\n")
            f.write("\n")
