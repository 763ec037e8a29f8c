"""Numerical parity with an independent implementation (HF transformers' PyTorch BertModel), on the real
pretrained all-MiniLM-L6-v2, loaded from its HF directory and from a Google TF1 checkpoint made from it.

The reference values were produced once by tests/tools/make_minilm_reference.py (see its docstring)."""

import os

import numpy as np
import pytest

from bert_tf import BertConfig, BertEncoder
from bert_tf.checkpoints import load_checkpoint

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "minilm_reference.npz")
TOLERANCE = 1e-4
BF16_POOLED_ATOL = 0.01  # pooled outputs are tanh values in [-1, 1]; measured: max |diff| 0.0025


@pytest.fixture(scope="module")
def reference():
    return dict(np.load(FIXTURE))


def encoder_outputs(checkpoint, config_file, reference):
    encoder = BertEncoder(BertConfig.from_json_file(config_file))
    load_checkpoint(encoder, checkpoint)
    outputs = encoder({k: reference[k] for k in ("input_ids", "input_mask", "segment_ids")}, training=False)
    mask = reference["input_mask"].astype(bool)
    layers = [outputs["embedding_output"]] + list(outputs["encoder_outputs"])
    hidden = np.stack([np.asarray(layer)[mask] for layer in layers])  # [L + 1, real tokens, H], row order
    return hidden, np.asarray(outputs["sequence_output"])[mask], np.asarray(outputs["pooled_output"])


def test_fixture_covers_the_acceptance_cases(reference):
    lengths = reference["lengths"]
    assert len(lengths) >= 20 and lengths.min() <= 8 and lengths.max() == 128
    assert reference["is_pair"].sum() >= 5 and (~reference["is_pair"]).sum() >= 5
    assert (lengths < 128).sum() >= 20  # padding present
    np.testing.assert_array_equal(reference["input_mask"].sum(1), lengths)


@pytest.mark.parametrize("source", ["huggingface", "google"])
def test_every_layer_matches_the_reference(source, reference, minilm_dir, google_minilm):
    checkpoint, config = {"huggingface": (minilm_dir, f"{minilm_dir}/config.json"),
                          "google": (f"{google_minilm}/bert_model.ckpt",
                                     f"{google_minilm}/bert_config.json")}[source]
    hidden, sequence, pooled = encoder_outputs(checkpoint, config, reference)
    expected = reference["hidden_states"]
    assert hidden.shape == expected.shape == (7, reference["lengths"].sum(), 384)
    errors = np.abs(hidden - expected).max(axis=(1, 2))
    print(f"{source}: max |diff| per layer (embeddings, 1..6) {np.array2string(errors, precision=2)}; "
          f"pooled {np.abs(pooled - reference['pooled_output']).max():.2e}")
    assert errors.max() <= TOLERANCE, errors
    np.testing.assert_array_equal(sequence, hidden[-1])
    np.testing.assert_allclose(pooled, reference["pooled_output"], atol=TOLERANCE, rtol=0)
    assert np.abs(expected).max() > 1.0  # the comparison is on real, non-trivial activations


def test_bfloat16_pooled_output_stays_close_to_float32(reference, minilm_dir):
    """The speed setting (mixed_bfloat16: bfloat16 matmuls, float32 softmax/LayerNorm/variables) against the
    float32 reference on the real MiniLM: pooled outputs within BF16_POOLED_ATOL, cosine >= 0.9995 each
    (measured: 0.99993)."""
    import keras
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        _, _, pooled = encoder_outputs(minilm_dir, f"{minilm_dir}/config.json", reference)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    expected = reference["pooled_output"]
    pooled = pooled.astype(np.float32)
    cosine = (pooled * expected).sum(1) / np.linalg.norm(pooled, axis=1) / np.linalg.norm(expected, axis=1)
    error = np.abs(pooled - expected).max()
    print(f"bfloat16 pooled output: max |diff| {error:.3g}, min cosine {cosine.min():.6f}")
    assert error <= BF16_POOLED_ATOL and cosine.min() >= 0.9995, (error, cosine.min())
    assert error > TOLERANCE  # it did run in bfloat16
