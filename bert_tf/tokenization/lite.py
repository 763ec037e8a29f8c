"""BERT tokenization from ops that have LiteRT (TFLite) kernels: `LiteTokenizer` and `pack`, for the raw-text
.tflite models of bert_tf/export/tflite.py.

`bert_tf.tokenization.in_graph.BertTokenizer` cannot convert without Flex
(its regular expressions, Unicode decoding/encoding, string lower-casing and ragged ops have no TFLite
kernels), and tensorflow-text's own `FastBertNormalizer` folds like NFKC-casefold (fullwidth forms, ligatures,
"…" -> "...", "ß" -> "ss"), so its ids differ from FullTokenizer's on 17% of the lines of
tests/fixtures/tokenizer_corpus.txt. `LiteTokenizer` keeps tensorflow-text's kernels but gives
`FastBertNormalize` a character table of its own, generated from the predicates of `bert_tf.tokenization`:
each code point maps to what FullTokenizer's basic tokenizer makes of it (dropped control characters, a space
for whitespace, lower-cased and accent-stripped, spaces around punctuation and CJK ideographs). Then the text
is split at spaces (WhitespaceTokenize), each word is split into word pieces (FastWordpiece, no
pre-tokenization), and a word over 200 characters (counted from its UTF-8 bytes, ByteSplit) becomes [UNK].
Where its ids can differ from FullTokenizer's (every code point between two letters, in both casings, differs
only at U+03A3 and only when lower-casing: checked once on all 1,112,064, and on planes 0, 1 and 14 by
tests/test_export_tflite.py; of the 3,531 lines of tests/fixtures/tokenizer_corpus.txt, 15 differ, all through
the final sigma; no SOTU line differs):
  - lower-casing only: a capital sigma that Python's `str.lower()` makes final ("ΟΔΥΣΣΕΥΣ" -> "οδυσσευς")
    becomes σ here, as the table maps one character at a time (FastBertNormalize has no context rule);
  - lower-casing only: NFD per character rather than per word, as for `BertTokenizer` (see its module doc:
    25 combining characters that canonical reordering swaps);
  - invalid UTF-8 is no error (FullTokenizer raises ValueError): the word holding a bad byte becomes [UNK];
  - the table follows the Unicode version of the exporting Python (3.11: Unicode 14), like FullTokenizer.

    tokenizer = LiteTokenizer("vocab.txt", do_lower_case=True)
    ids = tokenizer.tokenize(tf.constant(["Hello world"]))       # int32 RaggedTensor [1, (tokens)]
    packed = pack([ids.flat_values], 128, tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]"))
"""

import functools
import time
import unicodedata

import flatbuffers
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from absl import logging

from bert_tf.feature_schema import INPUT_IDS, INPUT_MASK, SEGMENT_IDS
from bert_tf.tokenization import full_tokenizer as tokenization
from bert_tf.tokenization.in_graph import MAX_CHARS_PER_WORD, UNK, fast_wordpiece, token_id, wordpiece_vocab

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


# ------------------------------------------------------------------------ the FastBertNormalize table

def _normalized_char(char, do_lower_case):
    """What FullTokenizer's basic tokenizer makes of `char` (a str of one code point), as a string whose
    words, split at spaces, are that tokenizer's words: "" (dropped), " " (whitespace), the lower-cased and
    accent-stripped characters (do_lower_case), with spaces around punctuation and around CJK ideographs."""
    if char in "\x00\ufffd" or tokenization.is_control(char):
        return ""
    if char.isspace():  # cleaning turns is_whitespace into " ", the split takes any str.isspace()
        return " "
    mapped = tokenization.strip_accents(char.lower()) if do_lower_case else char
    mapped = "".join(" " if c.isspace() else f" {c} " if tokenization.is_punctuation(c) else c for c in mapped)
    return f" {mapped} " if tokenization.is_cjk(char) else mapped


@functools.lru_cache(maxsize=None)
def _normalization_table(do_lower_case):
    """{code point: normalized string} for every code point that `_normalized_char` changes (~98,000 with
    lower-casing: CJK ideographs, capitals, accented letters, punctuation, controls, whitespace)."""
    table = {}
    for cp in range(_MAX_CODE_POINT + 1):
        char = chr(cp)
        if cp in _SURROGATES or (unicodedata.category(char) in ("Cn", "Co") and not tokenization.is_cjk(char)):
            continue  # not UTF-8, or no case, class or decomposition: kept as it is
        normalized = _normalized_char(char, do_lower_case)
        if normalized != char:
            table[cp] = normalized
    return table


# Darts-clone double-array units (the format of tensorflow-text's darts_clone_trie_wrapper.h): bits 0-7 the
# label, bit 8 "has a leaf", bits 10-31 the offset to the children; a leaf unit is its value | bit 31.
_LEAF = 1 << 31
_HAS_LEAF = 1 << 8
_OFFSET_SHIFT = 10
_MAX_OFFSET = 1 << 21
_BLOCK = 256
_XOR = np.arange(_BLOCK)[:, np.newaxis] ^ np.arange(_BLOCK)[np.newaxis, :]  # [base low byte, label]


def _darts_trie(keys, values, open_blocks=16):
    """A Darts-clone double-array trie of byte-string `keys` (none a prefix of another) -> `values`
    (int < 2**31), as tensorflow-text's `DartsCloneTrieWrapper` reads it: uint32 [N].

    A node's children sit at `base ^ label`, where `base = position ^ offset`; every base is used by one node
    only, so a label test rejects the children of the others. Inner nodes are placed first, block by block
    (the lowest base of the last `open_blocks` blocks whose positions are free); then every key's last node
    gets a free position of its own as base, holding the leaf unit (label 0).
    """
    root = {}
    for key, value in zip(keys, values):
        node = root
        for byte in key[:-1]:
            node = node.setdefault(byte, {})
        node[key[-1]] = value
    used, bases, units = [np.zeros(_BLOCK, bool)], [np.zeros(_BLOCK, bool)], [np.zeros(_BLOCK, np.uint32)]
    used[0][0] = True  # the root
    candidates, last_nodes, stack = [0], [], [(0, root)]
    while stack:
        position, node = stack.pop()
        labels = np.array(sorted(node))
        for block in candidates:
            free = np.flatnonzero(~bases[block] & ~used[block][_XOR[:, labels]].any(axis=1))
            if free.size:
                low = int(free[0])
                break
        else:
            block, low = len(used), 0
            for blocks, dtype in ((used, bool), (bases, bool), (units, np.uint32)):
                blocks.append(np.zeros(_BLOCK, dtype))
            candidates = (candidates + [block])[-open_blocks:]
        bases[block][low] = True
        used[block][low ^ labels] = True
        base = block * _BLOCK + low
        units[position // _BLOCK][position % _BLOCK] |= (position ^ base) << _OFFSET_SHIFT
        for label, child in node.items():
            units[block][low ^ label] = label
            if isinstance(child, dict):
                stack.append((base ^ label, child))
            else:
                last_nodes.append((base ^ label, child))
    used, bases, units = (np.concatenate(blocks) for blocks in (used, bases, units))
    free = np.flatnonzero(~used & ~bases)
    missing = len(last_nodes) - free.size
    if missing > 0:
        free = np.concatenate([free, np.arange(units.size, units.size + missing)])
        units = np.concatenate([units, np.zeros(missing, np.uint32)])
    positions = np.array([position for position, _ in last_nodes], np.int64)
    leaf_bases = free[:len(last_nodes)].astype(np.int64)
    offsets = positions ^ leaf_bases
    if offsets.max(initial=0) >= _MAX_OFFSET or units.size >= _MAX_OFFSET:
        raise ValueError(f"the trie of {len(keys)} keys needs {units.size} units, over the 2**21 that "
                         "offsets without the extension bit address")
    units[positions] |= ((offsets << _OFFSET_SHIFT) | _HAS_LEAF).astype(np.uint32)
    units[leaf_bases] = (_LEAF | np.array([value for _, value in last_nodes], np.int64)).astype(np.uint32)
    return units[:np.flatnonzero(units)[-1] + 1]


# FastBertNormalize's value of a code point (fast_bert_normalizer.h): bit 30 "changed", then the normalized
# string's offset in the pool << 6 | its length in bytes (< 64).
_CHANGED = 1 << 30
_LENGTH_BITS = 6


@functools.lru_cache(maxsize=None)
def normalizer_model(do_lower_case):
    """The FastBertNormalizerModel flatbuffer (fast_bert_normalizer_model.fbs) that maps each code point as
    FullTokenizer's basic tokenizer does (`_normalized_char`): bytes, about 1.4 MB (lower-casing) or 1.1 MB.
    Takes about 3 s on one core (the table of 1.1M code points, then the trie); cached per casing."""
    started = time.monotonic()
    pool, offsets = bytearray(), {}

    def value(normalized):
        encoded = normalized.encode("utf-8")
        if encoded and encoded not in offsets:
            offsets[encoded] = len(pool)
            pool.extend(encoded)
        return _CHANGED | (offsets[encoded] << _LENGTH_BITS | len(encoded) if encoded else 0)

    table = dict(_normalization_table(do_lower_case))
    # U+0000 is stored outside the trie (Darts-clone cannot hold an empty key): dropped, like the controls.
    zero = value(table.pop(0))
    keys = [chr(cp).encode("utf-8") for cp in sorted(table)]
    values = [value(table[cp]) for cp in sorted(table)]
    trie = _darts_trie(keys, values)
    builder = flatbuffers.Builder(4 * trie.size + len(pool) + 1024)
    pool_vector = builder.CreateNumpyVector(np.frombuffer(bytes(pool), np.uint8))
    trie_vector = builder.CreateNumpyVector(trie.astype("<u4"))
    builder.StartObject(4)  # fields: lower_case_nfd_strip_accents, trie_array, data_for_codepoint_zero, pool
    builder.PrependUOffsetTRelativeSlot(3, pool_vector, 0)
    builder.PrependInt32Slot(2, zero, 0)
    builder.PrependUOffsetTRelativeSlot(1, trie_vector, 0)
    builder.PrependBoolSlot(0, do_lower_case, False)
    builder.Finish(builder.EndObject())
    logging.info("FastBertNormalize table (do_lower_case=%s): %d code points, trie of %d units, %d bytes of "
                 "strings, in %.1f s", do_lower_case, len(values) + 1, trie.size, len(pool),
                 time.monotonic() - started)
    return bytes(builder.Output())


# ------------------------------------------------------------------------------------------ tokenizer

class LiteTokenizer(tf.Module):
    """Strings -> FullTokenizer's word-piece ids, from ops that have TFLite kernels (see the module doc for
    how, and for where the ids can differ).

    Input: tf.string [B]. Output: int32 RaggedTensor [B, (tokens)], without [CLS]/[SEP]. The .tflite
    models call it on one string (B = 1).

    Args:
      vocab_file: path of a vocab.txt, or the list of tokens in id order.
      do_lower_case: lower-case and strip accents, as for the uncased models.
    """

    def __init__(self, vocab_file, do_lower_case=True):
        super().__init__(name="lite_tokenizer")
        self._token_ids = wordpiece_vocab(vocab_file)
        self.vocab = list(self._token_ids)
        self.do_lower_case = do_lower_case
        self._normalizer = tf_text.FastBertNormalizer(model_buffer=normalizer_model(do_lower_case))
        self._whitespace = tf_text.WhitespaceTokenizer()
        self._wordpiece = fast_wordpiece(self.vocab)
        self._bytes = tf_text.ByteSplitter()

    def token_to_id(self, token):
        """The id of `token` (e.g. "[CLS]"); ValueError if it is not in the vocab."""
        return token_id(self._token_ids, token)

    def tokenize(self, strings):
        """tf.string [B] -> int32 RaggedTensor [B, (tokens)]."""
        words = self._whitespace.tokenize(self._normalizer.normalize(strings))  # [B, (words)]
        ids, pieces_per_word = self._word_pieces(words.flat_values)
        ends = tf.concat([[0], tf.cumsum(pieces_per_word)], axis=0)
        return tf.RaggedTensor.from_row_splits(ids, tf.gather(ends, tf.cast(words.row_splits, tf.int32)),
                                               validate=False)

    def _word_pieces(self, words):
        """tf.string [W] words -> (int32 [N] ids, int32 [W] pieces per word); a word of more than 200
        characters is one [UNK] (FastWordpiece's own limit is in bytes)."""
        pieces = self._wordpiece.tokenize(words)
        splits = tf.cast(pieces.row_splits, tf.int32)
        too_long = self._char_counts(words) > MAX_CHARS_PER_WORD
        counts = tf.where(too_long, 1, splits[1:] - splits[:-1])  # every word has >= 1 piece
        # Output position j -> its word (the count of word starts up to j) and the piece it copies.
        starts = tf.concat([[0], tf.cumsum(counts)], axis=0)
        total = starts[-1]
        word = tf.cumsum(tf.scatter_nd(starts[1:-1, tf.newaxis], tf.ones_like(starts[1:-1]), [total]))
        source = tf.range(total) - tf.gather(starts, word) + tf.gather(splits, word)
        copied = tf.gather(pieces.flat_values, source)  # a too-long word's first piece: it has one
        return tf.where(tf.gather(too_long, word), self.token_to_id(UNK), copied), counts

    def _char_counts(self, words):
        """tf.string [W] (UTF-8) -> int32 [W] code points: the bytes that are not continuation bytes."""
        split = self._bytes.split(words)
        byte = tf.cast(split.flat_values, tf.int32)
        first = tf.cast((byte < 0x80) | (byte >= 0xC0), tf.int32)
        cumulative = tf.concat([[0], tf.cumsum(first)], axis=0)
        splits = tf.cast(split.row_splits, tf.int32)
        return tf.gather(cumulative, splits[1:]) - tf.gather(cumulative, splits[:-1])


def pack(segments, seq_length, cls_id, sep_id):
    """One example's segments -> its BERT inputs, as `BertPacker` packs them, without padding.

    Args:
      segments: one or two int32 [n] token ids (no [CLS]/[SEP]).
      seq_length: the longest packed length; truncation as in the original (a single segment keeps
        seq_length - 2 tokens; a pair loses tokens from the end of the longer one down to seq_length - 3).
      cls_id, sep_id: the ids of [CLS] and [SEP].
    Returns:
      dict of int32 [1, T] `input_ids`, `input_mask` (all ones), `segment_ids`; T = the packed length.
    """
    lengths = [tf.size(segment) for segment in segments]
    if len(segments) == 1:
        keep = [tf.minimum(lengths[0], seq_length - 2)]
    else:  # BertPacker's closed form of the original's loop
        budget = seq_length - 3
        keep_a = tf.minimum(lengths[0], tf.maximum(budget - lengths[1], (budget + 1) // 2))
        keep = [keep_a, tf.minimum(lengths[1], budget - keep_a)]
    ids, types = [tf.constant([cls_id])], [tf.constant([0])]
    for segment_id, (segment, n) in enumerate(zip(segments, keep)):
        ids += [segment[:n], tf.constant([sep_id])]
        types.append(tf.fill([n + 1], segment_id))
    ids = tf.concat(ids, axis=0)[tf.newaxis]
    return {INPUT_IDS: ids, INPUT_MASK: tf.ones_like(ids), SEGMENT_IDS: tf.concat(types, axis=0)[tf.newaxis]}
