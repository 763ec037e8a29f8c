"""In-graph BERT tokenization and input packing: Keras layers usable in tf.data, Keras models and SavedModels.

`BertTokenizer` gives exactly the ids of `bert_tf.tokenization.FullTokenizer`. tensorflow-text's own BERT
tokenizers normalise differently (NFKC-like folding, a byte-based word limit, other character classes), so
the basic-tokenizer steps are built here from TF ops, driven by tables that are generated at construction
time from Python's `unicodedata` through the predicates of `bert_tf.tokenization`; only the final WordPiece
step is tensorflow-text's `FastWordpieceTokenizer` (greedy longest-match-first, like the original).
Everything is a graph op (no `py_function`); the vocab travels inside the graph (the WordPiece model is a
constant), so an exported SavedModel needs no asset file, only `import tensorflow_text` before loading.

The tables follow the Unicode version of the Python that builds the layer (Python 3.11: Unicode 14.0), as
FullTokenizer does; a SavedModel keeps the tables of the Python that exported it.

Known limit (lower-casing only): the original NFD-normalises a whole word before dropping nonspacing marks;
here each character is decomposed on its own. The two differ only where canonical reordering swaps two
combining characters that are not nonspacing marks (25 code points in Unicode 14, e.g. U+1D16D before
U+1D165), and the ids differ only if the vocab holds such characters (otherwise the word is [UNK] both ways).
"""

import functools
import unicodedata

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.batch_width import TRIM_MULTIPLE, trimmed_width
from bert_tf.feature_schema import INPUT_IDS, INPUT_MASK, SEGMENT_IDS
from bert_tf.tokenization import full_tokenizer as tokenization

# Per code point, the table holds class bits (below) | lower-case row << _ROW_SHIFT.
_DROP = 1  # removed by cleaning: U+0000, U+FFFD, Cc/Cf other than \t \n \r
_SPACE = 2  # splits words: Python's str.isspace() (cleaning turns Zs, \t, \n, \r into " ")
_CJK = 4  # a word of its own
_PUNCT = 8  # a word of its own
_CASE_IGNORABLE = 16  # skipped when Python's str.lower() looks for the context of a capital sigma
_CASED = 32  # a cased letter for that context (only meaningful without _CASE_IGNORABLE)
_ROW_SHIFT = 8  # row r > 0: the character lower-cases and strips to mapped[splits[r]:splits[r + 1]]

_BLOCK = 256  # the table is stored as deduplicated blocks of this many code points
_MAX_CODE_POINT = 0x10FFFF
# Unassigned, private-use and surrogate code points have no case mapping and no property but their range.
_NO_PROPERTIES = ("Cn", "Co", "Cs")
_CAPITAL_SIGMA = 0x3A3
_FINAL_SIGMA = 0x3C2
MAX_CHARS_PER_WORD = 200
# FastWordpieceTokenizer's limit is in bytes: no word within the character limit exceeds it.
MAX_BYTES_PER_WORD = 4 * MAX_CHARS_PER_WORD
_OVERLONG_WORD = "x" * (MAX_BYTES_PER_WORD + 1)
UNK = "[UNK]"
# Raw text is cut to this many characters per token of the packed length before tokenizing (`truncate_text`).
CHARS_PER_TOKEN = 64
# The ASCII path: pure-ASCII strings, and FullTokenizer's control characters (Cc but \t \n \r; NUL) there.
_ASCII_ONLY = "[\\x00-\\x7f]*"
_ASCII_CONTROL = "[" + "".join(f"\\x{cp:02x}" for cp in tokenization.ASCII_CONTROL_CODE_POINTS) + "]"


def _sigma_context(char):
    """(case_ignorable, cased) of `char` as Python's str.lower() sees them, probed through str.lower().

    str.lower() turns U+03A3 into final sigma when, skipping case-ignorable characters, a cased character
    precedes it and none follows; Python does not expose the two properties otherwise.
    """
    after_cased = ("A" + char + "\u03a3").lower()[-1] == "\u03c2"  # case-ignorable, or cased
    after_digit = ("1" + char + "\u03a3").lower()[-1] == "\u03c2"  # cased and not case-ignorable
    return after_cased and not after_digit, after_digit


def _classes(char):
    """The class bits of one character, from the predicates of `bert_tf.tokenization`."""
    if char.isspace():
        # Whitespace is a word boundary, which str.lower() treats like a non-cased character.
        return _DROP if tokenization.is_control(char) else _SPACE
    case_ignorable, cased = _sigma_context(char)
    return (_DROP * (char in "\x00\ufffd" or tokenization.is_control(char))
            | _CJK * tokenization.is_cjk(char)
            | _PUNCT * tokenization.is_punctuation(char)
            | _CASE_IGNORABLE * case_ignorable
            | _CASED * cased)


@functools.lru_cache(maxsize=None)
def _code_point_table():
    """Class bits and lower-case mapping of every code point, from Python's `unicodedata`.

    The lower-case mapping is `strip_accents(char.lower())` character by character (0 to 3 code points);
    only characters it changes get a row.

    Returns:
      numpy int32 arrays (block_index [0x110000 / _BLOCK], blocks [U * _BLOCK], splits [K + 2],
      mapped [V]): code point c has value blocks[block_index[c // _BLOCK] * _BLOCK + c % _BLOCK]; row 0 of
      splits is an unused empty row.
    """
    values = np.zeros(_MAX_CODE_POINT + 1, np.int32)
    splits, mapped = [0, 0], []
    for cp in range(_MAX_CODE_POINT + 1):
        char = chr(cp)
        if unicodedata.category(char) in _NO_PROPERTIES:
            values[cp] = _CJK * tokenization.is_cjk(char)
            continue
        values[cp] = _classes(char)
        lowered = tokenization.strip_accents(char.lower())
        if lowered != char:
            values[cp] |= (len(splits) - 1) << _ROW_SHIFT
            mapped.extend(ord(c) for c in lowered)
            splits.append(len(mapped))
    blocks, block_index = np.unique(values.reshape(-1, _BLOCK), axis=0, return_inverse=True)
    return (block_index.reshape(-1).astype(np.int32), blocks.reshape(-1).astype(np.int32),
            np.array(splits, np.int32), np.array(mapped, np.int32))


def wordpiece_vocab(vocab_file):
    """{token: id} of a vocab.txt path or of a list of tokens in id order; ValueError if it has no [UNK],
    which the word-piece tokenizers need."""
    if isinstance(vocab_file, str):
        vocab = tokenization.load_vocab(vocab_file)
    else:
        vocab = tokenization.vocab_from_tokens(vocab_file)
    if UNK not in vocab:
        raise ValueError(f"the vocab has no {UNK!r} token, which the tokenizer needs "
                         f"(first tokens: {list(vocab)[:5]})")
    return dict(vocab)


def fast_wordpiece(tokens, max_bytes_per_word=MAX_BYTES_PER_WORD, no_pretokenization=True):
    """tensorflow-text's FastWordpieceTokenizer of `tokens` (in id order) as the original's WordPiece:
    greedy longest match first, "##" suffixes, [UNK] for a word it cannot split or longer than the limit,
    int32 ids."""
    return tf_text.FastWordpieceTokenizer(
        vocab=tokens, suffix_indicator="##", max_bytes_per_word=max_bytes_per_word, token_out_type=tf.int32,
        unknown_token=UNK, no_pretokenization=no_pretokenization)


def token_id(token_ids, token):
    """token_ids[token]; ValueError naming the token if the vocab lacks it."""
    if token not in token_ids:
        raise ValueError(f"token {token!r} is not in the vocab ({len(token_ids)} entries)")
    return token_ids[token]


def check_utf8(strings, name, rows=None):
    """strings tf.string [B] -> the same strings, after an assertion that each one is valid UTF-8: when the
    graph runs, InvalidArgumentError `assertion failed: [NAME is not valid UTF-8 at rows] [1 3] [(counted
    from 0): ...]` (TensorFlow's Assert op writes the first two words before any message), the rows as
    positions in `strings`, or `rows[position]` when `rows` (int64 [B]) is given."""
    valid = tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="replace") == strings
    bad = tf.where(~valid)[:, 0]
    check = tf.debugging.Assert(tf.reduce_all(valid), [
        f"{name} is not valid UTF-8 at rows", bad if rows is None else tf.gather(rows, bad),
        "(counted from 0): each string must be text encoded as UTF-8"], summarize=20)
    with tf.control_dependencies([check]):
        return tf.identity(strings)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenizer(keras.layers.Layer):
    """Maps strings to BERT word-piece ids in the graph, exactly like `tokenization.FullTokenizer`.

    Input: tf.string [B] (or a scalar). Output: int32 `tf.RaggedTensor` [B, (tokens)] (or int32 [tokens]
    for a scalar), without [CLS]/[SEP]; see `BertPacker` for those. Invalid UTF-8 raises
    `InvalidArgumentError` naming the rows when the op runs (`check_utf8`; FullTokenizer raises `ValueError`).

    Args:
      vocab_file: path of a vocab.txt (one token per line), or the list of tokens in id order (what
        `get_config` stores).
      do_lower_case: lower-case and strip accents, as for the uncased models.
    """

    def __init__(self, vocab_file, do_lower_case=True, **kwargs):
        super().__init__(**kwargs)
        self._token_ids = wordpiece_vocab(vocab_file)
        self.vocab = list(self._token_ids)
        self.do_lower_case = do_lower_case
        self._block_index, self._blocks, self._lower_splits, self._lower_mapped = (
            tf.constant(t) for t in _code_point_table())
        self._wordpiece = fast_wordpiece(self.vocab)
        # For ASCII text FastWordpiece's own pre-tokenization (split at whitespace and punctuation) is the
        # basic tokenizer's, and bytes are characters, so its byte limit is the 200-character limit.
        self._ascii_wordpiece = fast_wordpiece(self.vocab, MAX_CHARS_PER_WORD, no_pretokenization=False)

    def token_to_id(self, token):
        """The id of `token` (e.g. "[CLS]"); ValueError if it is not in the vocab."""
        return token_id(self._token_ids, token)

    def call(self, strings):
        return self.tokenize(strings)

    def compute_output_spec(self, strings):
        # Keras cannot trace ragged outputs symbolically, so the spec is given: [B, (tokens)] int32.
        return keras.KerasTensor(tuple(strings.shape) + (None,), "int32", ragged=bool(strings.shape))

    def tokenize(self, strings, name="the input of BertTokenizer"):
        """tf.string [B] -> int32 RaggedTensor [B, (tokens)]; a scalar string -> int32 [tokens]. `name`: what
        the error of a string that is not UTF-8 calls the input (`check_utf8`)."""
        strings = tf.convert_to_tensor(strings, tf.string)
        if strings.shape.rank == 0:
            return self.tokenize(strings[tf.newaxis], name)[0]
        if strings.shape.rank != 1:
            raise ValueError(f"expected a scalar or a vector of strings, got shape {strings.shape}")
        # Pure-ASCII strings (most text) take a short path of whole-string ops; the others the general one.
        is_ascii = tf.strings.regex_full_match(strings, _ASCII_ONLY)
        ascii_rows, other_rows = tf.where(is_ascii)[:, 0], tf.where(~is_ascii)[:, 0]
        others = check_utf8(tf.gather(strings, other_rows), name, rows=other_rows)
        ids = tf.concat([self._tokenize_ascii(tf.gather(strings, ascii_rows)), self._tokenize_unicode(others)],
                        axis=0)
        return tf.gather(ids, tf.math.invert_permutation(tf.concat([ascii_rows, other_rows], axis=0)))

    def _tokenize_ascii(self, strings):
        """ASCII-only tf.string [B] -> int32 RaggedTensor [B, (tokens)].

        For ASCII, FullTokenizer's basic tokenizer is: drop control characters, lower-case A-Z (nothing to
        strip), split at whitespace, and make each punctuation character a word of its own; the last two
        are what FastWordpieceTokenizer does end to end.
        """
        strings = tf.strings.regex_replace(strings, _ASCII_CONTROL, "")
        if self.do_lower_case:
            strings = tf.strings.lower(strings)
        return self._ascii_wordpiece.tokenize(strings)

    def _tokenize_unicode(self, strings):
        """Any tf.string [B] -> int32 RaggedTensor [B, (tokens)], through code-point tables."""
        batch_size = tf.shape(strings, out_type=tf.int64)[0]
        chars = tf.strings.unicode_decode(strings, "UTF-8", errors="strict")
        # A space on both sides of every string keeps the context of one string out of the next.
        space = tf.fill([batch_size, 1], 32)
        chars = tf.concat([space, chars, space], axis=1)
        code_points, rows = chars.flat_values, chars.value_rowids()  # int32 [N], int64 [N]
        values = self._lookup(code_points)
        kept = tf.where(values & _DROP == 0)[:, 0]
        code_points, rows, values = (tf.gather(t, kept) for t in (code_points, rows, values))
        cjk = values & _CJK != 0
        if self.do_lower_case:
            final_sigma = tf.cond(tf.reduce_any(code_points == _CAPITAL_SIGMA),
                                  lambda: _is_final_sigma(code_points, values),
                                  lambda: tf.zeros_like(code_points, tf.bool))
            code_points, origin = self._lowercase(code_points, tf.bitwise.right_shift(values, _ROW_SHIFT))
            code_points = tf.where(tf.gather(final_sigma, origin), _FINAL_SIGMA, code_points)
            rows, cjk = tf.gather(rows, origin), tf.gather(cjk, origin)
            values = self._lookup(code_points)
        words, word_rows = _split_words(code_points, values & _SPACE != 0,
                                        cjk | (values & _PUNCT != 0), rows)
        pieces = self._wordpiece_ids(words)
        pieces_per_string = tf.math.unsorted_segment_sum(pieces.row_lengths(), word_rows, batch_size)
        return tf.RaggedTensor.from_row_lengths(pieces.flat_values, pieces_per_string, validate=False)

    def _lookup(self, code_points):
        """int32 [N] code points -> int32 [N] values of `_code_point_table`."""
        block = tf.gather(self._block_index, code_points // _BLOCK)
        return tf.gather(self._blocks, block * _BLOCK + code_points % _BLOCK)

    def _lowercase(self, code_points, lower_rows):
        """Lower-cases and strips accents character by character.

        Args:
          code_points: int32 [N]; lower_rows: int32 [N], their rows in the lower-case mapping (0: none).

        Returns:
          (mapped, origin): int32 [M] code points, int64 [M] index of the input character each comes from.
        """
        begin = tf.gather(self._lower_splits, lower_rows)
        lengths = tf.where(lower_rows > 0, tf.gather(self._lower_splits, lower_rows + 1) - begin, 1)
        offsets = tf.ragged.range(lengths, row_splits_dtype=tf.int64)
        origin = offsets.value_rowids()
        mapped = tf.gather(self._lower_mapped, tf.gather(begin, origin) + offsets.flat_values)
        return tf.where(tf.gather(lower_rows, origin) > 0, mapped, tf.gather(code_points, origin)), origin

    def _wordpiece_ids(self, words):
        """int32 RaggedTensor [W, (chars)] of code points -> int32 RaggedTensor [W, (pieces)] of ids."""
        # A word over the character limit becomes one that is over WordPiece's byte limit: [UNK].
        too_long = words.row_lengths() > MAX_CHARS_PER_WORD
        strings = tf.where(too_long, _OVERLONG_WORD, tf.strings.unicode_encode(words, "UTF-8"))
        return self._wordpiece.tokenize(strings)

    def get_config(self):
        config = super().get_config()
        config.update(vocab_file=self.vocab, do_lower_case=self.do_lower_case)
        return config


def _is_final_sigma(code_points, values):
    """bool [N]: where Python's str.lower() turns U+03A3 into the final sigma U+03C2 (not U+03C3).

    The sigma is final when the nearest character before it that is not case-ignorable is cased and the
    nearest such character after it is not. Whitespace (and the padding spaces) are not case-ignorable
    and not cased, so the search never leaves the word.
    """
    anchor = values & _CASE_IGNORABLE == 0
    anchor_cased = tf.boolean_mask(values & _CASED != 0, anchor)
    anchor_index = tf.cumsum(tf.cast(anchor, tf.int32)) - 1  # a sigma is itself anchor `anchor_index`
    before = tf.gather(anchor_cased, tf.maximum(anchor_index - 1, 0))
    after = tf.gather(anchor_cased, tf.minimum(anchor_index + 1, tf.size(anchor_cased) - 1))
    return (code_points == _CAPITAL_SIGMA) & before & ~after


def _split_words(code_points, space, alone, rows):
    """Groups characters into words: runs of ordinary characters, and each `alone` character by itself.

    Args:
      code_points: int32 [N]; space, alone: bool [N]; rows: int64 [N] string index of each character.

    Returns:
      (words, word_rows): int32 RaggedTensor [W, (chars)], int64 [W] string index of each word.
    """
    ordinary = ~space & ~alone
    after_ordinary = tf.roll(ordinary, shift=1, axis=0)  # the first character is a padding space
    starts = alone | (ordinary & ~after_ordinary)
    word_index = tf.cumsum(tf.cast(starts, tf.int64)) - 1
    words = tf.RaggedTensor.from_value_rowids(
        tf.boolean_mask(code_points, ~space), tf.boolean_mask(word_index, ~space),
        nrows=tf.reduce_sum(tf.cast(starts, tf.int64)), validate=False)
    return words, tf.boolean_mask(rows, starts)


def text_budget(seq_length):
    """The characters of one string that packing into `seq_length` tokens reads (`truncate_text`):
    CHARS_PER_TOKEN per token plus one longest word (MAX_CHARS_PER_WORD); at most 4 bytes each."""
    return seq_length * CHARS_PER_TOKEN + MAX_CHARS_PER_WORD


def truncate_text(strings, seq_length):
    """tf.string [B] -> each string's first `text_budget(seq_length)` characters (cut at a character boundary):
    tokenizing them for `seq_length` packed tokens takes work and memory that follow seq_length (at most
    4 * text_budget bytes a string), not the size of the string.

    The packed ids are those of the whole string whenever it fits in the budget, or its part before some
    whitespace character within the budget already holds seq_length tokens: the words before a whitespace are
    whole, so they split into the same pieces. Real text is far inside that bound (prose takes 4 to 6
    characters per token; the budget allows CHARS_PER_TOKEN = 64, plus MAX_CHARS_PER_WORD for the last word).
    Past it, the tokens after the cut are lost and the last word may be cut, as if the string ended there.
    Bytes past the cut are never read, so they are not checked to be UTF-8 either."""
    return tf.strings.substr(strings, 0, text_budget(seq_length), unit="UTF8_CHAR")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPacker(keras.layers.Layer):
    """Packs one or two segments of token ids into BERT inputs of at most `seq_length` tokens.

    `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, then `pad_id` up to `seq_length` (or, with
    `pad_to_max_length=False`, up to the longest packed row of the batch rounded up to a multiple of
    `PAD_MULTIPLE`, at most `seq_length`: short requests cost short sequences; a batch of no rows gets the
    T of a `[CLS] [SEP]` row). Truncation as in the original: a single segment keeps its first
    `seq_length - 2` tokens; a pair loses one token at a time from the end of the longer segment (of B when
    they are equally long) until it fits in `seq_length - 3`.

    Input: an int RaggedTensor [B, (tokens)] (or a dense [tokens] for one example), or a list/tuple of two.
    Output: dict of int32 [B, T] (or [T]), T = seq_length or the batch's rounded length: `input_ids`,
    `input_mask` (1 on [CLS], the tokens and the [SEP]s), `segment_ids` (0 up to the first [SEP], then 1).

    Args:
      seq_length: total length, >= 2 (>= 3 for pairs).
      cls_id, sep_id, pad_id: ids of [CLS], [SEP], [PAD]; the defaults are the English BERT vocab's
        (`BertTokenizer.token_to_id` looks them up in others).
      pad_to_max_length: pad every batch to seq_length (True) or to its own rounded length (False).
    """

    PAD_MULTIPLE = TRIM_MULTIPLE  # a batch's length is rounded up to this (`batch_width.trimmed_width`'s rule)

    def __init__(self, seq_length, cls_id=101, sep_id=102, pad_id=0, pad_to_max_length=True, **kwargs):
        super().__init__(**kwargs)
        if seq_length < 2:
            raise ValueError(f"seq_length={seq_length} leaves no room for [CLS] and [SEP]; expected >= 2")
        self.seq_length = seq_length
        self.cls_id = cls_id
        self.sep_id = sep_id
        self.pad_id = pad_id
        self.pad_to_max_length = pad_to_max_length

    def call(self, inputs):
        segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(segments) not in (1, 2):
            raise ValueError(f"expected one or two segments, got {len(segments)}")
        if len(segments) == 2 and self.seq_length < 3:
            raise ValueError(f"seq_length={self.seq_length} leaves no room for [CLS] and two [SEP]; "
                             "expected >= 3 for pairs")
        segments = [tf.cast(s, tf.int32) for s in segments]
        if not isinstance(segments[0], tf.RaggedTensor):  # one example: [tokens]
            if segments[0].shape.rank != 1:
                raise ValueError("expected RaggedTensor segments [B, (tokens)] or dense ones [tokens], got "
                                 f"a dense tensor of shape {segments[0].shape}")
            packed = self.call([tf.RaggedTensor.from_tensor(s[tf.newaxis]) for s in segments])
            return {name: value[0] for name, value in packed.items()}
        lengths = [s.row_lengths() for s in segments]
        if len(segments) == 1:
            keep = [tf.minimum(lengths[0], self.seq_length - 2)]
        else:
            # The original's loop in closed form: a segment keeps all its tokens if the other one can
            # take the cut; otherwise both end at half the budget, A taking the odd token.
            budget = self.seq_length - 3
            keep_a = tf.minimum(lengths[0], tf.maximum(budget - lengths[1], (budget + 1) // 2))
            keep = [keep_a, tf.minimum(lengths[1], budget - keep_a)]
        ids, types = [self._fill(segments[0], self.cls_id)], [self._fill(segments[0], 0)]
        for segment_id, (segment, n) in enumerate(zip(segments, keep)):
            segment = tf.ragged.boolean_mask(segment, tf.ragged.range(segment.row_lengths()) < n[:, None])
            ids += [segment, self._fill(segment, self.sep_id)]
            types += [tf.ones_like(segment) * segment_id, self._fill(segment, segment_id)]
        ids, types = tf.concat(ids, axis=1), tf.concat(types, axis=1)
        shape = [None, self.seq_length]
        if not self.pad_to_max_length:
            # At least 2 ([CLS] [SEP]), the shortest packed row: a request of zero rows gets T > 0 too.
            longest = tf.maximum(tf.cast(ids.bounding_shape()[1], tf.int32), 2)
            shape = tf.stack([tf.cast(ids.nrows(), tf.int32), trimmed_width(longest, self.seq_length)])
        return {
            INPUT_IDS: ids.to_tensor(self.pad_id, shape=shape),
            INPUT_MASK: tf.ones_like(ids).to_tensor(0, shape=shape),
            SEGMENT_IDS: types.to_tensor(0, shape=shape),
        }

    def compute_output_spec(self, inputs):
        # Keras traces a ragged input as a dense placeholder, so the spec is given rather than traced.
        first = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        shape = tuple(first.shape[:-1]) + (self.seq_length if self.pad_to_max_length else None,)
        return {name: keras.KerasTensor(shape, "int32")
                for name in (INPUT_IDS, INPUT_MASK, SEGMENT_IDS)}

    @staticmethod
    def _fill(segment, value):
        """int32 RaggedTensor [B, (1)] holding `value`, one per row of `segment`."""
        return tf.RaggedTensor.from_tensor(tf.fill([segment.nrows(), 1], value))

    def get_config(self):
        config = super().get_config()
        config.update(seq_length=self.seq_length, cls_id=self.cls_id, sep_id=self.sep_id,
                      pad_id=self.pad_id, pad_to_max_length=self.pad_to_max_length)
        return config
