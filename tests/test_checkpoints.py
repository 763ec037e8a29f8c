import ast
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertEncoder
from bert_tf.checkpoints import load_checkpoint, open_checkpoint, save_checkpoint
from bert_tf.conversion import convert
from bert_tf.formats.huggingface import hf_to_canonical
from tests.helpers.tiers import first_in_make_test

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IDS = {"input_ids": np.array([[101, 7592, 2088, 1010, 2129, 2024, 2017, 102, 0, 0]], np.int32),
       "input_mask": np.array([[1] * 8 + [0] * 2], np.int32)}


@pytest.fixture(scope="module")
def minilm_config(minilm_dir):
    return BertConfig.from_json_file(minilm_dir)


@pytest.fixture(scope="module")
def hf_encoder(minilm_dir, minilm_config):
    encoder = BertEncoder(minilm_config)
    load_checkpoint(encoder, minilm_dir)
    return encoder


def output(encoder):
    return encoder(IDS)["sequence_output"].numpy()


def test_huggingface_report(minilm_dir, minilm_config):
    report = load_checkpoint(BertEncoder(minilm_config), f"{minilm_dir}/model.safetensors")
    assert report.format == "huggingface"
    assert len(report.mapped) == 5 + 16 * 6 + 2 and report.missing == []
    assert report.ignored == {"embeddings.position_ids": "buffer (position ids), not a weight"}
    assert "103 mapped, 1 ignored, 0 missing" in str(report)


def test_a_bfloat16_huggingface_directory_loads_its_weights_exactly(tmp_path, minilm_dir, minilm_config, hf_encoder):
    """Many HF models ship bfloat16 safetensors, which safetensors' NumPy reader refuses: they load as float32
    holding exactly the bfloat16 values (every weight: the float32 model's weights rounded to bfloat16)."""
    import shutil

    import ml_dtypes
    from safetensors.numpy import load_file, save_file

    weights = load_file(f"{minilm_dir}/model.safetensors")
    rounded = {k: v.astype(ml_dtypes.bfloat16) if v.dtype == np.float32 else v for k, v in weights.items()}
    save_file(rounded, str(tmp_path / "model.safetensors"))
    shutil.copy(f"{minilm_dir}/config.json", tmp_path)
    source = open_checkpoint(str(tmp_path))
    reference = open_checkpoint(minilm_dir)
    assert sorted(source.shapes) == sorted(reference.shapes)
    for name in reference.shapes:
        value = source.read(name)
        assert value.dtype == np.float32, name
        np.testing.assert_array_equal(value, reference.read(name).astype(ml_dtypes.bfloat16).astype(np.float32),
                                      err_msg=name)
    encoder = BertEncoder(minilm_config)
    load_checkpoint(encoder, str(tmp_path))
    assert np.abs(output(encoder) - output(hf_encoder)).max() < 0.1  # the same model, its weights rounded


def test_google_checkpoint_ignores_optimizer_state(google_minilm, minilm_config, hf_encoder):
    encoder = BertEncoder(minilm_config)
    report = load_checkpoint(encoder, f"{google_minilm}/bert_model.ckpt")
    assert report.format == "google" and len(report.mapped) == 103
    assert sorted(set(report.ignored.values())) == ["optimizer state"]
    assert len(report.ignored) == 2 * 103 + 1 and "global_step" in report.ignored
    np.testing.assert_array_equal(output(encoder), output(hf_encoder))
    # the directory works as well as the prefix
    assert load_checkpoint(BertEncoder(minilm_config), google_minilm).format == "google"


def test_native_round_trip_keeps_pretraining_heads(tmp_path, tiny_config):
    encoder = BertEncoder(tiny_config)
    heads = {"cls/predictions/output_bias": np.arange(99, dtype=np.float32),
             "cls/seq_relationship/output_weights": np.ones((2, 32), np.float32)}
    weights = {n: v.numpy() for n, v in encoder.checkpoint_variables().items()} | heads
    save_checkpoint(weights, str(tmp_path / "model.ckpt"), tiny_config)
    source = open_checkpoint(str(tmp_path))
    assert source.format == "native" and BertConfig.from_dict(source.config) == tiny_config
    np.testing.assert_array_equal(source.read("cls/predictions/output_bias"), heads["cls/predictions/output_bias"])
    restored = BertEncoder(tiny_config)
    report = load_checkpoint(restored, str(tmp_path / "model.ckpt"))
    assert report.ignored["cls/seq_relationship/output_weights"] == "not part of this model"
    for name, variable in restored.checkpoint_variables().items():
        np.testing.assert_array_equal(variable.numpy(), weights[name])
    assert sorted(os.listdir(tmp_path)) == ["model.ckpt.data-00000-of-00001", "model.ckpt.index"]


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_convert_script_from_huggingface_and_google(tmp_path, minilm_dir, google_minilm, minilm_config,
                                                    hf_encoder):
    for name, source in (("from_hf", minilm_dir), ("from_google", f"{google_minilm}/bert_model.ckpt")):
        out = tmp_path / name
        result = subprocess.run([sys.executable, os.path.join(ROOT, "convert_checkpoint.py"),
                                 f"--init_checkpoint={source}", f"--output_dir={out}"],
                                capture_output=True, text=True, cwd=ROOT)
        assert result.returncode == 0, result.stderr
        assert sorted(os.listdir(out)) == ["bert_config.json", "bert_model.ckpt.data-00000-of-00001",
                                           "bert_model.ckpt.index", "vocab.txt"]
        assert BertConfig.from_json_file(out / "bert_config.json") == minilm_config
        encoder = BertEncoder(minilm_config)
        assert load_checkpoint(encoder, str(out / "bert_model.ckpt")).format == "native"
        np.testing.assert_array_equal(output(encoder), output(hf_encoder))
        names = dict(tf.train.list_variables(str(out / "bert_model.ckpt")))
        assert list(names["bert/encoder/layer_5/intermediate/dense/kernel"]) == [384, 1536]


def test_hf_names_map_to_google_names():
    assert hf_to_canonical("encoder.layer.11.attention.self.query.weight") == (
        "bert/encoder/layer_11/attention/self/query/kernel", True)
    assert hf_to_canonical("bert.encoder.layer.0.output.LayerNorm.weight") == (
        "bert/encoder/layer_0/output/LayerNorm/gamma", False)
    assert hf_to_canonical("embeddings.LayerNorm.beta") == ("bert/embeddings/LayerNorm/beta", False)
    assert hf_to_canonical("bert.embeddings.word_embeddings.weight") == ("bert/embeddings/word_embeddings", False)
    assert hf_to_canonical("cls.predictions.transform.dense.weight") == (
        "cls/predictions/transform/dense/kernel", True)
    assert hf_to_canonical("cls.predictions.transform.LayerNorm.bias") == (
        "cls/predictions/transform/LayerNorm/beta", False)
    assert hf_to_canonical("cls.predictions.bias") == ("cls/predictions/output_bias", False)
    assert hf_to_canonical("cls.seq_relationship.weight") == ("cls/seq_relationship/output_weights", False)
    assert hf_to_canonical("cls.predictions.decoder.weight")[0] is None
    assert hf_to_canonical("classifier.weight") == ("output_weights", False)
    assert hf_to_canonical("qa_outputs.bias") == ("cls/squad/output_bias", False)
    assert hf_to_canonical("dropout.weight") == ("dropout.weight", False)  # not BERT's: keeps its name


# ------------------------------------------------------------------------------------------- bad input

def test_pickles_are_refused_without_being_read(tmp_path, tiny_config):
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04not really a pickle")
    for path in (tmp_path / "pytorch_model.bin", tmp_path):
        with pytest.raises(ValueError, match="pickled PyTorch weights are refused .* model.safetensors"):
            load_checkpoint(BertEncoder(tiny_config), str(path))


def test_checkpoint_for_a_different_size(minilm_dir, tiny_config, minilm_config):
    with pytest.raises(ValueError) as error:
        load_checkpoint(BertEncoder(tiny_config), minilm_dir)
    message = str(error.value)
    assert "does not fit this model" in message and len(message) < 800  # the first 3 of each kind, counted
    assert "39 shape mismatch(es): bert/embeddings/LayerNorm/beta: checkpoint [384], model [32]; " in message
    fewer_layers = BertConfig(**{**minilm_config.to_dict(), "num_hidden_layers": 4})
    with pytest.raises(ValueError, match=r"checkpoint tensor\(s\) with no model variable: "
                                         r"bert/encoder/layer_4/attention/output/LayerNorm/beta \[384\]"):
        load_checkpoint(BertEncoder(fewer_layers), minilm_dir)
    more_layers = BertConfig(**{**minilm_config.to_dict(), "num_hidden_layers": 7})
    with pytest.raises(ValueError, match=r"model variable\(s\) missing from the checkpoint: bert/encoder/layer_6/"):
        load_checkpoint(BertEncoder(more_layers), minilm_dir)


def test_missing_corrupt_and_foreign_checkpoints(tmp_path, tiny_config):
    encoder = BertEncoder(tiny_config)
    with pytest.raises(ValueError, match="nope.ckpt: checkpoint not found"):
        load_checkpoint(encoder, str(tmp_path / "nope.ckpt"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a BERT checkpoint"):
        load_checkpoint(encoder, str(tmp_path / "empty"))
    (tmp_path / "model.safetensors").write_bytes(b"garbage, not a safetensors header")
    with pytest.raises(ValueError, match="model.safetensors: not a valid safetensors file"):
        load_checkpoint(encoder, str(tmp_path / "model.safetensors"))
    object_based = tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path / "obj" / "ckpt"))
    with pytest.raises(ValueError, match="TF2 object-based checkpoint"):
        load_checkpoint(encoder, object_based)
    (tmp_path / "broken.ckpt.index").write_bytes(b"not an index")
    with pytest.raises(ValueError, match="broken.ckpt: cannot read TensorFlow checkpoint"):
        load_checkpoint(encoder, str(tmp_path / "broken.ckpt"))


def test_damaged_weights_are_an_error_naming_the_checkpoint(tmp_path, tiny_config):
    """A flipped byte (checksum) or a truncated data file: a ValueError naming the prefix, not TF's error."""
    encoder = BertEncoder(tiny_config)
    encoder.build()
    prefix = str(tmp_path / "model.ckpt-1")
    save_checkpoint(encoder, prefix)
    data = prefix + ".data-00000-of-00001"
    content = bytearray(open(data, "rb").read())
    content[len(content) // 2] ^= 0xFF
    open(data, "wb").write(bytes(content))
    with pytest.raises(ValueError, match=r"model\.ckpt-1: cannot read .*Checksum does not match.*damaged or truncated"):
        load_checkpoint(BertEncoder(tiny_config), prefix)
    os.truncate(data, len(content) // 3)
    with pytest.raises(ValueError, match=r"model\.ckpt-1: cannot read .*damaged or truncated"):
        load_checkpoint(BertEncoder(tiny_config), prefix)


def test_failed_conversion_leaves_no_output(tmp_path, minilm_dir, tiny_config):
    with pytest.raises(ValueError, match="does not fit the config"):
        convert(minilm_dir, str(tmp_path / "out"), "bert_tf", tiny_config)
    assert os.listdir(tmp_path) == []


@pytest.mark.subprocess
@pytest.mark.parametrize("output_format", ["bert_tf", "keras_hub"])
def test_convert_script_refuses_a_vocab_of_another_size(tmp_path, minilm_dir, output_format):
    """MiniLM (vocab_size=30522) with a vocab.txt of 35,522 tokens: one error line naming the file and both sizes,
    before anything is written (a bert_tf checkpoint would copy that vocab.txt beside the weights)."""
    vocab = tmp_path / "vocab.txt"
    with open(os.path.join(minilm_dir, "vocab.txt"), encoding="utf-8") as f:
        vocab.write_text(f.read() + "".join(f"[extra{i}]\n" for i in range(5000)), encoding="utf-8")
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, os.path.join(ROOT, "convert_checkpoint.py"),
                             f"--init_checkpoint={minilm_dir}", f"--output_dir={out}",
                             f"--output_format={output_format}", f"--vocab_file={vocab}"],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert result.returncode == 1 and errors == [
        f"Error: {vocab} has 35522 tokens but the config says vocab_size=30522; use the vocab.txt that belongs to "
        "this checkpoint"], result.stderr[-3000:]
    assert sorted(os.listdir(tmp_path)) == ["vocab.txt"]


COUNTING_RUNNER = """
import sys
from absl import flags
from bert_tf import checkpoints

opened = []
open_checkpoint = checkpoints.open_checkpoint

def counting(path):
    opened.append(str(path))
    return open_checkpoint(path)

checkpoints.open_checkpoint = counting
module = __import__("bert_tf.cli." + sys.argv[1], fromlist=["main"])
flags.FLAGS([sys.argv[1]] + sys.argv[2:])
module.main([])
print("OPENED", opened)
"""


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("command", first_in_make_test(["convert_checkpoint", "export_model"], 1))
def test_a_command_opens_its_checkpoint_once(command, minilm_dir, tmp_path):
    """The config, the checks (shapes, vocab), the labels and the weights all come from one opened checkpoint
    (export_model.py used to open it four times, convert_checkpoint.py three)."""
    out = {"convert_checkpoint": "--output_dir", "export_model": "--export_dir"}[command]
    args = [f"--init_checkpoint={minilm_dir}", f"{out}={tmp_path / 'out'}"]
    if command == "export_model":
        args += [f"--vocab_file={minilm_dir}/vocab.txt", "--max_seq_length=16"]
    done = subprocess.run([sys.executable, "-c", COUNTING_RUNNER, command, *args], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    opened = ast.literal_eval(done.stdout.strip().splitlines()[-1].removeprefix("OPENED "))
    assert opened.count(str(minilm_dir)) == 1
    # Any other is what the command wrote (convert_checkpoint checks that an encoder loads from its output).
    assert all(path.startswith(str(tmp_path / "out")) for path in opened if path != str(minilm_dir))


def _bert_tf_imports(path):
    """The bert_tf modules that the Python file `path` imports (at its top or inside functions)."""
    names = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bert_tf"):
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.startswith("bert_tf"))
    return names


def test_the_codecs_are_one_layer_below_loading_and_conversion():
    """formats/ (the codecs) import neither checkpoints.py nor conversion.py nor a model nor run_directory.py
    (which paths mean which files is checkpoint_paths.py's, below both); config.py imports no format module
    (docs/DESIGN.md section 3.4)."""
    formats = os.path.join(ROOT, "bert_tf", "formats")
    above = ("bert_tf.checkpoints", "bert_tf.conversion", "bert_tf.modeling.encoder", "bert_tf.modeling.tasks",
             "bert_tf.run_directory")
    for name in sorted(os.listdir(formats)):
        if name.endswith(".py"):
            wrong = sorted(n for n in _bert_tf_imports(os.path.join(formats, name)) if n.startswith(above))
            assert not wrong, f"bert_tf/formats/{name} imports {wrong}"
    config_imports = _bert_tf_imports(os.path.join(ROOT, "bert_tf", "config.py"))
    assert not [n for n in config_imports if "formats" in n], config_imports
    assert _bert_tf_imports(os.path.join(ROOT, "bert_tf", "checkpoint_paths.py")) == {"bert_tf.atomic_io"}
