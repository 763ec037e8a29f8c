"""Fused attention (`BertEncoder.use_fused_attention`: jax.nn.dot_product_attention, cuDNN's kernel on an NVIDIA
GPU, XLA's on this CPU) gives the original attention's numbers: the real MiniLM on real texts of different
lengths, at every real position, in float32 and mixed bfloat16, causal and pooled-only, and the gradients of a
classifier's loss (tests/helpers/fused_attention_check.py on Keras's JAX backend). Where it cannot be the same
(attention dropout, attention probabilities, another backend) it is a ValueError."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bert_tf import BertConfig, BertEncoder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
@pytest.mark.subprocess
def test_fused_attention_gives_the_original_attentions_numbers_on_jax():
    done = subprocess.run([sys.executable, "-m", "tests.helpers.fused_attention_check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "KERAS_BACKEND": "jax"})
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    errors = report.pop("errors")
    for case, difference in report.items():
        # float32: summation order only; mixed bfloat16: the context rounded to bfloat16 at other points.
        tolerance = 5e-2 if case.startswith("mixed_bfloat16") else 1e-5 if case == "gradients" else 2e-5
        assert difference <= tolerance, (case, difference, report)
    assert "dropout_rate=0.1" in errors["training with attention dropout"], errors
    assert "gives no attention probabilities" in errors["attention probabilities"], errors


def test_fused_attention_on_tensorflow_says_it_is_jaxs():
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16)
    encoder = BertEncoder(config)
    encoder.use_fused_attention()
    with pytest.raises(ValueError, match="fused attention runs on Keras's JAX backend, not tensorflow"):
        encoder({"input_ids": np.array([[1, 2, 3]], np.int32)}, training=False)
