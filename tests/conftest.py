"""Shared fixtures: the repository root on sys.path (for tools/), the session's temporary folder, the real MiniLM
checkpoint, the tiny config, and the data and model directories that several test modules use. Shared helper
functions and constants are in tests/helpers/."""

import os
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bert_tf.cpu_kernels import prefer_onednn  # noqa: E402

prefer_onednn()  # the commands' choice of TensorFlow's CPU kernels in the tests' own processes too

import pytest  # noqa: E402

from bert_tf.tokenization import FullTokenizer
from tests.helpers import configs
from tools import pypi_data


@pytest.fixture(scope="session", autouse=True)
def session_tmpdir(tmp_path_factory):
    """TMPDIR (and tempfile's folder) of this test process and of the processes it starts: a folder of pytest's
    basetemp, removed at the end. TensorFlow writes an __autograph_generated_file*.py into it for each function
    it converts and removes them only when a process exits normally, so killed processes used to leave them in
    /tmp by the hundred; pytest.ini's retention removes whatever else the basetemp holds."""
    folder = str(tmp_path_factory.mktemp("tmp"))
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = folder, folder
    yield folder
    if saved[0] is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved[0]
    tempfile.tempdir = saved[1]
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def minilm_dir():
    """HF directory of the real pretrained all-MiniLM-L6-v2 (6 layers, H=384, uncased vocab)."""
    return pypi_data.minilm_dir()


@pytest.fixture(scope="session")
def minilm(minilm_dir):
    """(config, vocab file, BertEncoder with the real MiniLM weights)."""
    from bert_tf import BertConfig, BertEncoder, load_checkpoint  # TensorFlow: only for the tests that ask

    config = BertConfig.from_json_file(os.path.join(minilm_dir, "config.json"))
    encoder = BertEncoder(config)
    load_checkpoint(encoder, minilm_dir)
    return config, os.path.join(minilm_dir, "vocab.txt"), encoder


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
    """configs.tiny_config(): all dimensions differ, so a transposed axis cannot pass by accident."""
    return configs.tiny_config()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, minilm_dir):
    """Flags {vocab_file, bert_config_file, init_checkpoint} of a tiny model (the real uncased vocab, 2 layers
    of 32, seeded weights) for the fine-tuning scripts (read only)."""
    from tests.helpers import finetuning_scripts

    return finetuning_scripts.make_tiny_model_dir(tmp_path_factory.mktemp("tiny_bert"),
                                                  os.path.join(minilm_dir, "vocab.txt"))


@pytest.fixture(scope="session")
def pretraining_data(tmp_path_factory):
    """Sentence-per-line SOTU text, records made by Google's original create_pretraining_data.py from it, the
    tiny config and the MiniLM vocab (pretraining_script.make_pretraining_data; read only)."""
    from tests.helpers import pretraining_script

    return pretraining_script.make_pretraining_data(tmp_path_factory.mktemp("pretraining"))


@pytest.fixture(scope="session")
def training_records(tmp_path_factory):
    """400 pretraining instances from real text (seq 32, 5 predictions), MiniLM vocab (read only)."""
    from tests.helpers import pretraining_records

    return pretraining_records.write_records(tmp_path_factory.mktemp("records") / "train.tfrecord", 400)


@pytest.fixture(scope="module")
def squad_setup(tmp_path_factory):
    """(directory, run_squad.py flags): cloze SQuAD 2.0 files and the tiny model's config
    (squad_fixtures.make_squad_setup). Tests write their outputs into the directory, one module's own."""
    from tests.helpers import squad_fixtures

    return squad_fixtures.make_squad_setup(tmp_path_factory.mktemp("run_squad"))


@pytest.fixture(scope="session")
def client_python():
    """The python of a venv with only tensorflow and tensorflow-text at this process's versions (no bert_tf),
    built once per machine."""
    from tests.helpers import exports

    return exports.client_venv_python()
