"""Learning a WordPiece vocabulary from a corpus, written in Google's vocab.txt layout.

Words are what `BasicTokenizer` makes of the text (the same splitting `FullTokenizer` applies before
WordPiece), counted once per distinct " "-separated chunk. Pieces are learned by tensorflow-text's
WordPiece learner (`wordpiece_tokenizer_learner_lib.learn`: every character and its "##" form, then the
most frequent substrings that fit). CJK ideographs are words of their own for BERT, so each one seen
becomes a piece (most frequent first), as in Google's Chinese and multilingual vocabs.

Layout: [PAD], [unused0] .. [unused98], [UNK], [CLS], [SEP], [MASK] (ids 0, 1-99, 100-103 as in Google's
English vocab), then the CJK characters, then the learned pieces.
"""

import collections

from bert_tf import atomic_io
from bert_tf.tokenization import BasicTokenizer, WordpieceTokenizer, is_cjk

NUM_UNUSED = 99
RESERVED_TOKENS = ("[PAD]",) + tuple(f"[unused{i}]" for i in range(NUM_UNUSED)) + (
    "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def count_words(lines, do_lower_case=True):
    """Iterable of str -> `collections.Counter` of `BasicTokenizer` words."""
    chunks = collections.Counter()
    for line in lines:
        chunks.update(line.split(" "))
    basic = BasicTokenizer(do_lower_case=do_lower_case)
    words = collections.Counter()
    for chunk, count in chunks.items():
        for word in basic.tokenize(chunk):
            words[word] += count
    return words


def learn_vocab(word_counts, vocab_size):
    """Word counts -> list of vocab tokens (reserved tokens first), at most `vocab_size` of them.

    Raises:
      ValueError: if there are no words, or vocab_size cannot hold the reserved tokens, the CJK characters
        and the other characters (each also as a "##" piece).
    """
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    if not word_counts:
        raise ValueError("no words to learn a vocab from (empty corpus?)")
    cjk = sorted((word for word in word_counts if len(word) == 1 and is_cjk(word)),
                 key=lambda word: (-word_counts[word], word))
    budget = vocab_size - len(RESERVED_TOKENS) - len(cjk)
    others = {word: count for word, count in word_counts.items() if not (len(word) == 1 and is_cjk(word))}
    alphabet, pieces = [], []
    if others:
        learned = learner.learn(others, max(budget, 1), reserved_tokens=[], lower_thresh=1)
        for token in learned:
            # Characters and their "##" forms must stay; the learner may overshoot the size it is given.
            (alphabet if len(token) == 1 or (len(token) == 3 and token.startswith("##")) else pieces).append(token)
    if len(alphabet) > budget:
        raise ValueError(f"vocab_size={vocab_size} is too small: {len(RESERVED_TOKENS)} reserved tokens, {len(cjk)} "
                         f"CJK characters and {len(alphabet)} other characters and ## forms need "
                         f"{vocab_size - budget + len(alphabet)}")
    return list(RESERVED_TOKENS) + cjk + alphabet + pieces[:budget - len(alphabet)]


def unknown_rate(tokens, word_counts):
    """Fraction of word occurrences that WordPiece over `tokens` turns into [UNK]."""
    wordpiece = WordpieceTokenizer({token: i for i, token in enumerate(tokens)})
    total = sum(word_counts.values())
    unknown = sum(count for word, count in word_counts.items() if wordpiece.tokenize(word) == ["[UNK]"])
    return unknown / total if total else 0.0


def write_vocab(tokens, path):
    """Writes one token per line, atomically (`atomic_io.write_file`)."""
    atomic_io.write_file(path, "".join(token + "\n" for token in tokens))
