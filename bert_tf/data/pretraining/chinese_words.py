"""Chinese word boundaries for whole-word masking, the way Chinese-BERT-wwm made its data.

BERT tokenizes Chinese per character (the original's rule, unchanged here), so the "##" pieces that
`--do_whole_word_mask` groups never join Chinese characters into words. With a word segmenter, each Chinese
character that is not the first character of its word is marked as continuing the word before it, and masking
takes the word's characters together. The mark only groups: the ids written are the characters' own.

    SEGMENTERS: none (no Chinese words: the original's behaviour), jieba (`pip install jieba`: its default
    dictionary, precise mode), spaces (the input is pre-segmented: words are separated by spaces, as in
    People's Daily's segmented text; those spaces are word boundaries for BERT's tokenizer too, which splits
    Chinese characters apart anyway but not, say, "１０℃").

Where a mark travels: `ChunkTokenizer` (instances.py) gives a continuing character's id plus the vocab size,
so the instance algorithm (which only moves ids around) carries it for free; `mark_continuations` and
`split_continuations` are the two ends.
"""

from bert_tf.tokenization.full_tokenizer import is_cjk

SEGMENTERS = ("none", "jieba", "spaces")


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
