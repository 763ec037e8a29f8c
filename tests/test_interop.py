"""Moving models between bert_tf, HuggingFace and KerasHub (convert_checkpoint.py --output_format, KerasHub
presets as --init_checkpoint), on the real MiniLM weights.

HuggingFace: the directories are checked against the tensor names and shapes that transformers 5.x writes for
each class (tests/fixtures/huggingface_bert_keys.json, made by tools/huggingface_reference.py, which also
checks the outputs with transformers itself; torch is never imported here). KerasHub runs in its own pinned venv
(tests/helpers/keras_hub_client.py).
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from bert_tf import BertConfig, BertEncoder, load_checkpoint, run_directory, save_checkpoint
from bert_tf.checkpoint_names import POOLER_SCOPE
from bert_tf.checkpoints import open_checkpoint
from bert_tf.conversion import convert
from bert_tf.formats import huggingface, keras_hub
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from tests.helpers.finetuning_scripts import ROOT
from tests.helpers.tiers import first_in_make_test
from tools.peer_venvs import keras_hub_python

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "huggingface_bert_keys.json")
CLIENT = os.path.join(ROOT, "tests", "helpers", "keras_hub_client.py")
SENTIMENT = ["negative", "positive"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
# Largest difference the tanh GELU of KerasHub makes on MiniLM (measured: 6.0e-3 sequence, 2.5e-4 pooled).
GELU_SEQUENCE_TOLERANCE, GELU_POOLED_TOLERANCE = 2e-2, 1e-3



def run_keras_hub(*args):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([keras_hub_python(), CLIENT, *map(str, args)], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-3000:]


def convert_script(*flags):
    return subprocess.run([sys.executable, os.path.join(ROOT, "convert_checkpoint.py"), *flags], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def inputs(batch=3, length=20, seed=0):
    """Random real-vocabulary ids with [CLS] first, a padded row and a second segment: int32 [B, T] each."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 30000, (batch, length)).astype(np.int32)
    ids[:, 0] = 101
    mask = np.ones_like(ids)
    mask[1, length // 2 + 2:] = 0
    segments = np.zeros_like(ids)
    segments[:, length // 2:] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


MODELS = {"encoder": lambda c: BertEncoder(c), "pretrainer": lambda c: BertPretrainer(c),
          "mlm": lambda c: BertPretrainer(c, objective="mlm"),
          "classifier": lambda c: BertClassifier(c, len(SENTIMENT)),
          "ner": lambda c: BertTokenClassifier(c, len(TAGS)), "squad": lambda c: BertSpanLabeler(c),
          "multiple_choice": None}


@pytest.fixture(scope="module")
def finetuned(minilm, tmp_path_factory):
    """{kind: a fine-tuning-style output dir (bert_tf checkpoint + labels.txt) of the real MiniLM encoder with
    a seeded random head}: encoder, pretrainer, mlm (no NSP), classifier, ner, squad, multiple_choice."""
    config, _, encoder = minilm
    root = tmp_path_factory.mktemp("interop_models")
    weights = {name: variable.numpy() for name, variable in encoder.checkpoint_variables().items()}
    directories = {}
    keras.utils.set_random_seed(3)
    for kind, make in MODELS.items():
        directory = root / kind
        directory.mkdir()
        if make is None:  # multiple choice: BertMultipleChoice's head is output_weights [1, H]
            head = {"output_weights": np.random.default_rng(1).normal(0, 0.02, (1, config.hidden_size)),
                    "output_bias": np.array([0.1])}
            save_checkpoint({**weights, **{k: v.astype(np.float32) for k, v in head.items()}},
                            str(directory / "model.ckpt-1"), config)
        else:
            model = make(config)
            model.build()
            for name, variable in model.checkpoint_variables().items():
                if name in weights:
                    variable.assign(weights[name])
            save_checkpoint(model, str(directory / "model.ckpt-1"), config)
        run_directory.write_index(str(directory), 1)
        if kind in ("classifier", "ner"):
            run_directory.write_labels(str(directory), SENTIMENT if kind == "classifier" else TAGS)
        directories[kind] = str(directory)
    return directories


def safetensors_shapes(directory):
    from safetensors import safe_open

    with safe_open(os.path.join(directory, "model.safetensors"), framework="np") as f:
        return {key: list(f.get_slice(key).get_shape()) for key in f.keys()}


def all_arrays(path):
    source = open_checkpoint(path)
    return {name: source.read(name) for name in source.shapes}


# ------------------------------------------------------------------------------------------------- names

def test_hf_names_are_inverse_of_canonical_names(tiny_config):
    model = BertPretrainer(tiny_config)
    model.build()
    names = list(model.checkpoint_variables()) + ["output_weights", "output_bias", "cls/squad/output_weights"]
    for name in names:
        for prefix in ("", "bert."):
            hf_name, transpose = huggingface.canonical_to_hf(name, prefix)
            assert huggingface.hf_to_canonical(hf_name) == (name, transpose), (name, hf_name)
    assert huggingface.canonical_to_hf("bert/encoder/layer_11/attention/self/query/kernel") == (
        "bert.encoder.layer.11.attention.self.query.weight", True)


@pytest.mark.subprocess
@pytest.mark.parametrize("kind, hf_class, model_type", first_in_make_test([
    ("encoder", "BertModel", None), ("classifier", "BertForSequenceClassification", "classifier"),
    ("pretrainer", "BertForPreTraining", None), ("mlm", "BertForMaskedLM", None),
    ("ner", "BertForTokenClassification", "ner"), ("squad", "BertForQuestionAnswering", None),
    ("multiple_choice", "BertForMultipleChoice", "multiple_choice")], 2))
def test_huggingface_directories_have_transformers_names_and_shapes(finetuned, minilm, tmp_path, kind, hf_class,
                                                                    model_type):
    config, vocab, _ = minilm
    expected = json.load(open(FIXTURE, encoding="utf-8"))["classes"][hf_class]
    out = str(tmp_path / "hf")
    flags = [f"--init_checkpoint={finetuned[kind]}", f"--output_dir={out}", "--output_format=huggingface",
             f"--vocab_file={vocab}"] + ([f"--model_type={model_type}"] if model_type else [])
    result = convert_script(*flags)
    assert result.returncode == 0, result.stderr[-3000:]
    shapes = safetensors_shapes(out)
    labels = {"classifier": len(SENTIMENT), "ner": len(TAGS)}.get(kind)
    want = {name: ([labels] + shape[1:] if labels and name.startswith("classifier.") else shape)
            for name, shape in expected["tensors"].items()}
    assert shapes == want
    written = json.load(open(os.path.join(out, "config.json"), encoding="utf-8"))
    assert written["architectures"] == [hf_class] and written["model_type"] == "bert"
    assert written["hidden_act"] == "gelu" and written["layer_norm_eps"] == config.layer_norm_eps
    if labels:
        names = SENTIMENT if kind == "classifier" else TAGS
        assert written["id2label"] == {str(i): name for i, name in enumerate(names)}
        assert written["label2id"] == {name: i for i, name in enumerate(names)} and written["num_labels"] == labels
    tokenizer = json.load(open(os.path.join(out, "tokenizer_config.json"), encoding="utf-8"))
    assert tokenizer["do_lower_case"] is True and tokenizer["model_max_length"] == 512
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors", "special_tokens_map.json",
                                       "tokenizer_config.json", "vocab.txt"]
    assert BertConfig.from_json_file(out) == config  # and bert_tf reads the directory back


# ------------------------------------------------------------------------------------------- round trips

@pytest.mark.slow
@pytest.mark.parametrize("kind, output_format", [
    ("encoder", "huggingface"), ("pretrainer", "huggingface"), ("mlm", "huggingface"), ("classifier", "huggingface"),
    ("ner", "huggingface"), ("squad", "huggingface"), ("multiple_choice", "huggingface"),
    ("encoder", "keras_hub"), ("classifier", "keras_hub")])
def test_round_trips_are_bit_identical(finetuned, minilm, tmp_path, kind, output_format):
    config, vocab, _ = minilm
    model_type = {"mlm": "pretrainer"}.get(kind, kind)
    there, back = str(tmp_path / "there"), str(tmp_path / "back")
    convert(finetuned[kind], there, output_format, config, model_type, vocab)
    source = open_checkpoint(there)
    convert(there, back, "bert_tf", BertConfig.from_dict(source.config), None, vocab)  # the type: from `there`
    original, returned = all_arrays(finetuned[kind]), all_arrays(back)
    pooler_kept = kind not in ("ner", "squad", "mlm")  # the HF classes without a pooler
    expected = {n for n in original if pooler_kept or not n.startswith(POOLER_SCOPE)}
    assert set(returned) == expected
    for name in expected:
        assert returned[name].dtype == original[name].dtype and np.array_equal(returned[name], original[name]), name
    if kind in ("classifier", "ner"):
        assert run_directory.read_labels(back) == (SENTIMENT if kind == "classifier" else TAGS)


@pytest.mark.slow
def test_huggingface_directory_round_trip_keeps_names_shapes_and_values(minilm_dir, minilm, tmp_path):
    config, vocab, _ = minilm
    convert(minilm_dir, str(tmp_path / "bert_tf"), "bert_tf", config, vocab_file=vocab)
    convert(str(tmp_path / "bert_tf"), str(tmp_path / "hf"), "huggingface", config, vocab_file=vocab)
    from safetensors.numpy import load_file

    original = load_file(os.path.join(minilm_dir, "model.safetensors"))
    returned = load_file(str(tmp_path / "hf" / "model.safetensors"))
    # transformers 5 neither writes nor reads the position-ids buffer that MiniLM's (4.8) file carries.
    assert set(original) - set(returned) == {"embeddings.position_ids"} and set(returned) <= set(original)
    for name, value in returned.items():
        assert value.shape == original[name].shape and np.array_equal(value, original[name]), name


# ---------------------------------------------------------------------------------------------- KerasHub

@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_keras_hub_presets_load_in_keras_hub_and_back(finetuned, minilm, tmp_path):
    config, vocab, encoder = minilm
    preset = str(tmp_path / "preset")
    convert(finetuned["classifier"], preset, "keras_hub", config, "classifier", vocab)
    assert sorted(os.listdir(preset)) == ["assets", "config.json", "labels.txt", "metadata.json",
                                          "model.weights.h5", "preprocessor.json", "task.json", "task.weights.h5",
                                          "tokenizer.json"]
    features = inputs()
    np.savez(tmp_path / "in.npz", token_ids=features["input_ids"], segment_ids=features["segment_ids"],
             padding_mask=features["input_mask"])
    run_keras_hub("outputs", preset, tmp_path / "in.npz", tmp_path / "out.npz")
    theirs = np.load(tmp_path / "out.npz")
    real = features["input_mask"].astype(bool)
    classifier = BertClassifier(config, len(SENTIMENT))
    load_checkpoint(classifier, finetuned["classifier"])
    exact = encoder(features)
    sequence_gap = np.abs(np.asarray(exact["sequence_output"]) - theirs["sequence_output"])[real].max()
    pooled_gap = np.abs(np.asarray(exact["pooled_output"]) - theirs["pooled_output"]).max()
    assert 1e-4 < sequence_gap < GELU_SEQUENCE_TOLERANCE and pooled_gap < GELU_POOLED_TOLERANCE  # the GELU forms
    # Read back, the preset gets KerasHub's tanh GELU and gives KerasHub's outputs.
    imported = BertConfig.from_dict(open_checkpoint(preset).config)
    assert imported.hidden_act == "gelu_tanh" and BertConfig.from_json_file(preset) == imported
    tanh_classifier = BertClassifier(imported, len(SENTIMENT))
    load_checkpoint(tanh_classifier, preset)
    np.testing.assert_allclose(tanh_classifier.encoder(features)["sequence_output"].numpy()[real],
                               theirs["sequence_output"][real], atol=1e-5)
    np.testing.assert_allclose(tanh_classifier.encoder(features)["pooled_output"], theirs["pooled_output"], atol=1e-5)
    np.testing.assert_allclose(tanh_classifier(features), theirs["logits"], atol=1e-5)
    assert np.abs(np.asarray(classifier(features)) - theirs["logits"]).max() < GELU_POOLED_TOLERANCE


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_a_keras_hub_made_preset_fine_tunes_and_exports(minilm_dir, tmp_path):
    preset = tmp_path / "preset"
    run_keras_hub("make", minilm_dir, preset)
    data = tmp_path / "data"
    data.mkdir()
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_finetuning_data.py"), "sentiment", str(data)],
                   check=True, capture_output=True, cwd=ROOT)
    for name, count in (("train.tsv", 49), ("dev.tsv", 17)):  # a header and the first real snippets
        lines = (data / name).read_text(encoding="utf-8").splitlines(keepends=True)[:count]
        (data / name).write_text("".join(lines), encoding="utf-8")
    vocab = preset / keras_hub.VOCABULARY_FILE
    out = tmp_path / "sentiment_output"
    result = subprocess.run([sys.executable, os.path.join(ROOT, "run_classifier.py"), "--task_name=sst-2",
                             f"--data_dir={data}", f"--output_dir={out}", f"--bert_config_file={preset}",
                             f"--vocab_file={vocab}", f"--init_checkpoint={preset}", "--do_train", "--do_eval",
                             "--max_seq_length=32", "--train_batch_size=8", "--num_train_epochs=1"],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Loaded keras_hub checkpoint" in result.stderr
    export = subprocess.run([sys.executable, os.path.join(ROOT, "export_model.py"), "--model_type=classifier",
                             f"--init_checkpoint={out}", f"--vocab_file={vocab}", "--max_seq_length=32",
                             f"--export_dir={tmp_path / 'export'}"], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert export.returncode == 0, export.stderr[-3000:]
    assert os.path.isfile(tmp_path / "export" / "1" / "saved_model.pb")
    # The fine-tuned classifier goes back to KerasHub as a BertTextClassifier.
    hub = tmp_path / "hub"
    result = convert_script(f"--init_checkpoint={out}", f"--output_dir={hub}", "--output_format=keras_hub",
                            "--model_type=classifier", f"--vocab_file={vocab}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.load(open(hub / "task.json"))["config"]["num_classes"] == 2


# ---------------------------------------------------------------------------------------------- bad input

@pytest.mark.slow
@pytest.mark.subprocess
def test_bad_input_is_one_clear_error_and_writes_nothing(finetuned, minilm, tmp_path):
    config, vocab, _ = minilm
    preset = tmp_path / "preset"
    convert(finetuned["encoder"], str(preset), "keras_hub", config, vocab_file=vocab)
    out = tmp_path / "out"

    def refused(path, match, output_format="bert_tf", model_type=None, error=ValueError):
        with pytest.raises(error, match=match):
            convert(str(path), str(out), output_format, config, model_type, vocab)
        assert not out.exists() and not [n for n in os.listdir(tmp_path) if n.startswith("out.")]

    other = tmp_path / "roberta"
    other.mkdir()
    values = json.load(open(preset / "config.json"))
    (other / "config.json").write_text(json.dumps({**values, "registered_name": "keras_hub>RobertaBackbone",
                                                   "class_name": "RobertaBackbone"}))
    with pytest.raises(ValueError, match="roberta/config.json: a KerasHub RobertaBackbone preset; expected a Bert"):
        open_checkpoint(str(other))
    (other / "model.weights.h5").write_bytes((preset / "model.weights.h5").read_bytes())
    refused(other, "a KerasHub RobertaBackbone preset")
    missing = tmp_path / "missing"
    missing.mkdir()
    (missing / "config.json").write_text(json.dumps(values))
    refused(missing, r"missing/model.weights.h5: missing from the KerasHub preset")
    truncated = tmp_path / "truncated"
    truncated.mkdir()
    (truncated / "config.json").write_text(json.dumps(values))
    weights = (preset / "model.weights.h5").read_bytes()
    (truncated / "model.weights.h5").write_bytes(weights[: len(weights) // 2])
    with pytest.raises(ValueError, match="truncated/model.weights.h5: .*(truncated|damaged)"):
        convert(str(truncated), str(out), "bert_tf", config, None, vocab)
    assert not out.exists()
    refused(finetuned["squad"], "KerasHub has no squad task", "keras_hub")
    refused(finetuned["pretrainer"], "KerasHub has no pretrainer task", "keras_hub")
    refused(finetuned["classifier"], r"pass model_type=classifier\|ner\|multiple_choice", "huggingface")
    refused(finetuned["encoder"], "no cls/squad/.*not a squad model", "huggingface", "squad")
    exact_eps = BertConfig(**{**config.to_dict(), "layer_norm_eps": 1e-5})
    with pytest.raises(ValueError, match="layer_norm_eps=1e-05: KerasHub's BertBackbone fixes it"):
        convert(finetuned["encoder"], str(out), "keras_hub", exact_eps, None, vocab)
    assert not out.exists()
    out.mkdir()
    (out / "keep.txt").write_text("user data")
    result = convert_script(f"--init_checkpoint={finetuned['encoder']}", f"--output_dir={out}",
                            "--output_format=huggingface", f"--vocab_file={vocab}")
    assert result.returncode == 1 and f"{out} exists and is not empty" in result.stderr.strip().splitlines()[-1]
    assert os.listdir(out) == ["keep.txt"]
