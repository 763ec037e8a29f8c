"""bench/bench_serving.py: its dry run end to end (bert_tf SavedModel only: no peers' venv, nothing appended to
bench/RESULTS.md) and the helpers that make its comparison fair (the same weights for bert_tf and HF, inputs
of exactly the sequence length, the ids checked; the error line of a failed export: tests/test_bench_harness.py).
No timing is asserted."""

import os

import numpy as np
import pytest

from bench import bench_serving
from tests.helpers.bench_runs import dry_run


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_dry_run_measures_both_signatures_and_appends_nothing(tmp_path):
    out = dry_run("bench_serving.py", tmp_path, timeout=300)
    for batch in (1, 2):
        for shown in ("ids (serving_default)", "text (serve_text)"):
            rows = [line for line in out.splitlines()
                    if line.startswith(f"| bert_tf SavedModel float32 | {shown} | {batch} | 16 |")]
            assert len(rows) == 1, out
            cells = [c.strip() for c in rows[0].strip("|").split("|")]
            assert float(cells[4]) > 0 and float(cells[6]) > 0, rows[0]  # p50 ms, examples/s
            assert float(cells[8]) == 0.0, rows[0]  # the same model on the same ids as the reference
            assert cells[9] == "1 (3)", rows[0]


def test_random_model_gives_hf_the_same_weights(tmp_path, minilm_dir):
    """The HF safetensors copy of the random encoder is read back by bert_tf's HF reader as exactly the bert_tf
    checkpoint's arrays (random_model raises otherwise), and HF's names are the BertModel's."""
    from bert_tf.checkpoints import open_checkpoint

    model = bench_serving.random_model("tiny", "tiny", os.path.join(minilm_dir, "vocab.txt"), str(tmp_path))
    ours, hf = open_checkpoint(model["bert_tf_checkpoint"]), open_checkpoint(model["hf_dir"])
    weights = {n for n in ours.shapes if n.startswith("bert/")}
    assert weights == set(hf.shapes)
    for name in weights:
        np.testing.assert_array_equal(ours.read(name), hf.read(name))
    assert len(weights) == 5 + 2 + 2 * 16  # embeddings, pooler, 2 layers of 16 tensors
    assert sorted(os.listdir(model["hf_dir"])) == ["config.json", "model.safetensors", "special_tokens_map.json",
                                                   "tokenizer_config.json", "vocab.txt"]


def test_texts_have_exactly_the_sequence_length(tokenizer):
    inputs = bench_serving.make_inputs(tokenizer, [16, 128], 3)
    for seq in (16, 128):
        data = inputs[str(seq)]
        assert len(set(data["texts"])) == 3
        for text, ids, mask in zip(data["texts"], data["input_ids"], data["input_mask"]):
            assert len(tokenizer.tokenize(text)) == seq - 2
            assert len(ids) == seq and all(mask) and ids[0] == 101 and ids[-1] == 102


def test_check_ids_refuses_other_tokenization():
    expected = np.array([[101, 7, 102]], np.int32)
    bench_serving.check_ids(expected, None, expected.astype(np.int64))
    bench_serving.check_ids(expected, None, None)  # an implementation that does not expose its ids
    with pytest.raises(ValueError, match="other ids"):
        bench_serving.check_ids(expected, None, np.array([[2, 1, 3]]))
