"""GLUE / XNLI processors on a few lines in the exact layouts of GLUE's files, and against the original
run_classifier.py processors (CoLA, MNLI, MRPC, XNLI)."""

import pytest

from bert_tf.data.tasks import glue as glue_tasks
from bert_tf.data.tasks.classification import InputExample
from tests.helpers.original_classifier import original_run_classifier
from tests.helpers.task_data import GLUE


@pytest.fixture(scope="module")
def glue_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("glue_data")
    for name, text in GLUE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def original():
    return original_run_classifier()


def as_tuples(examples):
    return [(e.guid, e.text_a, e.text_b, e.label) for e in examples]


@pytest.mark.parametrize("task,directory,splits", [
    ("cola", "CoLA", ("train", "dev")), ("mrpc", "MRPC", ("train", "dev")),
    ("mnli", "MNLI", ("train", "dev_matched")), ("xnli", "XNLI", ("train", "dev"))])
def test_same_examples_as_the_original(original, glue_dir, task, directory, splits):
    ours = glue_tasks.get_processor(task)
    theirs = {"cola": original.ColaProcessor, "mrpc": original.MrpcProcessor, "mnli": original.MnliProcessor,
              "xnli": original.XnliProcessor}[task]()
    data_dir = str(glue_dir / directory)
    assert ours.get_labels() == theirs.get_labels()
    assert as_tuples(ours.get_train_examples(data_dir)) == as_tuples(theirs.get_train_examples(data_dir))
    assert as_tuples(ours.get_dev_examples(data_dir)) == as_tuples(theirs.get_dev_examples(data_dir))
    assert ours.dev_splits[0] == splits[1]


def test_original_test_sets_read_the_same_texts(original, glue_dir):
    for task, directory in (("cola", "CoLA"), ("mrpc", "MRPC"), ("mnli", "MNLI")):
        theirs = getattr(original, f"{directory.capitalize()}Processor")().get_test_examples(str(glue_dir / directory))
        ours = glue_tasks.get_processor(task).get_test_examples(str(glue_dir / directory))
        assert [(e.text_a, e.text_b) for e in ours] == [(e.text_a, e.text_b) for e in theirs]
        assert all(e.label is None for e in ours)


EXPECTED_FIRST = {  # task: (split, first example)
    "sst-2": ("train", InputExample("train-1", "hide new secretions from the parental units ", None, "0")),
    "sts-b": ("train", InputExample("train-0", "A plane is taking off.", "An air plane is taking off.", 5.0)),
    "qqp": ("dev", InputExample("dev-201359", "Why are African-Americans so beautiful?",
                                "Why are hispanics so beautiful?", "0")),
    "qnli": ("train", InputExample("train-0", "When did the third Digimon series begin?",
                                   "Unlike the two seasons before it, it takes place in a fictional universe.",
                                   "not_entailment")),
    "rte": ("dev", InputExample("dev-0", "Dana Reeve, the widow of the actor, died.",
                                "Christopher Reeve had an accident.", "not_entailment")),
    "wnli": ("dev", InputExample("dev-0", "The drain is clogged with hair. It has to be cleaned.",
                                 "The hair has to be cleaned.", "0")),
    "mnli": ("dev_mismatched", InputExample("dev_mismatched-0", "Your contribution helped make it possible.",
                                            "Your contributions were of no help.", "contradiction")),
}
DIRECTORIES = {"sst-2": "SST-2", "sts-b": "STS-B", "qqp": "QQP", "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI",
               "mnli": "MNLI", "cola": "CoLA", "mrpc": "MRPC", "ax": "diagnostic", "xnli": "XNLI"}


@pytest.mark.parametrize("task", sorted(EXPECTED_FIRST))
def test_layouts(glue_dir, task):
    split, expected = EXPECTED_FIRST[task]
    processor = glue_tasks.get_processor(task)
    assert processor.get_examples(str(glue_dir / DIRECTORIES[task]), split)[0] == expected


def test_every_task_reads_its_test_set_and_writes_its_submission(glue_dir, tmp_path):
    names = set()
    for task, directory in DIRECTORIES.items():
        processor = glue_tasks.get_processor(task)
        for split in processor.test_splits:
            examples = processor.get_examples(str(glue_dir / directory), split)
            if task == "xnli":  # XNLI's test set is labelled and has no leaderboard
                assert [e.label for e in examples] == ["entailment"]
                continue
            assert examples and all(e.label is None for e in examples)
            predictions = [0.5] * len(examples) if processor.is_regression else [processor.labels[-1]] * len(examples)
            name = processor.submission_files[split]
            glue_tasks.write_submission(str(tmp_path / name), examples, predictions)
            names.add(name)
    assert names == {"CoLA.tsv", "SST-2.tsv", "MRPC.tsv", "STS-B.tsv", "QQP.tsv", "MNLI-m.tsv", "MNLI-mm.tsv",
                     "QNLI.tsv", "RTE.tsv", "WNLI.tsv", "AX.tsv"}
    assert (tmp_path / "QQP.tsv").read_text() == "index\tprediction\n0\t1\n"
    assert (tmp_path / "STS-B.tsv").read_text() == "index\tprediction\n0\t0.500\n"
    assert (tmp_path / "AX.tsv").read_text() == "index\tprediction\n0\tneutral\n"
    assert (tmp_path / "CoLA.tsv").read_text() == "index\tprediction\n0\t1\n1\t1\n"


def test_task_properties():
    assert glue_tasks.get_processor("STS-B").is_regression
    assert glue_tasks.get_processor("CoLA").metrics[0] == "mcc"
    assert glue_tasks.get_processor("qqp").metrics == ("f1", "accuracy")
    assert glue_tasks.get_processor("sst2").get_labels() == ["0", "1"]
    assert glue_tasks.get_processor("mnli").dev_splits == ("dev_matched", "dev_mismatched")
    assert glue_tasks.get_processor("xnli", language="en").language == "en"


def test_xnli_keeps_one_language_and_maps_contradictory(glue_dir):
    processor = glue_tasks.get_processor("xnli")
    assert [e.label for e in processor.get_train_examples(str(glue_dir / "XNLI"))] == ["neutral", "contradiction"]
    english = glue_tasks.get_processor("xnli", language="en").get_dev_examples(str(glue_dir / "XNLI"))
    assert as_tuples(english) == [("dev-1", "He said, \"Mom, I'm home.\"", "He didn't say a word.", "neutral")]
    with pytest.raises(ValueError, match="no examples in the dev set"):
        glue_tasks.get_processor("xnli", language="de").get_dev_examples(str(glue_dir / "XNLI"))


def test_bad_input(glue_dir, tmp_path):
    with pytest.raises(glue_tasks.UnknownTaskError, match="unknown task 'glue'; expected one of ax, cola, ") as e:
        glue_tasks.get_processor("glue")
    assert isinstance(e.value, ValueError) and "--" not in str(e.value)  # the commands add their own flags
    with pytest.raises(ValueError, match="AxProcessor has no 'train' set"):
        glue_tasks.get_processor("ax").get_train_examples(str(glue_dir / "diagnostic"))
    with pytest.raises(ValueError, match="dev.tsv does not exist"):
        glue_tasks.get_processor("rte").get_dev_examples(str(tmp_path))
    (tmp_path / "train.tsv").write_text("index\tquestion\tsentence\tlabel\n0\tq?\ta\tb\tentailment\n")
    with pytest.raises(ValueError, match=r"train.tsv:2: 5 columns, expected 4"):
        glue_tasks.get_processor("qnli").get_train_examples(str(tmp_path))
    (tmp_path / "train.tsv").write_text("index\tquestion\tsentence\tlabel\n0\tq?\ta\tyes\n")
    with pytest.raises(ValueError, match=r"train.tsv:2: label 'yes' is not one of the task's labels"):
        glue_tasks.get_processor("qnli").get_train_examples(str(tmp_path))
    (tmp_path / "train.tsv").write_text("index\tsentence1\tsentence2\tscore\n0\ta\tb\tfive\n")
    with pytest.raises(ValueError, match=r"train.tsv:2: regression label 'five' is not a number"):
        glue_tasks.get_processor("sts-b").get_train_examples(str(tmp_path))
    (tmp_path / "dev.tsv").write_text("gj04\t1\t\tgood\ngj04\t2\t\tbad label\n")
    with pytest.raises(ValueError, match=r"dev.tsv:2: label '2'"):
        glue_tasks.get_processor("cola").get_dev_examples(str(tmp_path))
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\n")
    with pytest.raises(ValueError, match="no examples in the dev set"):
        glue_tasks.get_processor("sst-2").get_dev_examples(str(tmp_path))
    (tmp_path / "dev.tsv").write_bytes("sentence\tlabel\ncaf\xe9\t1\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"dev.tsv:2: invalid UTF-8"):
        glue_tasks.get_processor("sst-2").get_dev_examples(str(tmp_path))
