"""Sentence embeddings of many texts (encode_sentences.py): length-sorted batches, each cut to about its longest
text (`bert_tf.batched_inference`), results in input order; written as .npy or JSON lines; and semantic search
over them.

    encoder = SentenceEncoder(embedder, FullTokenizer(vocab), max_seq_length=256)
    vectors = encoder.encode(read_texts("sentences.txt"), batch_size=32)   # float32 [N, H]
    write_embeddings("sentences.npy", vectors)
    for index, score in most_similar(encoder.encode(["a query"])[0], vectors, k=5): ...
"""

import json
import os

import numpy as np
from keras import ops

from bert_tf import atomic_io
from bert_tf.batched_inference import BatchedInference
from bert_tf.data import windows
from bert_tf.data.text_lines import read_lines
from bert_tf.feature_schema import INPUT_IDS, INPUT_MASK, SEGMENT_IDS
from bert_tf.modeling.layers.packed_tokens import packing_possible

OUTPUT_SUFFIXES = (".npy", ".jsonl")


def read_texts(path):
    """The lines of `path` (UTF-8), one text each, stripped. ValueError naming `path:line` for invalid UTF-8,
    an empty line or a `text_a ||| text_b` pair (an embedding is of one text), or an empty file."""
    texts = []
    for line_number, line in read_lines(path):
        text = line.strip()
        if not text:
            raise ValueError(f"{path}:{line_number}: empty line; expected one text per line")
        if " ||| " in text:
            raise ValueError(f"{path}:{line_number}: `text_a ||| text_b` pair; a sentence embedding is of one text "
                             "per line (embed each text on its own line)")
        texts.append(text)
    if not texts:
        raise ValueError(f"{path}: empty file; expected one text per line")
    return texts


class SentenceEncoder:
    """Embeds texts with a BertSentenceEmbedder: FullTokenizer word pieces, `[CLS] text [SEP]` truncated to
    `max_seq_length` tokens (as sentence-transformers truncates), run by one `BatchedInference` (TensorFlow: one
    traced function for every batch shape, the embedder skipping the padding inside a batch, so no XLA; JAX:
    compiled, bucketed widths).

    `doc_stride`: None truncates; N reads every text whole: a text longer than max_seq_length - 2 pieces becomes
    windows of that many pieces starting N apart (`bert_tf.data.windows`; 1 <= N < max_seq_length - 2, else
    ValueError), each embedded as `[CLS] window [SEP]`, and the text's embedding is the mean of its windows'
    weighted by their tokens ([CLS] and [SEP] included), L2-normalized again when the embedder normalizes."""

    def __init__(self, embedder, tokenizer, max_seq_length, doc_stride=None):
        embedder.config.check_seq_length(max_seq_length)
        if doc_stride is not None:
            windows.check_stride(max_seq_length - 2, doc_stride)
        self.embedder, self.tokenizer, self.max_seq_length = embedder, tokenizer, max_seq_length
        self.doc_stride = doc_stride
        self._inference = BatchedInference(self._embed, variables=embedder.variables)

    def _embed(self, inputs):
        """{input_ids, input_mask: int32 [B, T]} -> float32 [B, H]."""
        inputs = {**inputs, SEGMENT_IDS: ops.zeros_like(inputs[INPUT_IDS])}
        skip_padding = packing_possible(inputs[INPUT_MASK])
        return ops.cast(self.embedder(inputs, training=False, skip_padding=skip_padding), "float32")

    def token_ids(self, text):
        """The ids of `[CLS] text [SEP]`, the text's pieces truncated to max_seq_length - 2."""
        pieces = self.tokenizer.tokenize(text)[: self.max_seq_length - 2]
        return self.tokenizer.convert_tokens_to_ids(["[CLS]", *pieces, "[SEP]"])

    def window_ids(self, text):
        """With a doc_stride: the ids of `[CLS] window [SEP]` for each window of the text's pieces."""
        pieces = self.tokenizer.tokenize(text)
        return [self.tokenizer.convert_tokens_to_ids(["[CLS]", *pieces[start:start + length], "[SEP]"])
                for start, length in windows.doc_spans(len(pieces), self.max_seq_length - 2, self.doc_stride)]

    def encode(self, texts, batch_size=32, description=None):
        """float32 [N, H]: the embedding of each of `texts`, in their order. Batches of `batch_size` inputs (texts,
        or windows) of similar length (sorted by length), each cut to about its longest
        (`bert_tf.batched_inference`). `description`: show progress with an ETA under that name."""
        inputs = [[self.token_ids(text)] if self.doc_stride is None else self.window_ids(text) for text in texts]
        rows = [ids for text_inputs in inputs for ids in text_inputs]
        vectors = self._inference.predict(padded_features(rows), batch_size, description,
                                          "texts" if self.doc_stride is None else "windows")
        if self.doc_stride is None:
            return vectors
        owners = np.repeat(np.arange(len(texts)), [len(text_inputs) for text_inputs in inputs])
        weights = np.array([len(ids) for ids in rows], np.float64)
        sums = np.zeros((len(texts), vectors.shape[-1]), np.float64)
        np.add.at(sums, owners, vectors * weights[:, None])
        pooled = sums / np.bincount(owners, weights, minlength=len(texts))[:, None]
        if self.embedder.normalize:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)
        return pooled.astype(np.float32)


def padded_features(ids):
    """The encoder inputs of the token-id lists `ids`: input_ids int32 [N, T] (T the longest list, the shorter
    ones padded with 0) and input_mask int32 [N, T] (1 on each list's own tokens, whatever their ids)."""
    lengths = np.array([len(values) for values in ids], np.int64)
    mask = (np.arange(lengths.max(initial=0))[None, :] < lengths[:, None]).astype(np.int32)
    input_ids = np.zeros(mask.shape, np.int32)
    input_ids[mask == 1] = np.concatenate([np.asarray(values, np.int32) for values in ids] or [np.zeros(0, np.int32)])
    return {INPUT_IDS: input_ids, INPUT_MASK: mask}


def write_embeddings(path, embeddings):
    """Writes float32 [N, H] `embeddings` atomically: `.npy` (np.save) or `.jsonl` (one
    `{"index": i, "embedding": [...]}` per text, in input order). ValueError for another suffix."""
    suffix = os.path.splitext(path)[1]
    if suffix not in OUTPUT_SUFFIXES:
        raise ValueError(f"{path}: expected a .npy or .jsonl output file")
    if suffix == ".npy":
        with atomic_io.atomic_write(path, "wb") as f:
            np.save(f, np.asarray(embeddings, np.float32))
    else:
        with atomic_io.atomic_write(path) as f:
            for index, vector in enumerate(embeddings):
                f.write(json.dumps({"index": index, "embedding": [float(x) for x in vector]}) + "\n")


def most_similar(query, embeddings, k):
    """The `k` rows of `embeddings` [N, H] with the highest cosine similarity to `query` [H]: a list of
    (row index, cosine), best first."""
    norms = np.linalg.norm(embeddings, axis=-1) * max(np.linalg.norm(query), 1e-12)
    scores = embeddings @ query / np.maximum(norms, 1e-12)
    best = np.argsort(-scores, kind="stable")[:k]
    return [(int(i), float(scores[i])) for i in best]
