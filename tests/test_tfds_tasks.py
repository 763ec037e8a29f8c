"""TFDS input, offline: tfds.testing.mock_data makes random examples with the real GLUE features."""

import pytest

from bert_tf.data.tasks import classification
from bert_tf.data.tasks.tfds import TfdsProcessor

tfds = pytest.importorskip("tensorflow_datasets")


@pytest.fixture(autouse=True)
def mock_data():
    with tfds.testing.mock_data(num_examples=3):
        yield


def test_glue_mnli_with_tfds_names_and_splits():
    processor = TfdsProcessor("glue/mnli")
    assert processor.get_labels() == ["entailment", "neutral", "contradiction"]
    assert processor.dev_splits == ("validation_matched", "validation_mismatched")
    assert processor.submission_files == {"test_matched": "MNLI-m.tsv", "test_mismatched": "MNLI-mm.tsv"}
    examples = processor.get_examples(None, "validation_mismatched")
    assert len(examples) == 3 and all(e.guid.startswith("validation_mismatched-") for e in examples)
    assert all(isinstance(e.text_a, str) and isinstance(e.text_b, str) for e in examples)
    assert {e.label for e in examples} <= set(processor.get_labels())


def test_binary_glue_tasks_write_ids_to_the_leaderboard():
    processor = TfdsProcessor("glue/mrpc")
    assert processor.get_labels() == ["not_equivalent", "equivalent"]
    assert processor.leaderboard_labels == ("0", "1") and processor.metrics == ("f1", "accuracy")
    assert TfdsProcessor("glue/qnli").leaderboard_labels == ("entailment", "not_entailment")
    single = TfdsProcessor("glue/cola").get_train_examples(None)
    assert single[0].text_b is None and TfdsProcessor("glue/cola").metrics[0] == "mcc"


def test_stsb_is_regression_and_converts():
    processor = TfdsProcessor("glue/stsb")
    assert processor.is_regression and processor.metrics == ("pearson", "spearman")
    examples = processor.get_train_examples(None)
    assert all(isinstance(e.label, float) for e in examples)

    class Tokenizer:
        def tokenize(self, text):
            return text.split()

        def convert_tokens_to_ids(self, tokens):
            return [len(t) for t in tokens]

    features = classification.convert_examples(examples, [], 16, Tokenizer())
    assert features["label_ids"].dtype.name == "float32" and features["input_ids"].shape == (3, 16)


def test_bad_names():
    with pytest.raises(ValueError, match="name its text feature"):
        TfdsProcessor("imdb_reviews")
    with pytest.raises(ValueError, match=r"has no feature 'body'; it has \['label', 'text'\]"):
        TfdsProcessor("imdb_reviews", "body")
    with pytest.raises(ValueError, match="has no 'dev' split"):
        TfdsProcessor("glue/rte").get_examples(None, "dev")
