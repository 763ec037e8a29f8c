"""Chinese word boundaries for whole-word masking, the way Chinese-BERT-wwm made its data.

BERT tokenizes Chinese per character (the original's rule, unchanged here), so the "##" pieces that
`--do_whole_word_mask` groups never join Chinese characters into words. With a word segmenter, each Chinese
character that is not the first character of its word is marked as continuing the word before it, and masking
takes the word's characters together. The mark only groups: the ids written are the characters' own.

    SEGMENTERS: none (no Chinese words: the original's behaviour), jieba (`pip install jieba`: its default
    dictionary, precise mode), spaces (the input is pre-segmented: words are separated by spaces, as in
    People's Daily's segmented text; those spaces are word boundaries for BERT's tokenizer too, which splits
    Chinese characters apart anyway but not, say, "１０℃"). `check_segmented` refuses input whose "words" are
    whole clauses or lines (text without the spaces): none of them could be masked.

Where a mark travels: `ChunkTokenizer` (instances.py) gives a continuing character's id plus the vocab size,
so the instance algorithm (which only moves ids around) carries it for free; `mark_continuations` and
`split_continuations` are the two ends.
"""

import itertools

from bert_tf.tokenization.full_tokenizer import is_cjk

SEGMENTERS = ("none", "jieba", "spaces")
# check_segmented: how many lines of each file it reads, and the longest mean word length (in Chinese characters)
# that it takes for segmented text. People's Daily's words average 1.7 characters (any 1,000 of its lines: at
# most 1.75); its lines with the spaces removed average 83.
SAMPLE_LINES = 1000
MAX_MEAN_WORD_LENGTH = 4.0


def segmenter(name):
    """The segmenter `name` (one of SEGMENTERS) as a function chunk (`str` without spaces) -> its words (`str`s
    that concatenate to the chunk), or None for "none". ValueError for another name; jieba is imported at the
    first call (ValueError with the pip command when it is missing)."""
    if name not in SEGMENTERS:
        raise ValueError(f"chinese_word_segmenter={name!r}: expected one of {', '.join(SEGMENTERS)}")
    if name == "none":
        return None
    return _jieba_words if name == "jieba" else _the_chunk  # module functions: worker processes unpickle them


def _the_chunk(chunk):
    return [chunk]  # pre-segmented text: a chunk between spaces is a word


def _jieba_words(chunk):
    try:
        import jieba
    except ImportError:
        raise ValueError("chinese_word_segmenter=jieba needs the jieba package: pip install jieba==0.42.1") from None
    jieba.setLogLevel(60)  # its dictionary-loading lines, once per process
    return list(jieba.cut(chunk, HMM=True))


def mean_word_length(lines):
    """(mean number of CJK characters per word, number of words) over the space-separated words of `lines` that
    hold a CJK character; (0.0, 0) when none does."""
    lengths = [n for line in lines for word in line.split() if (n := sum(map(is_cjk, word)))]
    return (sum(lengths) / len(lengths) if lengths else 0.0), len(lengths)


def check_segmented(paths, sample_lines=SAMPLE_LINES):
    """ValueError naming the file unless the first `sample_lines` lines of each of `paths` look segmented (for
    segmenter "spaces"): their Chinese words average at most MAX_MEAN_WORD_LENGTH characters. Unsegmented text
    makes each clause or line one "word", longer than a whole instance's masked positions: whole-word masking
    then masks nothing but the punctuation between them."""
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:  # bad bytes are the corpus reader's to report
            lines = list(itertools.islice(f, sample_lines))
        mean, words = mean_word_length(lines)
        if mean > MAX_MEAN_WORD_LENGTH:
            raise ValueError(f"chinese_word_segmenter=spaces: the Chinese words of {path} average {mean:.1f} "
                             f"characters over its first {len(lines)} lines ({words} words; segmented text averages "
                             f"under {MAX_MEAN_WORD_LENGTH:g}: no spaces between the words?); segment the text first "
                             "(words separated by spaces), or use chinese_word_segmenter=jieba")


def continuations(words):
    """For each CJK character of `words` in order: True when it is not the first character of its word."""
    flags = []
    for word in words:
        flags.extend(position > 0 for position, char in enumerate(word) if is_cjk(char))
    return flags


def mark_continuations(basic_tokens, piece_ids, words, vocab_size):
    """The ids of one chunk with its continuing Chinese characters marked: `basic_tokens` (BasicTokenizer's
    tokens of the chunk), `piece_ids` (list per basic token of its WordPiece ids), `words` (the segmenter's
    words of the chunk). A basic token that is one CJK character (BERT gives every CJK character its own
    token, so they come in the order of the text) gets its id + `vocab_size` when it continues a word."""
    flags = iter(continuations(words))
    ids = []
    for token, pieces in zip(basic_tokens, piece_ids):
        if len(token) == 1 and is_cjk(token) and next(flags, False):
            pieces = [piece + vocab_size for piece in pieces]
        ids.extend(pieces)
    return ids


def split_continuations(ids, vocab_size):
    """(ids with the marks removed, per position whether it was marked) of a marked id list; (ids, None) when
    nothing is marked."""
    if not any(i >= vocab_size for i in ids):
        return ids, None
    return [i - vocab_size if i >= vocab_size else i for i in ids], [i >= vocab_size for i in ids]
