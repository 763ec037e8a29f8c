"""bert_tf.tokenization.in_graph: the in-graph tokenizer gives FullTokenizer's ids on every corpus line, and it
and the packer work in tf.data, in Keras models and in a SavedModel loaded by another process."""

import json
import re
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.packing import pack_tokens, truncate_seq_pair
from bert_tf.tokenization import FullTokenizer
from bert_tf.tokenization.in_graph import BertPacker, BertTokenizer
from tests.helpers import tokenizer_data

BATCH_SIZE = 512
# Lines the corpus file cannot hold (line breaks, NUL) and degenerate ones.
EXTRA_LINES = ("nul\x00inside\rcarriage\nnewline\r\nend", "", "   ", "\x00", "Σ", "ΑΣ", "\u0301")
CONFIGS = ("uncased vocab, lower case", "uncased vocab, cased", "cased vocab, cased")


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    """config name -> (FullTokenizer, BertTokenizer), built once per module."""
    cased_vocab = tokenizer_data.write_cased_vocab(str(tmp_path_factory.mktemp("vocab") / "vocab.txt"))
    files = {"uncased": tokenizer_data.uncased_vocab_file(), "cased": cased_vocab}
    built = {}

    def get(name):
        if name not in built:
            vocab_file = files[name.split()[0]]
            lower = name.endswith("lower case")
            built[name] = (FullTokenizer(vocab_file, lower), BertTokenizer(vocab_file, do_lower_case=lower))
        return built[name]

    return get


def python_ids(tokenizer, lines):
    return [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line)) for line in lines]


def graph_ids(tokenizer, lines):
    tokenize = tf.function(tokenizer.tokenize)
    ids = []
    for start in range(0, len(lines), BATCH_SIZE):
        ids += tokenize(tf.constant(lines[start:start + BATCH_SIZE])).to_list()
    return ids


@pytest.mark.parametrize("config", CONFIGS)
def test_corpus_parity_with_full_tokenizer(tokenizers, config):
    python, graph = tokenizers(config)
    lines = tokenizer_data.corpus_lines() + EXTRA_LINES
    expected, got = python_ids(python, lines), graph_ids(graph, lines)
    mismatches = [(line, e, g) for line, e, g in zip(lines, expected, got) if e != g]
    assert not mismatches, f"{len(mismatches)}/{len(lines)} lines differ, first: {mismatches[0]}"
    unk = python.vocab["[UNK]"]
    assert 0 < sum(ids.count(unk) for ids in expected) < sum(map(len, expected)) // 4


def test_scalar_input_and_dtypes(tokenizers):
    python, graph = tokenizers(CONFIGS[0])
    ids = graph(tf.constant("UNwant\u00e9d, running!"))
    assert ids.dtype == tf.int32 and ids.shape.rank == 1
    assert ids.numpy().tolist() == python_ids(python, ["UNwant\u00e9d, running!"])[0]
    batch = graph(tf.constant(["a b", "", "c"]))
    assert isinstance(batch, tf.RaggedTensor) and batch.dtype == tf.int32
    assert batch.row_lengths().numpy().tolist() == [2, 0, 1]


def test_invalid_utf8_input_raises_naming_the_rows(tokenizers):
    """The error names the input, invalid UTF-8 and the rows of the batch, eagerly and in a graph (it used to
    be unicode_decode's "Invalid formatting on input string")."""
    _, graph = tokenizers(CONFIGS[0])
    batch = tf.constant([b"fine", "caf\u00e9".encode(), b"ab\xffcd", b"ok", b"caf\xe9"])
    for tokenize in (graph.tokenize, tf.function(graph.tokenize)):
        with pytest.raises(tf.errors.InvalidArgumentError) as raised:
            tokenize(batch)
        message = " ".join(raised.value.message.split())
        assert "the input of BertTokenizer is not valid UTF-8 at rows" in message, message
        assert re.search(r"\b2,? 4\b.*counted from 0", message), message


def test_vocab_errors_and_token_ids(tokenizers):
    _, graph = tokenizers(CONFIGS[0])
    specials = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    assert [graph.token_to_id(t) for t in specials] == [0, 100, 101, 102, 103]
    with pytest.raises(ValueError, match=r"token '\[nope\]' is not in the vocab"):
        graph.token_to_id("[nope]")
    with pytest.raises(ValueError, match=r"no '\[UNK\]' token"):
        BertTokenizer(["[PAD]", "hello"])
    with pytest.raises(ValueError, match="duplicate token 'hello'"):
        BertTokenizer(["[UNK]", "hello", "hello"])
    with pytest.raises(ValueError, match="does not exist"):
        BertTokenizer("/nonexistent/vocab.txt")


def packed_pairs(python, lines_a, lines_b, seq_length):
    """pack_tokens on each (a, b) pair, or each a alone when lines_b is None: dict of int lists [B, T]."""
    packed = [pack_tokens(python.tokenize(a), None if lines_b is None else python.tokenize(b), seq_length,
                          python)
              for a, b in zip(lines_a, lines_b or lines_a)]
    return {name: [getattr(p, name) for p in packed] for name in ("input_ids", "input_mask", "segment_ids")}


def as_lists(outputs):
    return {name: np.asarray(value).tolist() for name, value in outputs.items()}


@pytest.fixture(scope="module")
def segment_lines():
    """Pairs of corpus lines of all lengths, with empty segments among them."""
    lines = list(tokenizer_data.corpus_lines()[::17][:200]) + ["", "x", "", "", "y", ""]
    return lines[0::2], lines[1::2]


@pytest.mark.parametrize("seq_length", [2, 3, 5, 16, 128])
def test_packer_matches_pack_tokens(tokenizers, segment_lines, seq_length):
    python, graph = tokenizers(CONFIGS[0])
    lines_a, lines_b = segment_lines
    ids_a, ids_b = graph(tf.constant(lines_a)), graph(tf.constant(lines_b))
    packer = BertPacker(seq_length)
    assert as_lists(packer(ids_a)) == packed_pairs(python, lines_a, None, seq_length)
    if seq_length >= 3:
        assert as_lists(packer([ids_a, ids_b])) == packed_pairs(python, lines_a, lines_b, seq_length)


@pytest.mark.parametrize("seq_length", [5, 16, 40, 128])
def test_packer_to_the_batch_length_is_the_full_packing_cut(tokenizers, segment_lines, seq_length):
    """pad_to_max_length=False: the fixed-length packing cut after the longest row, rounded up to 8 (at
    most seq_length); each batch gets its own length."""
    _, graph = tokenizers(CONFIGS[0])
    lines_a, lines_b = segment_lines
    ids_a, ids_b = graph(tf.constant(lines_a[:9])), graph(tf.constant(lines_b[:9]))
    for segments in ([ids_a], [ids_a, ids_b]):
        full = {k: v.numpy() for k, v in BertPacker(seq_length)(segments).items()}
        short = {k: v.numpy() for k, v in BertPacker(seq_length, pad_to_max_length=False)(segments).items()}
        longest = int(full["input_mask"].sum(axis=1).max())
        assert short["input_ids"].shape == (9, min(seq_length, -(-longest // 8) * 8))
        for name, value in full.items():
            np.testing.assert_array_equal(short[name], value[:, :short[name].shape[1]], err_msg=name)


@pytest.mark.parametrize("seq_length", range(3, 13))
def test_packer_pair_truncation_is_the_original_loop(seq_length):
    lengths = [(a, b) for a in range(10) for b in range(10)]
    segment_a = tf.ragged.constant([[7] * a for a, _ in lengths], dtype=tf.int32, row_splits_dtype=tf.int64)
    segment_b = tf.ragged.constant([[8] * b for _, b in lengths], dtype=tf.int32, row_splits_dtype=tf.int64)
    ids = BertPacker(seq_length)([segment_a, segment_b])["input_ids"].numpy()
    for (a, b), row in zip(lengths, ids):
        tokens_a, tokens_b = [7] * a, [8] * b
        truncate_seq_pair(tokens_a, tokens_b, seq_length - 3)
        assert ((row == 7).sum(), (row == 8).sum()) == (len(tokens_a), len(tokens_b)), (a, b)


def test_packer_errors():
    with pytest.raises(ValueError, match="seq_length=1 leaves no room"):
        BertPacker(1)
    segment = tf.ragged.constant([[5]], dtype=tf.int32)
    with pytest.raises(ValueError, match="seq_length=2 leaves no room for \\[CLS\\] and two"):
        BertPacker(2)([segment, segment])
    with pytest.raises(ValueError, match="expected one or two segments, got 3"):
        BertPacker(8)([segment, segment, segment])
    with pytest.raises(ValueError, match=r"got a dense tensor of shape \(1, 1\)"):
        BertPacker(8)(segment.to_tensor())


@pytest.mark.slow
def test_tf_data_map(tokenizers, segment_lines):
    python, graph = tokenizers(CONFIGS[0])
    lines_a, lines_b = (list(lines[:40]) for lines in segment_lines)
    packer = BertPacker(32)
    expected = packed_pairs(python, lines_a, lines_b, 32)
    # One example at a time (scalar strings) ...
    dataset = tf.data.Dataset.from_tensor_slices((lines_a, lines_b))
    examples = list(dataset.map(lambda a, b: packer([graph(a), graph(b)])).as_numpy_iterator())
    assert [e["input_ids"].tolist() for e in examples] == expected["input_ids"]
    assert [e["segment_ids"].tolist() for e in examples] == expected["segment_ids"]
    # ... and batched, in parallel.
    batches = dataset.batch(16).map(lambda a, b: packer([graph(a), graph(b)]),
                                    num_parallel_calls=tf.data.AUTOTUNE)
    got = {name: [row for batch in batches.as_numpy_iterator() for row in batch[name].tolist()]
           for name in expected}
    assert got == expected


def test_functional_keras_model(tokenizers, segment_lines):
    python, graph = tokenizers(CONFIGS[0])
    lines_a, lines_b = segment_lines
    text_a = keras.Input(shape=(), dtype="string", name="text_a")
    text_b = keras.Input(shape=(), dtype="string", name="text_b")
    outputs = BertPacker(48)([graph(text_a), graph(text_b)])
    model = keras.Model([text_a, text_b], outputs)
    inputs = [tf.constant(lines_a), tf.constant(lines_b)]
    expected = packed_pairs(python, lines_a, lines_b, 48)
    assert as_lists(model(inputs)) == expected


# Run by a fresh interpreter that imports neither bert_tf nor this test: only TF and tensorflow-text.
LOAD_AND_RUN = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    import tensorflow_text  # registers the WordPiece op
    export_dir, lines_file = sys.argv[1:]
    with open(lines_file, encoding="utf-8") as f:
        lines = json.load(f)
    loaded = tf.saved_model.load(export_dir)
    ids = loaded.tokenize(tf.constant(lines)).to_list()
    packed = loaded.signatures["serving_default"](text_a=tf.constant(lines), text_b=tf.constant(lines[::-1]))
    print(json.dumps({"ids": ids, "packed": {k: v.numpy().tolist() for k, v in packed.items()}}))
""")


class _Export(tf.Module):
    def __init__(self, tokenizer, packer):
        super().__init__()
        self.tokenizer = tokenizer
        self.packer = packer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, strings):
        return self.tokenizer(strings)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text_a"),
                                  tf.TensorSpec([None], tf.string, name="text_b")])
    def pack(self, text_a, text_b):
        return self.packer([self.tokenizer(text_a), self.tokenizer(text_b)])


@pytest.mark.subprocess
def test_saved_model_runs_in_another_process(tokenizers, tmp_path):
    python, graph = tokenizers(CONFIGS[0])
    lines = [line for line in tokenizer_data.corpus_lines() if not line.isascii()][-200:] + list(EXTRA_LINES)
    export = _Export(graph, BertPacker(40))
    export_dir = str(tmp_path / "saved_model")
    tf.saved_model.save(export, export_dir, signatures={"serving_default": export.pack})
    lines_file = tmp_path / "lines.json"
    lines_file.write_text(json.dumps(lines), encoding="utf-8")
    result = subprocess.run([sys.executable, "-c", LOAD_AND_RUN, export_dir, str(lines_file)],
                            capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    output = json.loads(result.stdout.strip().splitlines()[-1])
    assert output["ids"] == python_ids(python, lines)
    assert output["packed"] == packed_pairs(python, lines, lines[::-1], 40)
