"""Users' own classification files (TSV / CSV / JSON lines), feature conversion and truncation."""

import json
import os

import numpy as np
import pytest

from bert_tf.data.tasks import classification
from bert_tf.data.tasks.classification import ColumnProcessor, InputExample
from tests.helpers.original_classifier import original_run_classifier
from tests.helpers.task_data import GLUE
from tools.original_bert import import_original

# Real SST-2 and CoLA sentences (GLUE's files).
SST2 = [line.split("\t")[0] for line in (GLUE["SST-2/train.tsv"] + GLUE["SST-2/dev.tsv"]).splitlines()
        if not line.startswith("sentence")]
COLA = [line.split("\t")[3] for line in (GLUE["CoLA/train.tsv"] + GLUE["CoLA/dev.tsv"]).splitlines()]


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_tsv_with_inferred_labels_and_unlabelled_test(tmp_path):
    write(tmp_path / "train.tsv", "label\ttext\nspam\tWIN a \"prize\" now\nham\tsee you at 5\n")
    write(tmp_path / "dev.tsv", "label\ttext\nham\tok\n")
    write(tmp_path / "test.tsv", "text\nwho is this\n")
    processor = ColumnProcessor(text_a_column="text", label_column="label")
    assert processor.get_dev_examples(str(tmp_path)) == [InputExample("dev-1", "ok", None, "ham")]
    assert processor.get_labels() == ["ham", "spam"]
    assert processor.get_train_examples(str(tmp_path))[0].text_a == 'WIN a "prize" now'
    assert processor.get_test_examples(str(tmp_path)) == [InputExample("test-1", "who is this")]


def test_results_columns_name_the_labels_in_label_id_order():
    """test_results.tsv has no header (the original's format): the log line of a run names its columns."""
    from bert_tf.data.tasks import glue

    assert glue.get_processor("mnli").results_columns() == (
        "P(contradiction), P(entailment), P(neutral): the probability of each label in the order of labels.txt")
    many = ColumnProcessor(labels=[f"c{i}" for i in range(12)]).results_columns()
    assert many.startswith("P(c0), P(c1), ") and "P(c9), ... (12 labels): " in many and "P(c10)" not in many
    assert glue.get_processor("sts-b").results_columns() == "the predicted score"


def test_csv_pairs_with_quoting_ids_and_given_labels(tmp_path):
    write(tmp_path / "train.csv", 'id,question,passage,answer\nq1,"Is it, really?","Yes, it ""is"".\nTwo lines.",'
                                  'yes\nq2,No?,No.,no\n')
    processor = ColumnProcessor("question", "passage", "answer", id_column="id", labels=["no", "yes"])
    examples = processor.get_train_examples(str(tmp_path))
    assert examples[0] == InputExample("train-q1", "Is it, really?", 'Yes, it "is".\nTwo lines.', "yes")
    write(tmp_path / "dev.csv", 'id,question,passage,answer\nq3,"a",b,no\nq4,a,b\n')
    with pytest.raises(ValueError, match=r"dev.csv:3: 3 columns, expected 4"):
        processor.get_dev_examples(str(tmp_path))


def test_jsonl_regression(tmp_path):
    write(tmp_path / "train.jsonl", '{"s1": "a", "s2": "b", "score": 4.5}\n\n{"s1": "c", "s2": "d", "score": "1"}\n')
    write(tmp_path / "test.jsonl", '{"s1": "e", "s2": "f"}\n')
    processor = ColumnProcessor("s1", "s2", "score", regression=True)
    assert processor.is_regression and processor.get_labels() == []
    assert [e.label for e in processor.get_train_examples(str(tmp_path))] == [4.5, 1.0]
    assert processor.get_test_examples(str(tmp_path))[0].label is None
    write(tmp_path / "dev.jsonl", '{"s1": "a", "score": 2}\n')
    with pytest.raises(ValueError, match=r"dev.jsonl:1: the JSON object has no key 's2'"):
        processor.get_dev_examples(str(tmp_path))
    write(tmp_path / "dev.jsonl", '["a", "b"]\n')
    with pytest.raises(ValueError, match=r"dev.jsonl:1: expected a JSON object, got list"):
        processor.get_dev_examples(str(tmp_path))
    write(tmp_path / "dev.jsonl", '{"s1": "a", "s2": "b", "score": "high"}\n')
    with pytest.raises(ValueError, match=r"dev.jsonl:1: regression label 'high' is not a number"):
        processor.get_dev_examples(str(tmp_path))


def jsonl(*objects):
    return "".join(json.dumps(o) + "\n" for o in objects)


def test_jsonl_nulls_numbers_and_integer_labels(tmp_path):
    """In JSON lines a text is a string and a label a string or an integer (its digits: 1 is "1"); a null label
    means "no label" in a test file only, a null text nowhere; a regression score is a number."""
    write(tmp_path / "train.jsonl", jsonl({"text": SST2[0], "label": 0}, {"text": SST2[1], "label": None}))
    processor = ColumnProcessor()
    with pytest.raises(ValueError, match=r"train.jsonl:2: \"label\" is null; expected a label \(a string\)$"):
        processor.get_train_examples(str(tmp_path))
    write(tmp_path / "train.jsonl", jsonl({"text": SST2[0], "label": 0}, {"text": SST2[1], "label": "1"}))
    assert [e.label for e in processor.get_train_examples(str(tmp_path))] == ["0", "1"]
    assert processor.get_labels() == ["0", "1"]
    write(tmp_path / "test.jsonl", jsonl({"text": SST2[2], "label": None}))
    assert processor.get_test_examples(str(tmp_path)) == [InputExample("test-0", SST2[2])]
    write(tmp_path / "dev.jsonl", jsonl({"text": None, "label": 1}))
    with pytest.raises(ValueError, match=r"dev.jsonl:1: \"text\" is null; expected a string \(the text\)$"):
        processor.get_dev_examples(str(tmp_path))
    write(tmp_path / "dev.jsonl", jsonl({"text": SST2[2], "label": 1.0}))
    with pytest.raises(ValueError, match=r"dev.jsonl:1: \"label\" is 1.0; expected one of \['0', '1'\]$"):
        processor.get_dev_examples(str(tmp_path))
    write(tmp_path / "dev.jsonl", jsonl({"text": SST2[2], "label": None}))
    with pytest.raises(ValueError, match=r"dev.jsonl:1: \"label\" is null; expected a number$"):
        ColumnProcessor(regression=True).get_dev_examples(str(tmp_path))


def test_a_dev_set_needs_labelled_examples():
    """What a run checks of a dev set before building a model: it is scored against its labels."""
    examples = [InputExample("dev-0", SST2[0], None, "0"), InputExample("dev-1", SST2[1]),
                InputExample("dev-2", SST2[2])]
    with pytest.raises(ValueError, match=r"^the dev set: 2 of 3 examples have no label \(the first: dev-1\); a dev "
                                         r"set is scored against its labels$"):
        classification.check_scorable(examples, "dev")
    with pytest.raises(ValueError, match=r"^the dev_matched set has no examples$"):
        classification.check_scorable([], "dev_matched")
    classification.check_scorable(examples[:1], "dev")


def test_truncation_is_counted_in_one_line(tokenizer, caplog):
    examples = [InputExample(f"train-{i}", text, None, "1") for i, text in enumerate(SST2 + COLA)]
    classification.convert_examples(examples, ["0", "1"], 12, tokenizer)
    assert "2 of 6 examples (33%) are longer than max_seq_length=12 and were truncated" in caplog.text


def test_bad_files(tmp_path):
    processor = ColumnProcessor("text", labels=["0", "1"])
    with pytest.raises(ValueError, match="expected one of train.tsv, train.csv, train.jsonl"):
        processor.get_train_examples(str(tmp_path))
    write(tmp_path / "train.tsv", "text\tlabel\n")
    write(tmp_path / "train.csv", "text,label\n")
    with pytest.raises(ValueError, match=r"found \['train.tsv', 'train.csv'\]"):
        processor.get_train_examples(str(tmp_path))
    os.remove(tmp_path / "train.csv")
    with pytest.raises(ValueError, match="no examples in the train set"):
        processor.get_train_examples(str(tmp_path))
    write(tmp_path / "dev.tsv", "sentence\tlabel\nhi\t1\n")
    with pytest.raises(ValueError, match=r"dev.tsv:1: the header \['sentence', 'label'\] has no column 'text'"):
        processor.get_dev_examples(str(tmp_path))
    write(tmp_path / "dev.tsv", "text\tlabel\nhi\t2\n")
    with pytest.raises(ValueError, match=r"dev.tsv:2: label '2' is not one of the task's labels \['0', '1'\]"):
        processor.get_dev_examples(str(tmp_path))
    write(tmp_path / "dev.tsv", "text\tlabel\nhi\t1\nhello\tworld\t0\n")
    with pytest.raises(ValueError, match=r"dev.tsv:3: 3 columns, expected 2 \(as in the header\)"):
        processor.get_dev_examples(str(tmp_path))
    (tmp_path / "dev.tsv").write_bytes(b"text\tlabel\nhi\t1\n\xff\xfe\t0\n")
    with pytest.raises(ValueError, match=r"dev.tsv:3: invalid UTF-8"):
        processor.get_dev_examples(str(tmp_path))
    with pytest.raises(ValueError, match="regression task has no label list"):
        ColumnProcessor("text", labels=["a"], regression=True)


def test_features_match_the_original(tokenizer, minilm_dir):
    original = original_run_classifier()
    theirs_tokenizer = import_original("tokenization").FullTokenizer(os.path.join(minilm_dir, "vocab.txt"))
    examples = [InputExample("a", "The quick brown fox jumps over the lazy dog, again and again.", None, "1"),
                InputExample("b", "Short.", "A much longer second sentence that will need truncating now.", "0"),
                InputExample("c", "Equal length here", "Equal length there", "1"),
                InputExample("d", "Empty second text", "", "0")]
    ours = classification.convert_examples(examples, ["0", "1"], 12, tokenizer)
    for i, example in enumerate(examples):
        theirs = original.convert_single_example(i, example, ["0", "1"], 12, theirs_tokenizer)
        assert ours["input_ids"][i].tolist() == theirs.input_ids
        assert ours["input_mask"][i].tolist() == theirs.input_mask
        assert ours["segment_ids"][i].tolist() == theirs.segment_ids
        assert ours["label_ids"][i] == theirs.label_id
    assert ours["input_ids"].dtype == np.int32 and ours["input_ids"].shape == (4, 12)
    assert ours["is_real_example"].tolist() == [1, 1, 1, 1]


def test_regression_and_unlabelled_features(tokenizer):
    features = classification.convert_examples(
        [InputExample("a", "good", "fine", 4.25), InputExample("b", "bad", "awful", None)], [], 8, tokenizer)
    assert features["label_ids"].dtype == np.float32 and features["label_ids"].tolist() == [4.25, 0.0]
    with pytest.raises(ValueError, match="b: label 'maybe' is not one of"):
        classification.convert_examples([InputExample("b", "x", None, "maybe")], ["0", "1"], 8, tokenizer)


def test_truncation_strategies(tokenizer):
    tokens = [str(i) for i in range(10)]
    assert classification.truncate_single(tokens, 8, "head") == tokens[:8]
    assert classification.truncate_single(tokens, 8, "tail") == tokens[2:]
    assert classification.truncate_single(tokens, 8, "head+tail") == ["0", "1", "4", "5", "6", "7", "8", "9"]
    assert classification.truncate_single(tokens[:3], 8, "tail") == tokens[:3]
    example = InputExample("a", "one two three four five six seven", None, "0")
    ids = {t: classification.convert_examples([example], ["0"], 6, tokenizer, t)["input_ids"][0] for t in
           ("head", "tail", "head+tail")}
    assert tokenizer.convert_ids_to_tokens(ids["head"].tolist()) == ["[CLS]", "one", "two", "three", "four", "[SEP]"]
    assert tokenizer.convert_ids_to_tokens(ids["tail"].tolist()) == ["[CLS]", "four", "five", "six", "seven", "[SEP]"]
    assert tokenizer.convert_ids_to_tokens(ids["head+tail"].tolist()) == ["[CLS]", "one", "five", "six", "seven",
                                                                         "[SEP]"]
    with pytest.raises(ValueError, match="truncation='tail' is for single texts; p is a pair"):
        classification.convert_examples([InputExample("p", "a", "b", "0")], ["0"], 6, tokenizer, "tail")
    with pytest.raises(ValueError, match="truncation='middle' is not one of"):
        classification.truncate_single(tokens, 8, "middle")
