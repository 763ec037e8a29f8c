"""Pretraining instances (masked LM + next sentence prediction) with the original algorithm.

`create_instances_from_document` is the original `create_pretraining_data.py` function on token ids: the
same decisions from the same calls to the same `random.Random`, so given one generator state both produce
the same unmasked instances (tests check this against Google's code). Masking follows the original rules
(`bert_tf.data.pretraining.masking`). `process_task` turns a group of documents into serialized examples; it is what
each worker process runs (pure Python: tokenization, instances, masking, serialization).
"""

import dataclasses
import itertools
import random
import re

from bert_tf.data.pretraining.chinese_words import mark_continuations, segmenter, split_continuations
from bert_tf.data.pretraining.example_codec import PretrainingExampleEncoder
from bert_tf.data.pretraining.masking import MaskingConfig, mask_tokens


@dataclasses.dataclass(frozen=True)
class InstanceOptions:
    """The original flags that shape instances.

    Attributes:
      max_seq_length: int >= 5, tokens per instance including [CLS] and two [SEP].
      short_seq_prob: probability of a random target length in [2, max_seq_length - 3].
      dupe_factor: how many times each document is used (with different segmentations and masks).
      random_seed: int.
      masking: `MaskingConfig`, or None to leave instances unmasked (dynamic masking at training
        time).
      chinese_word_segmenter: a name of `chinese_words.SEGMENTERS`: whole-word masking of Chinese words
        ("none": the original's per-character masking of Chinese); needs masking with whole words.
    """
    max_seq_length: int
    short_seq_prob: float
    dupe_factor: int
    random_seed: int
    masking: MaskingConfig = None
    chinese_word_segmenter: str = "none"

    def __post_init__(self):
        if self.max_seq_length < 5:
            raise ValueError(f"max_seq_length={self.max_seq_length} must be >= 5 ([CLS] A [SEP] B [SEP] "
                             "with at least 2 tokens of text)")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise ValueError(f"short_seq_prob={self.short_seq_prob} must be in [0, 1]")
        if self.dupe_factor < 1:
            raise ValueError(f"dupe_factor={self.dupe_factor} must be >= 1")
        segmenter(self.chinese_word_segmenter)  # its ValueError for an unknown name
        if self.chinese_word_segmenter != "none" and (self.masking is None or self.masking.continuation is None):
            raise ValueError(f"chinese_word_segmenter={self.chinese_word_segmenter} masks whole Chinese words: it "
                             "needs do_whole_word_mask=True, and static masking (not dynamic_masking)")


@dataclasses.dataclass
class Instance:
    """One instance before [CLS]/[SEP] are added: `tokens_a`, `tokens_b` (non-empty lists of int ids,
    together at most max_seq_length - 3) and `is_random_next` (B comes from another document)."""
    tokens_a: list
    tokens_b: list
    is_random_next: bool


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """The original truncation, in place: while the pair is too long, drop one token of the longer list
    (B on ties), from its front or back with probability 0.5 each."""
    # Count the cuts first (the same random draws as cutting one token at a time), then cut once.
    len_a, len_b = len(tokens_a), len(tokens_b)
    front_a = front_b = 0
    while len_a + len_b > max_num_tokens:
        if len_a > len_b:
            len_a -= 1
            front_a += rng.random() < 0.5
        else:
            len_b -= 1
            front_b += rng.random() < 0.5
    tokens_a[:] = tokens_a[front_a:front_a + len_a]
    tokens_b[:] = tokens_b[front_b:front_b + len_b]


def create_instances_from_document(all_documents, document_index, max_seq_length, short_seq_prob, rng):
    """The original algorithm for one document; returns a list of unmasked `Instance`s.

    Args:
      all_documents: list of documents; a document is a non-empty list of segments (sentences), a segment
        a non-empty list of int token ids. Random next segments come from these documents.
      document_index: which document to split into instances.
      max_seq_length: int >= 5.
      short_seq_prob: float.
      rng: `random.Random`.

    With probability short_seq_prob the target length is randint(2, max_seq_length - 3). Segments are
    accumulated until the target length; A takes randint(1, n - 1) of the n segments. With probability 0.5
    (always when there is one segment) B is a span of a random other document (10 tries) and the unused
    segments are put back; otherwise B is the rest of the chunk.
    """
    document = all_documents[document_index]
    max_num_tokens = max_seq_length - 3
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)
    instances = []
    current_chunk = []
    current_length = 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            a_end = 1
            if len(current_chunk) >= 2:
                a_end = rng.randint(1, len(current_chunk) - 1)
            tokens_a = list(itertools.chain.from_iterable(current_chunk[:a_end]))
            tokens_b = []
            if len(current_chunk) == 1 or rng.random() < 0.5:
                is_random_next = True
                target_b_length = target_seq_length - len(tokens_a)
                for _ in range(10):
                    random_document_index = rng.randint(0, len(all_documents) - 1)
                    if random_document_index != document_index:
                        break
                random_document = all_documents[random_document_index]
                random_start = rng.randint(0, len(random_document) - 1)
                for j in range(random_start, len(random_document)):
                    tokens_b.extend(random_document[j])
                    if len(tokens_b) >= target_b_length:
                        break
                # The segments of the chunk that B did not use are put back.
                i -= len(current_chunk) - a_end
            else:
                is_random_next = False
                for segment in current_chunk[a_end:]:
                    tokens_b.extend(segment)
            truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            instances.append(Instance(tokens_a, tokens_b, is_random_next))
            current_chunk = []
            current_length = 0
        i += 1
    return instances


# ASCII punctuation (what `tokenization.is_punctuation` says for ASCII) and the runs between.
_ASCII_PIECES = re.compile(r"[!-/:-@\[-`{-~]|[^!-/:-@\[-`{-~]+")


class ChunkTokenizer:
    """`FullTokenizer` to ids with a cache of space-separated chunks: the same ids, several times faster.
    With `segment` (a `chinese_words.segmenter`), a Chinese character that continues a word has its id plus
    the vocab size (`chinese_words.mark_continuations`; `InstanceMaker` removes the mark when it masks).

    Every step of BERT's tokenization maps a space to a word boundary and works within words, so
    tokenizing a line equals concatenating the tokenization of its " "-separated chunks. For ASCII text
    (no case or accent subtleties) ASCII punctuation is a word boundary too, so a new ASCII chunk is looked
    up piece by piece ("nation," = "nation" + ","). The cache is cleared when it reaches `max_entries`,
    so memory stays bounded.
    """

    def __init__(self, tokenizer, max_entries=1 << 18, segment=None):
        self.tokenizer = tokenizer
        self.max_entries = max_entries
        self.segment = segment
        self._vocab_size = max(tokenizer.vocab.values()) + 1
        self._cache = {}

    def ids(self, line):
        """`str` -> list of int token ids, equal to
        `tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line))`."""
        cache = self._cache
        out = []
        for chunk in line.split(" "):
            ids = cache.get(chunk)
            if ids is None:
                ids = self._chunk_ids(chunk)
            out.extend(ids)
        return out

    def _chunk_ids(self, chunk):
        pieces = _ASCII_PIECES.findall(chunk) if chunk.isascii() else ()
        if len(pieces) > 1:
            ids = tuple(itertools.chain.from_iterable(self._cache.get(p) or self._chunk_ids(p) for p in pieces))
        elif self.segment is not None and not chunk.isascii():
            tokens = self.tokenizer.basic_tokenizer.tokenize(chunk)
            piece_ids = [self.tokenizer.convert_tokens_to_ids(self.tokenizer.wordpiece_tokenizer.tokenize(token))
                         for token in tokens]
            ids = tuple(mark_continuations(tokens, piece_ids, self.segment(chunk), self._vocab_size))
        else:
            ids = tuple(self.tokenizer.convert_tokens_to_ids(self.tokenizer.tokenize(chunk)))
        if len(self._cache) >= self.max_entries:
            self._cache.clear()
        self._cache[chunk] = ids
        return ids


@dataclasses.dataclass
class PretrainingStats:
    """Counts for the end summary; `+=` merges.

    Attributes:
      documents: non-empty documents (after tokenization), counted once (not per dupe).
      instances: instances written.
      tokens: real tokens of the instances, [CLS]/[SEP] included.
      masked: masked positions; by_mask + by_random + kept == masked.
      random_next: instances whose B is from another document.
      short: instances shorter than max_seq_length (padded).
      corpus_tokens: tokens of the documents, counted once.
    """
    documents: int = 0
    instances: int = 0
    tokens: int = 0
    masked: int = 0
    by_mask: int = 0
    by_random: int = 0
    kept: int = 0
    random_next: int = 0
    short: int = 0
    corpus_tokens: int = 0

    def __iadd__(self, other):
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))
        return self

    def rates(self):
        """Dict of the ratios the acceptance criteria compare (0.0 when undefined)."""
        def ratio(a, b):
            return a / b if b else 0.0
        return {"masked_fraction": ratio(self.masked, self.tokens),
                "mask_token_rate": ratio(self.by_mask, self.masked),
                "random_token_rate": ratio(self.by_random, self.masked),
                "kept_rate": ratio(self.kept, self.masked),
                "random_next_rate": ratio(self.random_next, self.instances),
                "short_rate": ratio(self.short, self.instances),
                "tokens_per_instance": ratio(self.tokens, self.instances)}


class InstanceMaker:
    """Everything a worker needs to turn documents into serialized examples.

    Args:
      tokenizer: `bert_tf.tokenization.FullTokenizer`.
      options: `InstanceOptions`.
    """

    def __init__(self, tokenizer, options):
        self.options = options
        self.chunk_tokenizer = ChunkTokenizer(tokenizer, segment=segmenter(options.chinese_word_segmenter))
        vocab = tokenizer.vocab
        self.cls_id, self.sep_id = vocab["[CLS]"], vocab["[SEP]"]
        self.vocab_size = max(vocab.values()) + 1
        self.encoder = PretrainingExampleEncoder(
            self.vocab_size, options.max_seq_length,
            options.masking.max_predictions_per_seq if options.masking else 1)

    def tokenize_documents(self, documents):
        """list of list of str (lines) -> list of documents as lists of non-empty id lists; lines without
        tokens are dropped, documents left empty too (as in the original)."""
        tokenized = []
        for lines in documents:
            segments = [ids for ids in map(self.chunk_tokenizer.ids, lines) if ids]
            if segments:
                tokenized.append(segments)
        return tokenized

    def process_task(self, task_index, documents):
        """Tokenizes `documents` (list of list of str), makes `dupe_factor` rounds of instances with random
        next segments drawn from these documents, masks them (unless dynamic masking), shuffles them and
        returns (list of serialized `tf.train.Example` bytes, `PretrainingStats`).

        The generator is `random.Random(f"{random_seed}:{task_index}")`, so a task's output depends only on
        the seed, its index and its documents (not on which process runs it).
        """
        options = self.options
        rng = random.Random(f"{options.random_seed}:{task_index}")
        documents = self.tokenize_documents(documents)
        stats = PretrainingStats(documents=len(documents),
                                 corpus_tokens=sum(len(s) for d in documents for s in d))
        records = []
        for _ in range(options.dupe_factor):
            for document_index in range(len(documents)):
                for instance in create_instances_from_document(
                        documents, document_index, options.max_seq_length, options.short_seq_prob, rng):
                    records.append(self._encode(instance, rng, stats))
        rng.shuffle(records)
        return records, stats

    def _encode(self, instance, rng, stats):
        len_a = len(instance.tokens_a)
        ids = [self.cls_id] + instance.tokens_a + [self.sep_id] + instance.tokens_b + [self.sep_id]
        ids, continues = split_continuations(ids, self.vocab_size)
        stats.instances += 1
        stats.tokens += len(ids)
        stats.random_next += instance.is_random_next
        stats.short += len(ids) < self.options.max_seq_length
        if self.options.masking is None:
            return self.encoder.encode(ids, len_a, instance.is_random_next)
        candidates = list(range(1, len_a + 1)) + list(range(len_a + 2, len(ids) - 1))
        masked = mask_tokens(ids, candidates, self.options.masking, rng, continues)
        stats.masked += len(masked.positions)
        stats.by_mask += masked.replaced_by_mask
        stats.by_random += masked.replaced_by_random
        stats.kept += masked.kept
        return self.encoder.encode(ids, len_a, instance.is_random_next, masked.positions, masked.labels)
