"""An output that is one of a command's inputs, by any path (the same name, `./x`, `d/../x`, a symlink, a hard
link, a file a glob pattern matches): refused with one `Error:` line naming both flags, exit status 1, before
anything is written, the input's bytes unchanged (issue 55). `flag_checks.check_outputs_not_inputs` is the
one check; each command that reads and writes files passes it its input and output flags.

The fast commands (create_pretraining_data.py, prepare_corpus.py, build_vocab.py) run in `make test`; those
that start TensorFlow before their check (extract_features.py, encode_sentences.py, run_embedder.py) in
`make test-all`.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest
from absl import flags

from bert_tf.cli import flag_checks
from bert_tf.data.pretraining.corpus import prepare_corpus
from tests.helpers.sotu_speeches import SPEECHES
from tests.helpers.tiers import first_in_make_test

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPLACED = "the output would replace the input: choose another"


def run_refused(script, watched, *args):
    """The one `Error:` line of `script` run with `args`, after checking that every file under `watched` (the
    inputs' folder) is as it was and that the script failed cleanly (status 1)."""
    before = snapshot(watched)
    result = subprocess.run([sys.executable, os.path.join(ROOT, script), *args], capture_output=True, text=True,
                            cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    output = result.stdout + result.stderr
    after = snapshot(watched)
    changed = sorted(name for name in {*before, *after} if before.get(name) != after.get(name))
    assert not changed, (changed, output[-3000:])  # no input replaced, nothing written
    assert result.returncode == 1, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "Traceback" not in output, output[-3000:]
    return errors[0]


def snapshot(directory):
    """{relative path: bytes} of every file under `directory` (symlinks as their target's path)."""
    files = {}
    for folder, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(folder, name)
            key = os.path.relpath(path, directory)
            if os.path.islink(path):
                files[key] = os.readlink(path)
            else:
                with open(path, "rb") as f:
                    files[key] = f.read()
    return files


@pytest.fixture(scope="module")
def speeches(tmp_path_factory):
    """Two State of the Union speeches as a create_pretraining_data corpus (one sentence per line)."""
    path = str(tmp_path_factory.mktemp("speeches") / "corpus.txt")
    prepare_corpus(SPEECHES[:2], path)
    return path


# --- The check ------------------------------------------------------------------------------------------

@pytest.fixture
def command_flags(monkeypatch):
    """flag_checks reading the flags of a command: --input_file, --output_file and --vocab_file, set by parsing
    the `argv` that the test passes."""
    values = flags.FlagValues()
    for name in ("input_file", "output_file", "vocab_file"):
        flags.DEFINE_string(name, None, "", flag_values=values)
    monkeypatch.setattr(flag_checks, "FLAGS", values)
    return lambda *argv: values(["command", *argv])


def test_any_path_of_an_input_is_refused(tmp_path, command_flags, monkeypatch):
    (tmp_path / "data").mkdir()
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one line\n", encoding="utf-8")
    (tmp_path / "symlink.txt").symlink_to(corpus)
    os.link(corpus, tmp_path / "hardlink.txt")
    monkeypatch.chdir(tmp_path)
    command_flags("--input_file=corpus.txt")
    for output in ["corpus.txt", "./corpus.txt", "data/../corpus.txt", str(corpus), "symlink.txt", "hardlink.txt"]:
        with pytest.raises(ValueError) as refused:
            flag_checks.check_outputs_not_inputs({"output_file": [output]}, {"input_file": ["corpus.txt"]})
        assert str(refused.value) == (f"--output_file={output} is the same file as --input_file=corpus.txt; "
                                      f"{REPLACED} --output_file")
    # A copy is another file; a path with no file (a new output, a missing input) replaces nothing.
    shutil.copy(corpus, tmp_path / "copy.txt")
    for output in ["copy.txt", "new.txt", "data/corpus.txt", "data/../new.txt"]:
        flag_checks.check_outputs_not_inputs({"output_file": [output]},
                                             {"input_file": ["corpus.txt", "new.txt"], "vocab_file": [None]})


def test_a_path_standing_for_a_flag_is_named_with_it(tmp_path, command_flags):
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    command_flags(f"--input_file={tmp_path}/*.txt", f"--output_file={tmp_path}/{{shard}}.txt",
                  f"--vocab_file={tmp_path}/vocab.txt")
    inputs = {"input_file": [f"{tmp_path}/a.txt"], "vocab_file": [f"{tmp_path}/vocab.txt"]}
    with pytest.raises(ValueError) as refused:
        flag_checks.check_outputs_not_inputs({"output_file": [f"{tmp_path}/0.txt", f"{tmp_path}/a.txt"]}, inputs)
    assert str(refused.value) == (f"{tmp_path}/a.txt (of --output_file={tmp_path}/{{shard}}.txt) is the same file as "
                                  f"{tmp_path}/a.txt (of --input_file={tmp_path}/*.txt); {REPLACED} --output_file")
    with pytest.raises(ValueError) as refused:
        flag_checks.check_outputs_not_inputs({"output_file": [f"{tmp_path}/1.txt", f"{tmp_path}/vocab.txt"]}, inputs)
    assert str(refused.value) == (f"{tmp_path}/vocab.txt (of --output_file={tmp_path}/{{shard}}.txt) is the same file "
                                  f"as --vocab_file={tmp_path}/vocab.txt; {REPLACED} --output_file")


# --- The commands ---------------------------------------------------------------------------------------

def pretraining_case(tmp_path, speeches, minilm_dir, case):
    """(create_pretraining_data.py flags, the input flag the error names) of a refused `case`; the corpus
    and vocab copied into tmp_path/in."""
    data = tmp_path / "in"
    (data / "sub").mkdir(parents=True)
    corpus, vocab = data / "corpus.txt", data / "vocab.txt"
    shutil.copy(speeches, corpus)
    shutil.copy(os.path.join(minilm_dir, "vocab.txt"), vocab)
    flags_ = {"input_file": corpus, "vocab_file": vocab, "num_workers": 1, "dupe_factor": 1, "max_seq_length": 64}
    if case == "other_spelling":
        flags_["output_file"] = f"{data}/sub/../corpus.txt"
    elif case == "vocab_file":
        flags_["output_file"] = f"{data}/./vocab.txt"
    elif case == "symlink":  # the corpus read through a link, written by its own name
        (data / "link.txt").symlink_to(corpus)
        flags_.update(input_file=data / "link.txt", output_file=f"{data}/out.tfrecord,{corpus}")
    elif case == "hard_link":
        os.link(corpus, data / "hard.tfrecord")
        flags_["output_file"] = data / "hard.tfrecord"
    else:  # shards: a {shard} pattern whose files a glob pattern of the input matches (an earlier run's output)
        shutil.copy(corpus, data / "part-1.txt")
        flags_.update(input_file=f"{data}/part-*.txt", output_file=f"{data}/part-{{shard}}.txt", num_output_shards=2)
    return [f"--{k}={v}" for k, v in flags_.items()], "vocab_file" if case == "vocab_file" else "input_file"


@pytest.mark.subprocess
@pytest.mark.parametrize("case", first_in_make_test(
    ["other_spelling", "vocab_file", "symlink", "hard_link", "shards"], 3))
def test_create_pretraining_data_refuses_to_replace_an_input(tmp_path, speeches, minilm_dir, case):
    args, input_flag = pretraining_case(tmp_path, speeches, minilm_dir, case)
    error = run_refused("create_pretraining_data.py", tmp_path, *args)
    assert "--output_file=" in error and f"--{input_flag}=" in error, error
    assert error.endswith(f"{REPLACED} --output_file"), error


def speech_files(tmp_path):
    """Two State of the Union speeches copied into tmp_path/raw; the first one's path."""
    raw = tmp_path / "raw"
    raw.mkdir()
    for speech in SPEECHES[:2]:
        shutil.copy(speech, raw)
    return os.path.join(raw, os.path.basename(SPEECHES[0]))


@pytest.mark.subprocess
def test_prepare_corpus_refuses_to_replace_an_input(tmp_path):
    first = speech_files(tmp_path)
    pattern, output = f"{tmp_path}/raw/*.txt", f"{tmp_path}/raw/./{os.path.basename(first)}"
    error = run_refused("prepare_corpus.py", tmp_path, f"--input_file={pattern}", f"--output_file={output}")
    assert error == (f"Error: --output_file={output} is the same file as {first} (of --input_file={pattern}); "
                     f"{REPLACED} --output_file")


@pytest.mark.subprocess
def test_build_vocab_refuses_to_replace_an_input(tmp_path):
    first = speech_files(tmp_path)
    (tmp_path / "corpus.txt").symlink_to(first)
    error = run_refused("build_vocab.py", tmp_path, f"--input_file={tmp_path}/corpus.txt", f"--output_file={first}",
                        "--vocab_size=200")
    assert error == (f"Error: --output_file={first} is the same file as --input_file={tmp_path}/corpus.txt; "
                     f"{REPLACED} --output_file")


@pytest.mark.subprocess
@pytest.mark.extended
@pytest.mark.parametrize("input_flag", ["input_file", "vocab_file"])
def test_extract_features_refuses_to_replace_its_input_or_vocab(tmp_path, tiny_model_dir, input_flag):
    texts, vocab = tmp_path / "input.txt", tmp_path / "vocab.txt"
    texts.write_text("The economy grew.\nTaxes were cut ||| and spending rose.\n", encoding="utf-8")
    shutil.copy(tiny_model_dir["vocab_file"], vocab)
    model = {**tiny_model_dir, "vocab_file": vocab}
    replaced = {"input_file": texts, "vocab_file": vocab}[input_flag]
    output = f"{tmp_path}/./{replaced.name}"
    error = run_refused("extract_features.py", tmp_path, *[f"--{k}={v}" for k, v in model.items()],
                        f"--input_file={texts}", f"--output_file={output}", "--max_seq_length=16", "--layers=-1")
    assert error == (f"Error: --output_file={output} is the same file as --{input_flag}={replaced}; "
                     f"{REPLACED} --output_file")


@pytest.mark.subprocess
@pytest.mark.extended
def test_encode_sentences_refuses_to_replace_its_input(tmp_path, minilm_dir):
    texts = tmp_path / "texts.jsonl"  # one text per line, whatever its name
    texts.write_text("The economy grew.\nTaxes were cut.\n", encoding="utf-8")
    (tmp_path / "link.jsonl").symlink_to(texts)
    error = run_refused("encode_sentences.py", tmp_path, f"--init_checkpoint={minilm_dir}",
                        f"--input_file={tmp_path}/link.jsonl", f"--output_file={texts}")
    assert error == (f"Error: --output_file={texts} is the same file as --input_file={tmp_path}/link.jsonl; "
                     f"{REPLACED} --output_file")


@pytest.mark.subprocess
@pytest.mark.extended
def test_run_embedder_refuses_to_rewrite_the_settings_of_its_init_checkpoint(tmp_path, minilm_dir):
    """An evaluation with --output_dir the sentence-transformers directory it evaluates would rewrite that
    directory's pooling and max_seq_length (modules.json, sentence_bert_config.json, 1_Pooling/config.json)."""
    from tools import make_pairs

    make_pairs.main([f"--output_dir={tmp_path / 'pairs'}", "--num_train=8", "--num_dev=8"])
    model = tmp_path / "minilm"
    shutil.copytree(minilm_dir, model, ignore=shutil.ignore_patterns("model.safetensors"))
    (model / "model.safetensors").symlink_to(os.path.join(minilm_dir, "model.safetensors"))
    error = run_refused("run_embedder.py", model, "--task=pairs", f"--data_dir={tmp_path / 'pairs'}",
                        f"--init_checkpoint={model}", f"--bert_config_file={model}/config.json",
                        f"--vocab_file={model}/vocab.txt", "--do_eval",
                        "--max_seq_length=32", "--pooling=cls", f"--output_dir={model}")
    assert error == (f"Error: {model}/modules.json (of --output_dir={model}) is the same file as {model}/modules.json "
                     f"(of --init_checkpoint={model}); {REPLACED} --output_dir")


@pytest.mark.subprocess
@pytest.mark.extended
def test_run_ner_refuses_a_data_file_that_its_outputs_would_replace(tmp_path, tiny_model_dir):
    """With --output_dir the --data_dir, a dev file named eval_predictions.txt was overwritten by the
    predictions of the dev evaluation."""
    (tmp_path / "train.txt").write_text("Paris B-LOC\nis O\nnice O\n", encoding="utf-8")
    (tmp_path / "eval_predictions.txt").write_text("Berlin B-LOC\nis O\ncold O\n", encoding="utf-8")
    error = run_refused("run_ner.py", tmp_path, *[f"--{k}={v}" for k, v in tiny_model_dir.items()],
                        f"--data_dir={tmp_path}", f"--output_dir={tmp_path}", "--dev_file=eval_predictions.txt",
                        "--do_train", "--do_eval", "--max_seq_length=16")
    assert error == (f"Error: {tmp_path}/eval_predictions.txt (of --output_dir={tmp_path}) is the same file as "
                     f"{tmp_path}/eval_predictions.txt (of --dev_file=eval_predictions.txt); {REPLACED} --output_dir")


@pytest.mark.subprocess
@pytest.mark.extended
def test_run_squad_refuses_a_predict_file_that_its_predictions_would_replace(tmp_path, tiny_model_dir):
    """A --predict_file at <output_dir>/predictions.json was removed and replaced by the prediction set."""
    question = {"id": "q1", "question": "What is nice?", "answers": [{"text": "Paris", "answer_start": 0}]}
    (tmp_path / "predictions.json").write_text(json.dumps({"version": "1.1", "data": [
        {"title": "Paris", "paragraphs": [{"context": "Paris is nice.", "qas": [question]}]}]}), encoding="utf-8")
    error = run_refused("run_squad.py", tmp_path, *[f"--{k}={v}" for k, v in tiny_model_dir.items()],
                        f"--predict_file={tmp_path}/predictions.json", f"--output_dir={tmp_path}", "--do_predict",
                        "--max_seq_length=64", "--max_query_length=16", "--doc_stride=16")
    assert error == (f"Error: {tmp_path}/predictions.json (of --output_dir={tmp_path}) is the same file as "
                     f"--predict_file={tmp_path}/predictions.json; {REPLACED} --output_dir")
