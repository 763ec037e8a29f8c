"""Shared by the SavedModel export tests: request encoding, the Python path's packing, running the in-process
model, export_model.py as a process, the fresh-venv client process (export_client.py) and
saved_model_cli listings."""

import base64
import json
import os
import re
import subprocess
import sys

import numpy as np
import tensorflow as tf

from bert_tf.cpu_kernels import prefer_onednn
from bert_tf.data.packing import pack_tokens
from bert_tf.feature_schema import INPUT_NAMES
from tools import peer_venvs
from tools.pinned_venv import build_once

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLIENT = os.path.join(ROOT, "tests", "helpers", "export_client.py")
SEQ_LENGTH = 64
BATCH_SIZE = 256
ATOL = 1e-5
# The python of a venv with only tensorflow and tensorflow-text (the conftest fixture `client_python`).
client_venv_python = peer_venvs.tensorflow_text_python


def serialized_features(**features):
    """A serialized tf.train.Example with one bytes feature per keyword: name=[str or bytes, ...]."""
    def strings(values):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[
            v if isinstance(v, bytes) else v.encode("utf-8") for v in values]))

    return tf.train.Example(features=tf.train.Features(feature={
        name: strings(values) for name, values in features.items()})).SerializeToString()


def serialized_example(text_a, text_b=None, extra_b=()):
    features = {} if text_a is None else {"text_a": [text_a]}
    if text_b is not None:
        features["text_b"] = [text_b, *extra_b]
    return serialized_features(**features)


def strings(values):
    return {"strings": [base64.b64encode(v if isinstance(v, bytes) else v.encode("utf-8")).decode("ascii")
                        for v in values]}


def python_pack(tokenizer, pairs):
    """FullTokenizer + pack_tokens on (text_a, text_b or None) pairs -> dict of int32 [B, SEQ_LENGTH]."""
    packed = [pack_tokens(tokenizer.tokenize(a), None if b is None else tokenizer.tokenize(b), SEQ_LENGTH,
                          tokenizer) for a, b in pairs]
    return {name: np.array([getattr(p, name) for p in packed], np.int32) for name in INPUT_NAMES}


def request_length(input_mask):
    """T of a raw-text request whose rows pack to `input_mask` [B, SEQ_LENGTH]: the longest row rounded up to a
    multiple of 8, at most SEQ_LENGTH (a dynamic-length export)."""
    return min(SEQ_LENGTH, -(-int(np.asarray(input_mask).sum(axis=1).max()) // 8) * 8)


def cut(packed, length):
    """`python_pack`'s arrays cut to `length` positions, after checking that the cut-off ones are padding."""
    assert not np.asarray(packed["input_mask"])[:, length:].any(), "a real token beyond the request's length"
    return {name: np.asarray(value)[:, :length] for name, value in packed.items()}


def run_model(model, inputs, names):
    """The in-process model on int32 [B, T] inputs, in batches of BATCH_SIZE -> {name: np array}."""
    call = tf.function(lambda x: model(x, training=False))
    batches = []
    for start in range(0, len(inputs["input_ids"]), BATCH_SIZE):
        outputs = call({k: tf.constant(v[start:start + BATCH_SIZE]) for k, v in inputs.items()})
        batches.append({name: np.asarray(outputs[name]) for name in names})
    return {name: np.concatenate([b[name] for b in batches]) for name in names}


def assert_close(got, expected, what):
    diff = float(np.max(np.abs(np.asarray(got) - np.asarray(expected))))
    assert got.shape == expected.shape and diff <= ATOL, (
        f"{what}: shapes {got.shape}/{expected.shape}, max diff {diff}")


def assert_zero_rows(empty, full, what):
    """`empty`, the outputs of a request of zero rows, are those of `full` (a request of some rows to the same
    signature) with 0 rows: the same names and dtypes, and the same sizes past the batch but the request's
    sequence length T (input_ids' second axis, where the outputs have it: 1 <= T <= SEQ_LENGTH)."""
    assert sorted(empty) == sorted(full), f"{what}: {sorted(empty)} vs {sorted(full)}"
    empty_t, full_t = (outputs["input_ids"].shape[1] if "input_ids" in outputs else None for outputs in (empty, full))
    assert empty_t is None or 1 <= empty_t <= SEQ_LENGTH, f"{what}: T = {empty_t}"
    for name, value in full.items():
        expected = (0, *(empty_t if full_t is not None and size == full_t else size for size in value.shape[1:]))
        got = empty[name]
        assert got.shape == expected and got.dtype.kind == value.dtype.kind, (
            f"{what} {name}: {got.shape} {got.dtype} vs {expected} {value.dtype}")


def shared_dir(tmp_path_factory, name):
    """A directory shared by the xdist workers of this session (a private one without xdist)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return str(tmp_path_factory.getbasetemp().parent / name)
    return str(tmp_path_factory.mktemp("shared") / name)


def export_script(*flags):
    return subprocess.Popen([sys.executable, os.path.join(ROOT, "export_model.py"), *flags], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT})


def assert_exports_fail(cases, common, tmp_path):
    """Runs export_model.py once per case of `cases` ({"flags ...": the message its Error line must hold}) with the
    flags `common`, all at once (each its own export folder in `tmp_path`: a command holds its folder's lock);
    each must exit 1 with that message and leave no folder."""
    scripts = {flags: export_script(*flags.split(), *common, f"--export_dir={tmp_path / f'never_written_{i}'}")
               for i, flags in enumerate(cases)}
    for flags, script in scripts.items():
        output = script.communicate(timeout=300)[0]
        assert script.returncode == 1, output[-2000:]
        assert "Error: " in output and cases[flags] in output, output[-2000:]
    assert os.listdir(tmp_path) == []  # a failed export leaves no folder


def client_environment():
    """The environment of a fresh-venv client process (SavedModel or LiteRT): PATH, HOME, TF_CPP_MIN_LOG_LEVEL=2
    and the tests' choice of TensorFlow's CPU kernels, those of the expected values (on a CPU where TensorFlow
    alone would run Eigen's, MiniLM's outputs differ from oneDNN's by up to ~1e-4: rounding, not another
    function)."""
    environment = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "TF_CPP_MIN_LOG_LEVEL": "2"}
    prefer_onednn(environment)
    return environment


def run_client(tmp_path_factory, name, client_python, make_requests):
    """(outputs {request/output: array}, errors {request: message}) of one fresh-venv process answering
    `make_requests()`, run once per session (shared directory `name`)."""
    def build(directory):
        requests_file = os.path.join(directory, "requests.json")
        with open(requests_file, "w", encoding="utf-8") as f:
            json.dump(make_requests(), f)
        result = subprocess.run(
            [client_python, "-I", CLIENT, requests_file, f"{directory}/outputs.npz", f"{directory}/errors.json"],
            capture_output=True, text=True, timeout=900, cwd=directory, env=client_environment())
        assert result.returncode == 0, result.stderr[-5000:]

    directory = build_once(shared_dir(tmp_path_factory, name), build)
    with np.load(os.path.join(directory, "outputs.npz")) as data:
        outputs = dict(data)
    with open(os.path.join(directory, "errors.json"), encoding="utf-8") as f:
        return outputs, json.load(f)


def client_outputs(client, name):
    return {key.split("/", 1)[1]: value for key, value in client[0].items() if key.startswith(name + "/")}


def listed_signatures(*paths):
    """`saved_model_cli show --all` of each SavedModel in `paths` (run in parallel), parsed: one
    {signature: (method name, {(inputs|outputs, key): (dtype, shape)})} per path, without __saved_model_init_op."""
    runs = [subprocess.Popen(["saved_model_cli", "show", "--dir", path, "--all"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for path in paths]
    listings = []
    for run in runs:
        stdout, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr[-3000:]
        listed = {}
        for block in stdout.split("signature_def[")[1:]:
            name = block.split("'")[1]
            if not name.startswith("__"):
                listed[name] = re.search(r"Method name is: (\S+)", block).group(1), {
                    (kind, key): (dtype, shape) for kind, key, dtype, shape in re.findall(
                        r"(inputs|outputs)\['(\w+)'\] tensor_info:\s+dtype: (\w+)\s+shape: \(([-\d, ]*)\)", block)}
        listings.append(listed)
    return listings
