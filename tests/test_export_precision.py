"""export_model.py --export_dtype=bfloat16 and --quantize=int8 on the real MiniLM: what the SavedModel stores,
how close its outputs stay to float32 (a fresh process with only tensorflow + tensorflow-text calls it), and
that the bfloat16 graph pins nothing to the CPU (the same SavedModel serves on a GPU).

The accuracy of a fine-tuned classifier exported each way is measured by tools/export_accuracy.py (it needs
a fine-tuning run: minutes, not a test).
"""

import os

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from tests.helpers import tokenizer_data
from tests.helpers.exports import (
    SEQ_LENGTH,
    client_outputs,
    export_script,
    python_pack,
    run_client,
    run_model,
    shared_dir,
    strings,
)
from tools.pinned_venv import build_once

pytestmark = pytest.mark.extended  # tests/helpers/tiers.py: make test-all only

# (flags, the least cosine of the pooled output against float32): the bounds.
EXPORTS = {"bfloat16": (["--export_dtype=bfloat16"], 0.9995),
           "bfloat16_int8": (["--export_dtype=bfloat16", "--quantize=int8"], 0.99)}
NUM_LINES = 48  # real corpus lines of varied length (the issue asks for 27+)


def lines():
    return list(tokenizer_data.corpus_lines()[::17][:NUM_LINES])


@pytest.fixture(scope="module")
def exports(tmp_path_factory, minilm_dir):
    """{name: SavedModel path} of the EXPORTS, written by export_model.py (in parallel)."""
    def build(directory):
        common = [f"--vocab_file={minilm_dir}/vocab.txt", f"--init_checkpoint={minilm_dir}",
                  f"--max_seq_length={SEQ_LENGTH}"]
        scripts = {name: export_script(*flags, *common, f"--export_dir={directory}/{name}")
                   for name, (flags, _) in EXPORTS.items()}
        for name, script in scripts.items():
            output = script.communicate(timeout=600)[0]
            assert script.returncode == 0, f"{name}: {output[-3000:]}"

    directory = build_once(shared_dir(tmp_path_factory, "precision_exports"), build)
    return {name: os.path.join(directory, name, "1") for name in EXPORTS}


@pytest.fixture(scope="module")
def float32_reference(minilm, tokenizer):
    """(packed ids of lines(), the float32 Keras encoder's pooled output [NUM_LINES, H])."""
    packed = python_pack(tokenizer, [(line, None) for line in lines()])
    return packed, run_model(minilm[2], packed, ["pooled_output"])["pooled_output"]


@pytest.fixture(scope="module")
def client(tmp_path_factory, exports, client_python, float32_reference):
    packed = float32_reference[0]
    ids = {name: {"int32": value.tolist()} for name, value in packed.items()}

    def requests():
        return [request for name, path in exports.items() for request in (
            {"name": f"{name}_ids", "model": path, "signature": "serving_default", "inputs": ids},
            {"name": f"{name}_text", "model": path, "signature": "serve_text",
             "inputs": {"text_a": strings(lines())}})]

    return run_client(tmp_path_factory, "precision_client", client_python, requests)


def cosines(a, b):
    return np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("name", EXPORTS)
def test_outputs_stay_close_to_float32(client, float32_reference, name):
    packed, expected = float32_reference
    assert not client[1], client[1]
    for signature in ("ids", "text"):
        outputs = client_outputs(client, f"{name}_{signature}")
        pooled = outputs["pooled_output"]
        assert pooled.dtype == np.float32 and pooled.shape == expected.shape
        worst = float(cosines(pooled, expected).min())
        assert worst >= EXPORTS[name][1], f"{name} {signature}: least cosine {worst}"
        assert float(cosines(pooled, expected).min()) < 1.0 - 1e-7, "the export computed in float32 after all"
    text = client_outputs(client, f"{name}_text")
    width = text["input_ids"].shape[1]
    np.testing.assert_array_equal(text["input_ids"], packed["input_ids"][:, :width])


@pytest.mark.slow
@pytest.mark.subprocess
def test_variables_are_stored_in_the_export_dtype(exports):
    dtypes = {name: tf.train.load_checkpoint(os.path.join(path, "variables", "variables")).get_variable_to_dtype_map()
              for name, path in exports.items()}
    for name, variables in dtypes.items():
        kernels = {key: dtype for key, dtype in variables.items() if key.endswith("kernel/.ATTRIBUTES/VARIABLE_VALUE")}
        scales = [key for key in variables if "kernel_scale/" in key]
        norms = {dtype for key, dtype in variables.items() if "gamma/" in key or "beta/" in key}
        assert len(kernels) == 6 * 6 + 1, (name, len(kernels))  # 6 dense kernels per layer + the pooler
        assert norms == {tf.float32}, (name, norms)  # LayerNorm stays float32
        if name.endswith("int8"):
            assert set(kernels.values()) == {tf.int8} and len(scales) == len(kernels), name
        else:
            assert set(kernels.values()) == {tf.bfloat16} and not scales, name
    size = {name: sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)
            for name, path in exports.items()}
    assert size["bfloat16_int8"] < 0.85 * size["bfloat16"] < 0.85 * 60e6, size  # float32: ~99 MB


@pytest.mark.slow
@pytest.mark.subprocess
def test_bfloat16_graph_pins_no_op_to_a_device(exports):
    """Every node of the SavedModel's functions leaves placement to the runtime: no CPU-only constraint
    keeps the bfloat16 export off a GPU. Only TensorFlow's own checkpoint save/restore functions pin their
    file ops to the CPU, as in every SavedModel."""
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(exports["bfloat16"], "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    functions = saved_model.meta_graphs[0].graph_def.library.function
    saver = [f for f in functions if f.signature.name.startswith(("__inference__traced_save_",
                                                                  "__inference__traced_restore_"))]
    served = [f for f in functions if f not in saver]
    assert len(saver) == 2 and sum(len(f.node_def) for f in served) > 1000
    pinned = sorted({(f.signature.name, node.op, node.device) for f in served for node in f.node_def if node.device})
    assert not pinned, pinned[:10]
