"""SQuAD from TFDS, offline: tfds.testing.mock_data serves real SQuAD files through TFDS's own squad example
generator (its random strings would never hold their answers), in a shuffled order as TFDS's prepared data
has; the TFDS split written back as SQuAD JSON must read as the file itself does."""

import dataclasses
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from bert_tf.data.squad import examples as squad
from bert_tf.data.squad import tfds as squad_tfds
from bert_tf.evaluation.squad import evaluate
from tests.helpers.squad_fixtures import ROOT
from tests.helpers.squad_tfds_mock import MOCKED_RUN, mock_squad
from tests.helpers.tiers import first_in_make_test
from tools import make_cloze_squad

tfds = pytest.importorskip("tensorflow_datasets")

def run_mocked(squad_dir, *flags):
    """run_squad.py with `flags` and TFDS mocked by mock_squad(squad_dir)."""
    return subprocess.run([sys.executable, "-c", MOCKED_RUN, str(squad_dir), *flags], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def questions(articles):
    """{id: (title, context, qa)} of the questions of a SQuAD `data` list."""
    return {qa["id"]: (article["title"], paragraph["context"], qa)
            for article in articles for paragraph in article["paragraphs"] for qa in paragraph["qas"]}


def by_id(examples):
    return {example.qas_id: dataclasses.asdict(example) for example in examples}


@pytest.fixture(scope="module")
def squad_dir(tmp_path_factory):
    """Cloze SQuAD v1.1 and v2.0 files (real prose) with a training answer that is not in its context and a
    dev question with two answers."""
    directory = tmp_path_factory.mktemp("squad_tfds")
    for version in ([], ["--version_2_with_negative"]):
        make_cloze_squad.main([f"--output_dir={directory}", "--num_train=20", "--num_dev=8", "--max_chars=600",
                               *version])
    for name, change in (("train", lambda qa: qa.update(answers=[{"text": "not in it", "answer_start": 0}])),
                         ("dev", lambda qa: qa["answers"].append({"text": "another", "answer_start": 1}))):
        with open(directory / f"{name}-v1.1.json") as f:
            dataset = json.load(f)
        change(dataset["data"][0]["paragraphs"][0]["qas"][0])
        with open(directory / f"{name}-v1.1.json", "w") as f:
            json.dump(dataset, f)
    return directory


@pytest.mark.parametrize("version", ["v1.1", "v2.0"])
@pytest.mark.parametrize("split", ["train", "validation"])
def test_a_tfds_split_reads_as_its_json_file(squad_dir, tmp_path, version, split):
    original = squad_dir / f"{'train' if split == 'train' else 'dev'}-{version}.json"
    with mock_squad(squad_dir):
        path = squad_tfds.write_squad_json(f"squad/{version}", split, str(tmp_path))
    assert os.listdir(tmp_path) == [os.path.basename(path)] == [f"squad_{version}-{split}.json"]  # no temporary left
    with open(path) as f:
        written = json.load(f)
    with open(original) as f:
        expected = json.load(f)
    assert written["version"] == expected["version"]
    assert questions(written["data"]) == questions(expected["data"])

    is_training, version_2 = split == "train", version == "v2.0"
    from_tfds = squad.read_squad_examples(path, is_training, version_2)
    from_json = squad.read_squad_examples(str(original), is_training, version_2)
    assert by_id(from_tfds.examples) == by_id(from_json.examples)
    assert from_tfds.skipped == from_json.skipped == ([("train000001", from_json.skipped[0][1])]
                                                      if is_training and not version_2 else [])
    predictions = {qa_id: (qa["answers"] or [{"text": ""}])[0]["text"] if int(qa_id[-1]) % 2 else "wrong"
                   for qa_id, (_, _, qa) in questions(expected["data"]).items()}
    results = evaluate(written["data"], predictions)
    assert results == evaluate(expected["data"], predictions) and ("NoAns_exact" in results) == version_2


def tfds_row(qa_id, title, context, answers, is_impossible=None):
    """A TFDS squad row as tfds.as_numpy yields it; `answers`: [(text, answer_start)]."""
    row = {"id": qa_id.encode(), "title": title.encode(), "context": context.encode(), "question": b"Which?",
           "answers": {"text": np.array([text.encode() for text, _ in answers], dtype=object),
                       "answer_start": np.array([start for _, start in answers], dtype=np.int32)}}
    if is_impossible is not None:
        row["is_impossible"] = np.bool_(is_impossible)
    return row


def test_squad_2_rows_group_into_articles_with_is_impossible(tmp_path):
    one, two, other = "The cat sat on the mat.", "Dogs  bark\tat night.", "Rain falls."
    rows = [tfds_row("a", "Pets", one, [("the mat", 15)], False), tfds_row("b", "Weather", other, [], True),
            tfds_row("c", "Pets", two, [("at night", 11)], False), tfds_row("d", "Pets", one, [], True)]
    qa = {qa_id: {"id": qa_id, "question": "Which?", "answers": answers, "is_impossible": not answers}
          for qa_id, answers in (("a", [{"text": "the mat", "answer_start": 15}]), ("b", []),
                                 ("c", [{"text": "at night", "answer_start": 11}]), ("d", []))}
    articles = squad_tfds.squad_articles(rows)
    assert articles == [{"title": "Pets", "paragraphs": [{"context": one, "qas": [qa["a"], qa["d"]]},
                                                         {"context": two, "qas": [qa["c"]]}]},
                        {"title": "Weather", "paragraphs": [{"context": other, "qas": [qa["b"]]}]}]
    path = tmp_path / "squad.json"
    path.write_text(json.dumps({"version": "v2.0", "data": articles}))
    examples = by_id(squad.read_squad_examples(str(path), True, version_2_with_negative=True).examples)
    assert [(e["qas_id"], e["is_impossible"], e["start_position"], e["end_position"], e["orig_answer_text"])
            for e in examples.values()] == [("a", False, 4, 5, "the mat"), ("d", True, -1, -1, ""),
                                            ("c", False, 2, 3, "at night"), ("b", True, -1, -1, "")]
    assert examples["c"]["doc_tokens"] == ["Dogs", "bark", "at", "night."]
    assert squad_tfds.squad_articles([tfds_row("e", "", other, [("Rain", 0)])])[0]["paragraphs"][0]["qas"] == [
        {"id": "e", "question": "Which?", "answers": [{"text": "Rain", "answer_start": 0}]}]  # v1.1: no is_impossible


def test_the_tfds_set_must_be_squad_and_agree_with_version_2_with_negative():
    with tfds.testing.mock_data():
        squad_tfds.check_tfds_squad("squad/v1.1", None, False)
        squad_tfds.check_tfds_squad("squad/v2.0", None, True)
        with pytest.raises(ValueError, match=r"tfds_name=squad/v2.0 has unanswerable questions \(SQuAD 2.0\): "
                                             r"pass version_2_with_negative=True"):
            squad_tfds.check_tfds_squad("squad/v2.0", None, False)
        with pytest.raises(ValueError, match=r"version_2_with_negative=True needs SQuAD 2.0 data, but "
                                             r"tfds_name=squad/v1.1 has no unanswerable questions"):
            squad_tfds.check_tfds_squad("squad/v1.1", None, True)
        with pytest.raises(ValueError, match=r"tfds_name=glue/mrpc is not a SQuAD data set: it has no 'id' "
                                             r"feature \(it has \['idx', 'label', 'sentence1', 'sentence2'\]"):
            squad_tfds.check_tfds_squad("glue/mrpc", None, False)


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_run_squad_trains_predicts_and_evaluates_from_tfds(squad_setup):
    directory, flags = squad_setup
    output = directory / "tfds_out"
    run = run_mocked(directory, *flags, "--tfds_name=squad/v2.0", "--do_train=True", "--do_predict=True",
                     f"--output_dir={output}", "--train_batch_size=8", "--num_train_epochs=0.6",
                     "--iterations_per_loop=3", "--save_checkpoints_steps=3", "--learning_rate=1e-3", "--seed=1")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "step 3/3" in run.stderr
    files = os.listdir(output)
    assert {"squad_v2.0-train.json", "squad_v2.0-validation.json", "predictions.json", "null_odds.json",
            "eval_results.json", "model.ckpt-3.index"} <= set(files)
    records = sorted(f for f in files if f.endswith(".tf_record"))  # the cache is named after the TFDS split
    assert [re.sub(r"\.[0-9a-f]{16}\.", ".HASH.", f) for f in records] == [
        "squad_v2.0-train.train.HASH.tf_record", "squad_v2.0-validation.predict.HASH.tf_record"]
    outputs = {}
    for name in ("predictions", "null_odds", "eval_results"):
        with open(output / f"{name}.json") as f:
            outputs[name] = json.load(f)
    assert len(outputs["predictions"]) == outputs["eval_results"]["total"] == 12
    official = evaluate(squad.load_squad_json(directory / "dev-v2.0.json"), outputs["predictions"],
                        outputs["null_odds"])
    assert outputs["eval_results"] == official  # the numbers on the original dev file

    again = run_mocked(directory, *flags, "--tfds_name=squad/v2.0", "--do_predict=True", f"--output_dir={output}")
    assert again.returncode == 0 and "reusing" in again.stderr, again.stderr[-3000:]  # TFDS's order is stable
    with open(output / "predictions.json") as f:
        assert json.load(f) == outputs["predictions"]


@pytest.mark.subprocess
@pytest.mark.parametrize("flags, error", first_in_make_test([
    (["--do_train=True", "--tfds_name=squad/v2.0", "--train_file=train.json"],
     "--tfds_name=squad/v2.0 replaces --train_file and --predict_file; pass either --tfds_name or the files"),
    (["--do_train=True"], "If `do_train` is True, then `train_file` (or `tfds_name`) must be specified."),
    (["--do_predict=True", "--predict_file=dev.json", "--data_dir=/tmp/tfds"],
     "--data_dir=/tmp/tfds is TFDS's data directory: it needs --tfds_name"),
    (["--do_predict=True", "--tfds_name=squad/v1.1"],
     "--version_2_with_negative=True needs SQuAD 2.0 data, but --tfds_name=squad/v1.1 has no unanswerable"),
], 1))
def test_run_squad_flag_errors(squad_setup, tmp_path, flags, error):
    directory, base_flags = squad_setup
    run = run_mocked(directory, *base_flags, *flags, f"--output_dir={tmp_path}")
    assert run.returncode == 1 and f"Error: {error}" in run.stderr, run.stderr[-2000:]
