"""BERT tokenization in pure Python, with the semantics of google-research/bert character for character.

`FullTokenizer` = `BasicTokenizer` (cleaning, CJK spacing, whitespace split, optional lower-casing and
accent stripping, punctuation split) followed by `WordpieceTokenizer` (greedy longest-match-first).
The character predicates below are also the source of truth for the in-graph tokenizer in
`bert_tf.tokenization.in_graph`, which builds its lookup tables from them.

Differences from the original, all in error handling: invalid UTF-8 raises a `ValueError` (the original
silently drops the bad bytes), and so do a duplicate vocab token (the original keeps the first one and
renumbers the following ids), an unknown token or id in the conversions (the original raises `KeyError`),
a missing or empty vocab file.
"""

import collections
import re
import unicodedata

# Code point ranges (inclusive) that the original treats as CJK ideographs: each such character becomes a
# word of its own. Hangul, Hiragana and Katakana are deliberately not in them.
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)

# ASCII characters that are not letters, digits or whitespace count as punctuation ("$", "^", "`", ...).
_ASCII_PUNCTUATION_RANGES = ((33, 47), (58, 64), (91, 96), (123, 126))
# The ASCII code points that cleaning drops (control characters; \t \n \r are whitespace).
ASCII_CONTROL_CODE_POINTS = (*range(0, 9), 11, 12, *range(14, 32), 127)
# BasicTokenizer's ASCII fast path: drop those, then the words are the runs of other non-space characters and
# single punctuation marks.
_ASCII_CONTROL = dict.fromkeys(ASCII_CONTROL_CODE_POINTS)
_ASCII_PUNCTUATION_CLASS = "".join(f"\\x{lo:02x}-\\x{hi:02x}" for lo, hi in _ASCII_PUNCTUATION_RANGES)
_ASCII_WORD = re.compile(f"[{_ASCII_PUNCTUATION_CLASS}]|[^{_ASCII_PUNCTUATION_CLASS}\\s]+")


def convert_to_unicode(text):
    """Returns `text` as `str`; `bytes` must be valid UTF-8.

    Raises:
      ValueError: for invalid UTF-8 (naming the byte offset and the bad bytes) or a type that is neither
        `str` nor `bytes`.
    """
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"invalid UTF-8 at byte offset {e.start} ({e.reason}: {text[e.start:e.end]!r}) "
                f"in {text[:80]!r}") from None
    raise ValueError(f"expected str or bytes, got {type(text).__name__}: {text!r}")


def vocab_from_tokens(tokens, source="<tokens>"):
    """Maps tokens (in id order) to their ids: an `OrderedDict` token -> id.

    Args:
      tokens: iterable of `str`, token i gets id i.
      source: where the tokens come from, for error messages (a file name).

    Raises:
      ValueError: if a token appears twice (naming both positions, 1-based) or there are no tokens.
    """
    vocab = collections.OrderedDict()
    for index, token in enumerate(tokens):
        if token in vocab:
            raise ValueError(
                f"{source}:{index + 1}: duplicate token {token!r} (first on line {vocab[token] + 1})")
        vocab[token] = index
    if not vocab:
        raise ValueError(f"vocab {source!r} is empty")
    return vocab


def load_vocab(vocab_file):
    """Reads a vocab file (one token per line, id = 0-based line number) into an `OrderedDict` token -> id.

    Lines are split on "\\n" and stripped of surrounding whitespace, like the original's reader.

    Raises:
      ValueError: if the file does not exist, is empty, has a line that is not valid UTF-8, or has a
        duplicate token; the message names the file and the line.
    """
    try:
        with open(vocab_file, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ValueError(f"vocab file {vocab_file!r} does not exist") from None
    lines = data.split(b"\n")
    if lines[-1] == b"":  # the newline that ends the last line starts no new one
        lines.pop()
    tokens = []
    for number, line in enumerate(lines, start=1):
        try:
            tokens.append(line.decode("utf-8").strip())
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{vocab_file}:{number}: invalid UTF-8 at byte offset {e.start} of the line "
                f"({e.reason}: {line[e.start:e.end]!r})") from None
    return vocab_from_tokens(tokens, source=vocab_file)


def is_whitespace(char):
    """True for " ", "\\t", "\\n", "\\r" and category Zs: the characters cleaning turns into a space."""
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def is_control(char):
    """True for categories Cc and Cf except "\\t", "\\n", "\\r": the characters cleaning drops."""
    return char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf")


def is_punctuation(char):
    """True for non-alphanumeric printable ASCII and for every Unicode category P*."""
    cp = ord(char)
    return (any(lo <= cp <= hi for lo, hi in _ASCII_PUNCTUATION_RANGES)
            or unicodedata.category(char).startswith("P"))


def is_cjk(char):
    """True for the code points of `CJK_RANGES`."""
    cp = ord(char)
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def strip_accents(text):
    """NFD-decomposes `text` and drops the nonspacing marks (category Mn)."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def split_on_punctuation(text):
    """Splits `text` into runs of non-punctuation characters and single punctuation characters."""
    words = []
    start_new_word = True
    for char in text:
        if is_punctuation(char):
            words.append(char)
            start_new_word = True
        else:
            if start_new_word:
                words.append("")
            start_new_word = False
            words[-1] += char
    return words


class BasicTokenizer:
    """Cleaning, CJK spacing, whitespace and punctuation splitting, optional lower-casing.

    Steps, in order: drop U+0000, U+FFFD and control characters and turn whitespace into spaces; put
    spaces around CJK ideographs; split on whitespace (Python `str.split`); for each word, if
    `do_lower_case`, `str.lower()` then `strip_accents`; split punctuation off; drop empty words.
    No NFKC: fullwidth forms and ligatures are kept as they are.
    """

    def __init__(self, do_lower_case=True):
        self.do_lower_case = do_lower_case

    def tokenize(self, text):
        """Splits `text` (`str`, or UTF-8 `bytes`) into a list of words and punctuation marks."""
        text = convert_to_unicode(text)
        if text.isascii():  # the same steps with whole-string operations (no CJK, accents or Unicode classes)
            text = text.translate(_ASCII_CONTROL)
            return _ASCII_WORD.findall(text.lower() if self.do_lower_case else text)
        chars = []
        for char in text:
            if char in ("\x00", "\ufffd") or is_control(char):
                continue
            if is_cjk(char):
                chars.append(f" {char} ")
            else:
                chars.append(" " if is_whitespace(char) else char)
        words = []
        for word in "".join(chars).split():
            if self.do_lower_case:
                word = strip_accents(word.lower())
            words.extend(split_on_punctuation(word))
        # Lower-casing and NFD can produce whitespace, so split once more (as the original does).
        return " ".join(words).split()


_CACHE_SIZE = 1 << 18


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece over a vocab; continuation pieces carry the "##" prefix.

    A word longer than `max_input_chars_per_word` characters (code points), or one that cannot be
    covered by vocab pieces, becomes a single `unk_token`.
    """

    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        self._cache = {}  # word -> its pieces: real text repeats words (emptied when it reaches _CACHE_SIZE)

    def tokenize(self, text):
        """Splits whitespace-separated words (output of `BasicTokenizer`) into a list of word pieces."""
        pieces = []
        for word in convert_to_unicode(text).split():
            pieces.extend(self._tokenize_word(word))
        return pieces

    def _tokenize_word(self, word):
        pieces = self._cache.get(word)
        if pieces is None:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            pieces = self._cache[word] = self._split_word(word)
        return pieces

    def _split_word(self, word):
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        pieces = []
        start = 0
        while start < len(word):
            prefix = "##" if start > 0 else ""
            for end in range(len(word), start, -1):
                piece = prefix + word[start:end]
                if piece in self.vocab:
                    break
            else:
                return [self.unk_token]
            pieces.append(piece)
            start = end
        return pieces


class FullTokenizer:
    """End-to-end tokenization: `BasicTokenizer` then `WordpieceTokenizer`, plus token <-> id conversion.

    Attributes:
      vocab: `OrderedDict` token -> id, read by `load_vocab`.
      inv_vocab: dict id -> token.
    """

    def __init__(self, vocab_file, do_lower_case=True):
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {i: token for token, i in self.vocab.items()}
        self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)

    def tokenize(self, text):
        """Returns the list of word pieces (str) of `text` (`str`, or UTF-8 `bytes`)."""
        return [piece
                for word in self.basic_tokenizer.tokenize(text)
                for piece in self.wordpiece_tokenizer.tokenize(word)]

    def convert_tokens_to_ids(self, tokens):
        """Maps tokens to ids; ValueError naming the first token that is not in the vocab."""
        return _convert(self.vocab, tokens, "token")

    def convert_ids_to_tokens(self, ids):
        """Maps ids to tokens; ValueError naming the first id that is not in the vocab."""
        return _convert(self.inv_vocab, ids, "id")


def _convert(mapping, items, kind):
    try:
        return [mapping[item] for item in items]
    except KeyError as e:
        raise ValueError(f"{kind} {e.args[0]!r} is not in the vocab ({len(mapping)} entries)") from None
