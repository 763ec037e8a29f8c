"""bert_tf.export.task_adapters and export_model.py for the task models (the `.keras` round trips of every
model class are test_layer_harness').

Tiny BertClassifier (classification and regression), BertTokenClassifier and BertSpanLabeler models are
saved as a fine-tuning run leaves them (output_dir/model.ckpt-N with the config embedded, and the
`checkpoint` index file), exported by export_model.py from those directories alone, then loaded and called
by the fresh tensorflow + tensorflow-text process of tests/helpers/export_client.py; every signature's
outputs equal the in-process model's to 1e-5.
"""

import os

import keras
import numpy as np
import pytest

from bert_tf import load_checkpoint, run_directory, save_checkpoint
from bert_tf.feature_schema import INPUT_NAMES
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.feature_tagger import BertFeatureTagger
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from bert_tf.tokenization import FullTokenizer
from tests.helpers.configs import tiny_config
from tests.helpers.exports import (
    SEQ_LENGTH,
    assert_close,
    assert_exports_fail,
    assert_zero_rows,
    client_outputs,
    export_script,
    listed_signatures,
    python_pack,
    run_client,
    run_model,
    serialized_example,
    serialized_features,
    shared_dir,
    strings,
)
from tools.pinned_venv import build_once

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

WORDS = "the cat dog sat on mat ran fast who where is was in park big red paris john mary lives works at".split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *"abcdefghijklmnopqrstuvwxyz.,?!",
         *("##" + c for c in "abcdefghijklmnopqrstuvwxyz")]
CONFIG = tiny_config(vocab_size=len(VOCAB), max_position_embeddings=SEQ_LENGTH, type_vocab_size=2)
CLASSES = ("contradiction", "entailment", "neutral")
TAGS = ("O", "B-LOC", "B-PER", "I-LOC", "I-PER")
MAX_ANSWER_LENGTH = 4
TASK_FLAGS = {"classifier": ["--model_type=classifier", f"--label_list={','.join(CLASSES)}"],
              "regression": ["--model_type=classifier"],
              "ner": ["--model_type=ner"],  # labels from the labels.txt beside the checkpoint
              "ner_bilstm": ["--model_type=ner"],  # its head (task_head=bilstm, its sizes) from the checkpoint
              "ner_features": ["--model_type=ner"],  # feature-based: BertFeatureTagger, from the checkpoint too
              "squad": ["--model_type=squad", f"--max_answer_length={MAX_ANSWER_LENGTH}"]}
LONG = " ".join(["the big red dog ran fast in the park"] * 12)  # truncated at SEQ_LENGTH
SENTENCES = ["the cat sat on the mat", "John lives in Paris!", "Mary works at the big park", "", "東京 😀 café",
             LONG, "where is the red dog?", "THE CAT"]
PAIRS = [(a, b) for a, b in zip(SENTENCES, SENTENCES[::-1])]
EXAMPLE_PAIRS = [(a, (None, b, "")[i % 3]) for i, (a, b) in enumerate(PAIRS)]
QUESTIONS = [("who lives in paris?", "john lives in paris. mary works at the park."),
             ("where is the dog", "the dog sat on the mat in the park"), ("", "big red"), ("what", ""),
             ("where", LONG), (LONG, "the cat"), ("Café?", "Mary's CAT ran fast")]
# The signatures of each exported task model after serving_default: {name: ((text input names), request pairs)}.
TEXT_SIGNATURES = {"serve_text": (("text_a",), [(a, None) for a in SENTENCES]),
                   "serve_text_pair": (("text_a", "text_b"), PAIRS), "serve_examples": (("inputs",), EXAMPLE_PAIRS)}
# Exported besides TASK_FLAGS' models, from the classifier's fine-tuning output dir: its encoder as an embedder.
EMBEDDER_FLAGS = ["--model_type=embedder", "--normalize"]
# Every raw-text signature of the exports, (task, signature, input names): each gets a request of zero rows.
RAW_TEXT_SIGNATURES = [
    *((task, signature, names) for task in ("classifier", "regression", "ner", "ner_bilstm", "ner_features", "embedder")
      for signature, (names, _) in TEXT_SIGNATURES.items()),
    ("classifier", "classify", ("inputs",)), ("regression", "regress", ("inputs",)),
    ("squad", "serve_text", ("question", "context")), ("squad", "serve_examples", ("inputs",))]


# ------------------------------------------------------------------------------------- shared resources

def make_model(task):
    if task == "squad":
        return BertSpanLabeler(CONFIG)
    if task == "ner":
        return BertTokenClassifier(CONFIG, len(TAGS))
    if task == "ner_bilstm":
        return BertTokenClassifier(CONFIG, len(TAGS), task_head="bilstm", bilstm_size=8, bilstm_layers=2)
    if task == "ner_features":
        return BertFeatureTagger(CONFIG, len(TAGS), "weighted_sum_all", bilstm_size=8, bilstm_layers=1)
    return BertClassifier(CONFIG, len(CLASSES) if task == "classifier" else 1)


def save_finetuned(model, output_dir, config):
    """What a fine-tuning run leaves in its output_dir: model.ckpt-7 (config and head options embedded) and
    the index file."""
    save_checkpoint(model, os.path.join(output_dir, "model.ckpt-7"), config, model.head_options())
    with open(os.path.join(output_dir, "checkpoint"), "w", encoding="utf-8") as f:
        f.write('model_checkpoint_path: "model.ckpt-7"\n')


@pytest.fixture(scope="session")
def finetuned(tmp_path_factory):
    """Directory with vocab.txt, a fine-tuning output dir per task (`classifier/`, `regression/`, `ner/`,
    `squad/`; random weights), `squad_no_config/` (no embedded config) and `export/<task>/1`, written by
    export_model.py from the output dir alone."""
    def build(directory):
        with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(VOCAB) + "\n")
        keras.utils.set_random_seed(7)
        for task in TASK_FLAGS:
            save_finetuned(make_model(task), os.path.join(directory, task), CONFIG)
        save_finetuned(make_model("squad"), os.path.join(directory, "squad_no_config"), None)
        for task in ("ner", "ner_bilstm", "ner_features"):
            run_directory.write_labels(os.path.join(directory, task), TAGS)
        scripts = [export_script(*flags, f"--init_checkpoint={directory}/{task}", f"--max_seq_length={SEQ_LENGTH}",
                                 f"--vocab_file={directory}/vocab.txt", f"--export_dir={directory}/export/{task}")
                   for task, flags in TASK_FLAGS.items()]
        scripts.append(export_script(*EMBEDDER_FLAGS, f"--init_checkpoint={directory}/classifier",
                                     f"--max_seq_length={SEQ_LENGTH}", f"--vocab_file={directory}/vocab.txt",
                                     f"--export_dir={directory}/export/embedder"))
        for script in scripts:
            output = script.communicate(timeout=600)[0]
            assert script.returncode == 0, output[-3000:]

    return build_once(shared_dir(tmp_path_factory, "task_exports"), build)


@pytest.fixture(scope="session")
def tokenizer(finetuned):
    return FullTokenizer(os.path.join(finetuned, "vocab.txt"), do_lower_case=True)


@pytest.fixture(scope="session")
def models(finetuned):
    """{task: the in-process model with the fine-tuned weights}."""
    loaded = {}
    for task in TASK_FLAGS:
        loaded[task] = make_model(task)
        load_checkpoint(loaded[task], os.path.join(finetuned, task))
    return loaded


def as_ints(ids):
    return {name: {"int32": value.tolist()} for name, value in ids.items()}


def task_requests(finetuned, tokenizer):
    """Every request of the fresh-process run, named `<task>_<signature>`."""
    requests = []
    for task in ("classifier", "regression", "ner", "ner_bilstm", "ner_features"):
        model = f"{finetuned}/export/{task}/1"
        requests.append({"name": f"{task}_serving_default", "model": model, "signature": "serving_default",
                         "inputs": as_ints(python_pack(tokenizer, PAIRS))})
        for signature, (names, pairs) in TEXT_SIGNATURES.items():
            requests.append(text_request(f"{task}_{signature}", model, signature, names, pairs))
    examples = {"inputs": strings([serialized_example(a, b) for a, b in EXAMPLE_PAIRS])}
    requests += [{"name": "classifier_classify", "model": f"{finetuned}/export/classifier/1",
                  "signature": "classify", "inputs": examples},
                 {"name": "regression_regress", "model": f"{finetuned}/export/regression/1", "signature": "regress",
                  "inputs": examples}]
    squad = f"{finetuned}/export/squad/1"
    questions, contexts = zip(*QUESTIONS)
    requests += [
        {"name": "squad_serving_default", "model": squad, "signature": "serving_default",
         "inputs": as_ints(python_pack(tokenizer, QUESTIONS))},
        {"name": "squad_serve_text", "model": squad, "signature": "serve_text",
         "inputs": {"question": strings(questions), "context": strings(contexts)}},
        {"name": "squad_serve_examples", "model": squad, "signature": "serve_examples", "inputs": {"inputs": strings(
            [serialized_features(question=[q], context=[c]) for q, c in QUESTIONS])}},
        {"name": "squad_no_context", "model": squad, "signature": "serve_examples",
         "inputs": {"inputs": strings([serialized_features(question=["who"])])}},
        {"name": "squad_bad_utf8", "model": squad, "signature": "serve_text",
         "inputs": {"question": strings(["who"]), "context": strings([b"caf\xe9"])}},
    ]
    return requests + zero_row_requests(finetuned)


def zero_row_requests(finetuned):
    """For each of RAW_TEXT_SIGNATURES, a request of zero rows (`<task>_<signature>_zero`), and for the
    embedder's, whose rows no other request has, the request of TEXT_SIGNATURES' rows (`embedder_<signature>`)."""
    requests = []
    for task, signature, names in RAW_TEXT_SIGNATURES:
        model = f"{finetuned}/export/{task}/1"
        requests.append(text_request(f"{task}_{signature}_zero", model, signature, names, []))
        if task == "embedder":
            requests.append(text_request(f"{task}_{signature}", model, signature, names, TEXT_SIGNATURES[signature][1]))
    return requests


def text_request(name, model, signature, names, pairs):
    """The request of (text_a, text_b) `pairs` to a raw-text signature of `model` whose inputs are `names`."""
    columns = ([[serialized_example(a, b) for a, b in pairs]] if names == ("inputs",)
               else [[pair[i] for pair in pairs] for i in range(len(names))])
    return {"name": name, "model": model, "signature": signature,
            "inputs": {input_name: strings(values) for input_name, values in zip(names, columns)}}


@pytest.fixture(scope="session")
def task_client(tmp_path_factory, finetuned, client_python, tokenizer):
    return run_client(tmp_path_factory, "task_client", client_python, lambda: task_requests(finetuned, tokenizer))


# ----------------------------------------------------------------------------------------------- checks

def softmax(logits):
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


def check_classifier(got, logits, what):
    assert_close(got["logits"], logits, f"{what} logits")
    assert_close(got["probabilities"], softmax(got["logits"]), f"{what} probabilities")
    np.testing.assert_array_equal(got["label_id"], got["logits"].argmax(-1), err_msg=what)
    assert got["label"].tolist() == [CLASSES[i].encode() for i in got["label_id"]], what


def check_regression(got, logits, what):
    assert_close(got["score"], logits[:, 0], f"{what} score")


def check_ner(got, logits, what):
    assert_close(got["logits"], logits, f"{what} logits")
    np.testing.assert_array_equal(got["tag_ids"], got["logits"].argmax(-1), err_msg=what)
    assert got["tags"].tolist() == [[TAGS[i].encode() for i in row] for row in got["tag_ids"]], what


def best_spans(start_logits, end_logits, ids):
    """Brute force: [(start, end)] of the best context span of each row ((0, 0) when there is no context)."""
    spans = []
    for row, (start, end) in enumerate(zip(start_logits, end_logits)):
        length = ids["input_mask"][row].sum()
        context = [i for i in range(length - 1) if ids["segment_ids"][row][i] == 1]
        spans.append(max(((i, j) for i in context for j in context if i <= j < i + MAX_ANSWER_LENGTH),
                         key=lambda span: start[span[0]] + end[span[1]], default=(0, 0)))
    return spans


# ----------------------------------------------------------------------------------------------- tests

@pytest.mark.parametrize("task", ["classifier", "regression", "ner", "ner_bilstm", "ner_features"])
def test_task_signatures_match_the_in_process_model(task, task_client, models, tokenizer):
    check = {"classifier": check_classifier, "regression": check_regression, "ner": check_ner,
             "ner_bilstm": check_ner, "ner_features": check_ner}[task]
    requests = {"serving_default": PAIRS, **{name: pairs for name, (_, pairs) in TEXT_SIGNATURES.items()}}
    for signature, pairs in requests.items():
        got = client_outputs(task_client, f"{task}_{signature}")
        ids = python_pack(tokenizer, pairs)
        if signature != "serving_default":
            for name in INPUT_NAMES:
                np.testing.assert_array_equal(got[name], ids[name], err_msg=f"{signature} {name}")
        logits = run_model(lambda x, training: {"logits": models[task](x, training=training)}, ids, ["logits"])
        check(got, logits["logits"], f"{task} {signature}")
    examples = client_outputs(task_client, f"{task}_serve_examples")
    if task == "classifier":
        classify = client_outputs(task_client, "classifier_classify")
        assert classify["classes"].tolist() == [[c.encode() for c in CLASSES]] * len(EXAMPLE_PAIRS)
        assert_close(classify["scores"], examples["probabilities"], "classify scores")
    if task == "regression":
        assert_close(client_outputs(task_client, "regression_regress")["outputs"], examples["score"], "regress")


def test_squad_signatures_and_answer_text(task_client, models, tokenizer):
    ids = python_pack(tokenizer, QUESTIONS)
    expected = run_model(models["squad"], ids, ["start_logits", "end_logits"])
    for signature in ("serving_default", "serve_text", "serve_examples"):
        got, what = client_outputs(task_client, f"squad_{signature}"), f"squad {signature}"
        for name in ("start_logits", "end_logits"):
            assert_close(got[name], expected[name], f"{what} {name}")
        spans = best_spans(got["start_logits"], got["end_logits"], ids)
        assert list(zip(got["answer_start"].tolist(), got["answer_end"].tolist())) == spans, what
        assert_close(got["answer_score"], np.array([got["start_logits"][row, i] + got["end_logits"][row, j]
                                                    for row, (i, j) in enumerate(spans)]), f"{what} score")
        if signature == "serving_default":
            continue
        for name in INPUT_NAMES:
            np.testing.assert_array_equal(got[name], ids[name], err_msg=f"{what} {name}")
        answers = ["" if (i, j) == (0, 0) else " ".join(tokenizer.convert_ids_to_tokens(
            ids["input_ids"][row][i:j + 1].tolist())) for row, (i, j) in enumerate(spans)]
        assert got["answer"].tolist() == [a.replace(" ##", "").replace("##", "").encode() for a in answers], what
    assert spans[3] == (0, 0) and got["answer"][3] == b""  # QUESTIONS[3] has no context
    errors = task_client[1]
    assert set(errors) == {"squad_no_context", "squad_bad_utf8"}
    assert "context" in errors["squad_no_context"] and "required" in errors["squad_no_context"]
    assert "context is not valid UTF-8 at rows] [0]" in errors["squad_bad_utf8"]


def test_zero_row_requests_get_outputs_of_zero_rows(task_client):
    """Every raw-text signature of every task export (the text and Example ones, classify and regress, SQuAD's
    question + context; the embedder's) answers a request of zero rows with its outputs, of zero rows."""
    errors = task_client[1]
    for task, signature, _ in RAW_TEXT_SIGNATURES:
        name = f"{task}_{signature}"
        assert f"{name}_zero" not in errors, errors[f"{name}_zero"]
        full = client_outputs(task_client, name)
        assert full and not any(value.shape[0] == 0 for value in full.values()), name
        assert_zero_rows(client_outputs(task_client, f"{name}_zero"), full, name)


@pytest.mark.extended
def test_saved_model_cli_lists_the_task_signatures(finetuned):
    tasks = list(TASK_FLAGS)
    listings = dict(zip(tasks, listed_signatures(*(f"{finetuned}/export/{task}/1" for task in tasks))))
    ids, string, predict = ("DT_INT32", "-1, -1"), ("DT_STRING", "-1"), "tensorflow/serving/predict"
    per_token = "-1, -1"  # any T: the request's
    outputs = {
        "classifier": {"logits": ("DT_FLOAT", "-1, 3"), "probabilities": ("DT_FLOAT", "-1, 3"),
                       "label_id": ("DT_INT32", "-1"), "label": string},
        "regression": {"score": ("DT_FLOAT", "-1")},
        "ner": {"logits": ("DT_FLOAT", f"{per_token}, 5"), "tag_ids": ("DT_INT32", per_token),
                "tags": ("DT_STRING", per_token)},
        **{task: {"logits": ("DT_FLOAT", f"{per_token}, 5"), "tag_ids": ("DT_INT32", per_token),
                  "tags": ("DT_STRING", per_token)} for task in ("ner_bilstm", "ner_features")},
        "squad": {"start_logits": ("DT_FLOAT", per_token), "end_logits": ("DT_FLOAT", per_token),
                  "answer_start": ("DT_INT32", "-1"), "answer_end": ("DT_INT32", "-1"),
                  "answer_score": ("DT_FLOAT", "-1")},
    }
    text_inputs = {**{task: {name: names for name, (names, _) in TEXT_SIGNATURES.items()} for task in tasks},
                   "squad": {"serve_text": ("question", "context"), "serve_examples": ("inputs",)}}
    apis = {"classifier": {"classify": ("tensorflow/serving/classify", {
                ("inputs", "inputs"): string, ("outputs", "classes"): ("DT_STRING", "-1, 3"),
                ("outputs", "scores"): ("DT_FLOAT", "-1, 3")})},
            "regression": {"regress": ("tensorflow/serving/regress", {
                ("inputs", "inputs"): string, ("outputs", "outputs"): ("DT_FLOAT", "-1")})}}
    for task in tasks:
        model_outputs = {("outputs", name): spec for name, spec in outputs[task].items()}
        with_inputs = {**model_outputs, **{("outputs", name): ids for name in INPUT_NAMES}}
        if task == "squad":
            with_inputs["outputs", "answer"] = string
        expected = {"serving_default": (predict, {**{("inputs", name): ids for name in INPUT_NAMES}, **model_outputs}),
                    **{signature: (predict, {**{("inputs", name): string for name in names}, **with_inputs})
                       for signature, names in text_inputs[task].items()},
                    **apis.get(task, {})}
        assert listings[task] == expected, task


@pytest.mark.extended
def test_export_model_task_errors(finetuned, tmp_path):
    common = [f"--vocab_file={finetuned}/vocab.txt", f"--max_seq_length={SEQ_LENGTH}"]
    cases = {
        f"--model_type=classifier --init_checkpoint={finetuned}/classifier":
            "--label_list: bert_classifier has 3 outputs: it needs 3 label names in label-id order, got none",
        f"--model_type=ner --label_list=O,B --init_checkpoint={finetuned}/ner":
            "--label_list: bert_token_classifier has 5 outputs: it needs 5 label names in label-id order, got 2 (O, B)",
        f"--model_type=classifier --label_list=x --init_checkpoint={finetuned}/regression":
            "--label_list: bert_classifier is a regression model (num_labels=1): it has no labels",
        f"--model_type=squad --init_checkpoint={finetuned}/squad_no_config":
            "(native checkpoint) carries no config: give its config file (--bert_config_file)",
    }
    assert_exports_fail(cases, common, tmp_path)
