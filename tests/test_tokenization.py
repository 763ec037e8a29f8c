"""bert_tf.tokenization: each rule by hand, then parity with Google's original code on the corpus."""

import pytest

from bert_tf import tokenization
from bert_tf.tokenization import BasicTokenizer, FullTokenizer, WordpieceTokenizer
from tests.helpers import tokenizer_data
from tools.original_bert import import_original

TOY_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing", ",", "low",
             "lowest", "a", "##a"]


def write_vocab(path, tokens):
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return str(path)


@pytest.fixture
def toy_tokenizer(tmp_path):
    return FullTokenizer(write_vocab(tmp_path / "vocab.txt", TOY_VOCAB), do_lower_case=True)


def test_full_tokenizer_toy_vocab(toy_tokenizer):
    tokens = toy_tokenizer.tokenize("UNwant\u00E9d,running")
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert toy_tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]
    assert toy_tokenizer.convert_ids_to_tokens([7, 4, 5, 10, 8, 9]) == tokens
    assert list(toy_tokenizer.vocab.items())[:3] == [("[UNK]", 0), ("[CLS]", 1), ("[SEP]", 2)]
    assert toy_tokenizer.inv_vocab[12] == "lowest"


@pytest.mark.parametrize("text, lower, expected", [
    (" \tHeLLo!how  \n Are yoU?  ", True, ["hello", "!", "how", "are", "you", "?"]),
    (" \tHeLLo!how  \n Are yoU?  ", False, ["HeLLo", "!", "how", "Are", "yoU", "?"]),
    # Accents are stripped only with lower-casing; decomposed marks then vanish, even on their own.
    ("Crème Brûlée naïve Ångström", True, ["creme", "brulee", "naive", "angstrom"]),
    ("Crème Brûlée naïve Ångström", False, ["Crème", "Brûlée", "naïve", "Ångström"]),
    ("cafe\u0301 \u0301 x", True, ["cafe", "x"]),
    ("cafe\u0301 \u0301 x", False, ["cafe\u0301", "\u0301", "x"]),
    # CJK ideographs (and only those) become words of their own; NFD maps compatibility ideographs and
    # takes the (nonspacing) voicing mark off kana: が -> か.
    ("ah博推zz ひらがな カタカナ", True, ["ah", "博", "推", "zz", "ひらかな", "カタカナ"]),
    ("ひらがな", False, ["ひらがな"]),
    ("x\U00020000y \uf900", True, ["x", "\U00020000", "y", "\u8c48"]),
    ("x\U00020000y \uf900", False, ["x", "\U00020000", "y", "\uf900"]),
    ("한국", True, ["\u1112\u1161\u11ab\u1100\u116e\u11a8"]),
    ("한국", False, ["한국"]),
    # Cleaning: NUL, U+FFFD, Cc and Cf are dropped (even the Cc that str.split() would split on);
    # \t \n \r and Zs are spaces; U+2028/U+2029 survive cleaning but str.split() splits on them.
    ("a\x00b\ufffdc\u200bd\x7fe\x01f\u00adg\x1ch\x85i\ufeffj", True, ["abcdefghij"]),
    ("a\tb\nc\rd\u00a0e\u3000f\u2028g\u2029h", False, ["a", "b", "c", "d", "e", "f", "g", "h"]),
    # Python's str.lower(): dotted I becomes "i" + U+0307 (then stripped), capital sharp s becomes ß.
    ("İstanbul ẞ STRASSE", True, ["istanbul", "ß", "strasse"]),
    # Final sigma: after a cased letter and before none, skipping case-ignorable characters ("." "'" Mn).
    ("ΟΔΟΣ Σ ΑΣ1 ΑΣ\u0301", True, ["οδος", "σ", "ας1", "ας"]),
    ("ΑΣ.Β ΑΣ. ΑΣ'Β", True, ["ασ", ".", "β", "ας", ".", "ασ", "'", "β"]),
    # Punctuation: ASCII symbols and Unicode P*; not symbols like ©; lower-casing can create it (≠ -> =).
    ("$5^2`x` a+b a©b", False, ["$", "5", "^", "2", "`", "x", "`", "a", "+", "b", "a©b"]),
    ("¿Qué? “hi”—ok…", True, ["¿", "que", "?", "“", "hi", "”", "—", "ok", "…"]),
    ("a≠b", True, ["a", "=", "b"]),
    ("a≠b", False, ["a≠b"]),
    # No NFKC: fullwidth forms and ligatures stay.
    ("ＡＢＣ１２３！ ﬁne", True, ["ａｂｃ１２３", "！", "ﬁne"]),
    # Special tokens typed in text are ordinary text; emoji are not punctuation.
    ("[MASK] hi😀", True, ["[", "mask", "]", "hi😀"]),
    ("[MASK]", False, ["[", "MASK", "]"]),
    ("", True, []),
    (" \t\u200b ", True, []),
])
def test_basic_tokenizer_rules(text, lower, expected):
    assert BasicTokenizer(do_lower_case=lower).tokenize(text) == expected


def test_wordpiece_longest_match_and_unknown():
    wordpiece = WordpieceTokenizer(vocab=tokenization.vocab_from_tokens(TOY_VOCAB))
    assert wordpiece.tokenize("unwanted running lowest low") == [
        "un", "##want", "##ed", "runn", "##ing", "lowest", "low"]
    # One piece that matches nothing makes the whole word [UNK].
    assert wordpiece.tokenize("unwantedx wax") == ["[UNK]", "[UNK]"]
    assert wordpiece.tokenize("") == []


def test_wordpiece_word_length_limit_counts_characters():
    wordpiece = WordpieceTokenizer(vocab=tokenization.vocab_from_tokens(TOY_VOCAB))
    assert wordpiece.tokenize("a" * 200) == ["a"] + ["##a"] * 199
    assert wordpiece.tokenize("a" * 201) == ["[UNK]"]
    assert WordpieceTokenizer(TOY_VOCAB, unk_token="?", max_input_chars_per_word=3).tokenize("aaaa") == ["?"]


def test_convert_to_unicode():
    assert tokenization.convert_to_unicode("café") == "café"
    assert tokenization.convert_to_unicode("café".encode("utf-8")) == "café"
    with pytest.raises(ValueError, match=r"invalid UTF-8 at byte offset 2 .*\\xff"):
        tokenization.convert_to_unicode(b"ab\xffcd")
    with pytest.raises(ValueError, match="expected str or bytes, got int: 3"):
        tokenization.convert_to_unicode(3)


def test_tokenize_bytes(toy_tokenizer):
    assert toy_tokenizer.tokenize("UNwant\u00E9d".encode("utf-8")) == ["un", "##want", "##ed"]
    with pytest.raises(ValueError, match="byte offset 6"):
        toy_tokenizer.tokenize(b"UNwant\xc3d")


def test_convert_unknown_token_or_id(toy_tokenizer):
    with pytest.raises(ValueError, match=r"token 'nope' is not in the vocab \(15 entries\)"):
        toy_tokenizer.convert_tokens_to_ids(["want", "nope"])
    with pytest.raises(ValueError, match="id 15 is not in the vocab"):
        toy_tokenizer.convert_ids_to_tokens([0, 15])


def test_load_vocab_line_endings_and_whitespace(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[PAD]\r\n  [UNK] \r\nhello\n\xc3\xa9t\xc3\xa9")  # CRLF, padding, no final newline
    assert list(tokenization.load_vocab(str(path)).items()) == [
        ("[PAD]", 0), ("[UNK]", 1), ("hello", 2), ("été", 3)]


def test_load_vocab_missing_file(tmp_path):
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(ValueError, match=f"vocab file '{missing}' does not exist"):
        tokenization.load_vocab(missing)
    with pytest.raises(ValueError, match="does not exist"):
        FullTokenizer(missing)


def test_load_vocab_empty_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"")
    with pytest.raises(ValueError, match=f"vocab '{path}' is empty"):
        tokenization.load_vocab(str(path))


def test_load_vocab_duplicate_token(tmp_path):
    path = write_vocab(tmp_path / "vocab.txt", ["[PAD]", "hello", "world", " hello"])
    with pytest.raises(ValueError, match=f"{path}:4: duplicate token 'hello' \\(first on line 2\\)"):
        tokenization.load_vocab(path)


def test_load_vocab_invalid_utf8(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[PAD]\nh\xe9llo\n")  # Latin-1, not UTF-8
    with pytest.raises(ValueError, match=f"{path}:2: invalid UTF-8 at byte offset 1 of the line"):
        tokenization.load_vocab(str(path))


# Parity with Google's original tokenizer on every corpus line.

@pytest.fixture(scope="module")
def original():
    return import_original("tokenization")


@pytest.fixture(scope="module")
def cased_vocab_file(tmp_path_factory):
    return tokenizer_data.write_cased_vocab(str(tmp_path_factory.mktemp("vocab") / "cased_vocab.txt"))


@pytest.mark.parametrize("vocab, do_lower_case", [("uncased", True), ("uncased", False), ("cased", False)])
def test_corpus_parity_with_original(original, cased_vocab_file, vocab, do_lower_case):
    vocab_file = tokenizer_data.uncased_vocab_file() if vocab == "uncased" else cased_vocab_file
    ours = FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    theirs = original.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    assert list(ours.vocab.items()) == list(theirs.vocab.items())
    lines = tokenizer_data.corpus_lines() + ("nul\x00inside\rcarriage\nnewline\r\nend",)
    assert len(lines) > 3000
    mismatches, unknown = [], 0
    for line in lines:
        tokens = ours.tokenize(line)
        expected = theirs.tokenize(line)
        ids = ours.convert_tokens_to_ids(tokens)
        if tokens != expected or ids != theirs.convert_tokens_to_ids(expected):
            mismatches.append((line, tokens, expected))
        unknown += tokens.count("[UNK]")
    assert not mismatches, f"{len(mismatches)}/{len(lines)} lines differ, first: {mismatches[0]}"
    assert unknown > 0  # the corpus reaches the [UNK] paths
