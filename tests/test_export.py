"""bert_tf.export.serving and export_model.py: SavedModels of the real MiniLM that a fresh process with only tensorflow
and tensorflow-text (a venv without bert_tf) loads and calls, with the ids and outputs of the Python path.

The exports and the fresh-process run are made once per test session and shared by pytest-xdist workers
(file locks); the client venv is built once per machine under ~/.cache.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401 (registers the WordPiece op the SavedModels use)

from bert_tf import BertConfig, BertEncoder, load_checkpoint, save_checkpoint
from bert_tf.export import serving as export
from bert_tf.feature_schema import INPUT_NAMES
from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from bert_tf.tokenization import FullTokenizer
from tests.helpers import tokenizer_data
from tests.helpers.exports import (
    BATCH_SIZE,
    SEQ_LENGTH,
    assert_close,
    client_outputs,
    export_script,
    listed_signatures,
    python_pack,
    run_client,
    run_model,
    serialized_example,
    shared_dir,
    strings,
)
from tools.pinned_venv import build_once

PRETRAINER_TEXT_B = (None, "x", None, "")  # with the first 4 lines: singles and pairs in serve_examples
LONG_TEXT = " ".join(tokenizer_data.corpus_lines()[:300])
EDGE_CASES = ("", "   ", LONG_TEXT, "東京の天気は晴れです。北京欢迎你！서울", "emoji 😀👍🏽 family 👨‍👩‍👧 rocket🚀",
              "\x00", "naïve café — Ｆｕｌｌｗｉｄｔｈ ﬁ … " * 20)


# ------------------------------------------------------------------------------------------------ inputs

def text_lines():
    """1,000 varied corpus lines with the edge cases spread among them (every batch mixes them)."""
    lines = list(tokenizer_data.corpus_lines()[::3][:1000])
    for i, case in enumerate(EDGE_CASES):
        lines.insert(i * 150 + 7, case)
    return lines


def text_pairs():
    lines = text_lines()
    pairs = [(lines[i], lines[i + 500]) for i in range(26)]
    return pairs + [("", "x"), ("x", ""), ("", ""), (LONG_TEXT, LONG_TEXT), (LONG_TEXT, "short"), ("日本", "😀")]


def example_texts():
    """(text_a, text_b or None) of the serve_examples request: singles, pairs, present-but-empty text_b."""
    lines = text_lines()
    return [(lines[7 * i], (None, "", lines[7 * i + 1], lines[7 * i + 2])[i % 4]) for i in range(24)]


# ------------------------------------------------------------------------------------- shared resources

@pytest.fixture(scope="session")
def minilm(minilm_dir):
    """(config, vocab file, BertEncoder with the real weights)."""
    config = BertConfig.from_json_file(os.path.join(minilm_dir, "config.json"))
    encoder = BertEncoder(config)
    load_checkpoint(encoder, minilm_dir)
    return config, os.path.join(minilm_dir, "vocab.txt"), encoder


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
        {"name": "after_errors", "model": serving, "signature": "serve_text", "keep": keep,
         "inputs": {"text_a": strings(lines[:8])}},
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
    ]
    return requests


@pytest.fixture(scope="session")
def client(tmp_path_factory, exports, client_python, full_tokenizer):
    """(outputs {request/output: array}, errors {request: message}) of one fresh-venv process."""
    return run_client(tmp_path_factory, "client", client_python, lambda: client_requests(exports, full_tokenizer))


# ----------------------------------------------------------------------------------------------- tests

@pytest.mark.slow
@pytest.mark.subprocess
def test_saved_model_cli_lists_the_signatures(exports):
    listing = listed_signatures(f"{exports}/serving/1")[0]
    assert {method for method, _ in listing.values()} == {"tensorflow/serving/predict"}
    listed = {name: specs for name, (_, specs) in listing.items()}
    ids, floats = ("DT_INT32", f"-1, {SEQ_LENGTH}"), {
        "pooled_output": ("DT_FLOAT", "-1, 384"), "sequence_output": ("DT_FLOAT", f"-1, {SEQ_LENGTH}, 384"),
        "encoder_outputs": ("DT_FLOAT", f"-1, 6, {SEQ_LENGTH}, 384")}
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
    lines = text_lines()
    expected, model = python_path
    got = {}
    for start in range(0, len(lines), BATCH_SIZE):
        for key, value in client_outputs(client, f"text_{start}").items():
            got.setdefault(key, []).append(value)
    got = {key: np.concatenate(values) for key, values in got.items()}
    for name in INPUT_NAMES:
        differ = np.flatnonzero((got[name] != expected[name]).any(axis=1))
        assert not differ.size, f"{name} differs on {differ.size}/{len(lines)} lines, first {lines[differ[0]]!r}"
    assert expected["input_mask"][lines.index(LONG_TEXT)].sum() == SEQ_LENGTH  # truncated, not dropped
    assert expected["input_mask"][lines.index("")].sum() == 2
    for name in ("pooled_output", "sequence_output"):
        assert_close(got[name], model[name], name)


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
        for name in INPUT_NAMES:
            np.testing.assert_array_equal(got[name], ids[name], err_msg=f"{request} {name}")
        expected = run_model(encoder, ids, ["pooled_output", "sequence_output"])
        for name in expected:
            assert_close(got[name], expected[name], f"{request} {name}")
    first_batch = client_outputs(client, "text_0")
    for name, value in client_outputs(client, "after_errors").items():
        assert_close(value, first_batch[name][:8], f"after_errors {name}")


@pytest.mark.slow
@pytest.mark.subprocess
def test_bad_requests_fail_with_clear_errors(client):
    errors = client[1]
    assert set(errors) == {"bad_utf8", "bad_utf8_text_b", "missing_text_a", "two_text_b", "bad_ids", "bad_mask"}
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
        for name in INPUT_NAMES:
            if name in got:
                np.testing.assert_array_equal(got[name], inputs[name], err_msg=f"{request} {name}")
        positions = np.broadcast_to(np.arange(SEQ_LENGTH, dtype=np.int32), inputs["input_ids"].shape)
        expected = run_model(pretrainer, {**inputs, "masked_lm_positions": positions},
                             ["masked_lm_logits", "next_sentence_logits"])
        assert set(got) - set(INPUT_NAMES) == {"masked_lm_logits", "next_sentence_logits"}
        assert got["masked_lm_logits"].shape == (4, SEQ_LENGTH, 30522)
        for name in ("masked_lm_logits", "next_sentence_logits"):
            assert_close(got[name], expected[name], f"{request} {name}")


@pytest.mark.slow
@pytest.mark.subprocess
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


def test_versions_and_atomic_writes(tmp_path):
    class Tiny(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def double(self, x):
            return {"y": 2 * x}

        def signatures(self):
            return {"serving_default": self.double}

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
def test_export_model_script_errors(minilm_dir):
    common = [f"--bert_config_file={minilm_dir}/config.json", f"--vocab_file={minilm_dir}/vocab.txt",
              f"--init_checkpoint={minilm_dir}", "--export_dir=/nonexistent/never_written"]
    cases = {
        "--model_type=classifier": "has no output_weights: not a fine-tuned classifier checkpoint (pass a "
                                   "fine-tuning --output_dir",
        "--model_type=squad --label_list=a,b": "--label_list is for --model_type=classifier or ner, not squad",
        "--model_type=pretrainer": "lacks 5 variable(s) of the pretrainer model (cls/predictions/",
    }
    scripts = {flags: export_script(*flags.split(), *common) for flags in cases}
    for flags, script in scripts.items():
        output = script.communicate(timeout=300)[0]
        assert script.returncode == 1, output[-2000:]
        assert "Error: " in output and cases[flags] in output, output[-2000:]
