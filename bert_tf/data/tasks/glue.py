"""The GLUE tasks (Wang et al. 2019) and XNLI, read from the files of GLUE's `download_glue_data.py` layout.

Each processor knows its files, label list, metrics and leaderboard file name. Columns are found by their
header names, so the different layouts of a task's train/dev/test files (MNLI's dev files have five label
columns, test files have none) need no positions; CoLA's train/dev files have no header and are read by
position, as in the original. Label lists and their order are the original `run_classifier.py`'s where it
has the task (so its fine-tuned checkpoints predict the same ids).

    processor = get_processor("mrpc")
    examples = processor.get_train_examples("glue_data/MRPC")
"""

import os

from bert_tf import atomic_io
from bert_tf.data.tasks.classification import DataProcessor, Layout

NLI_LABELS = ("contradiction", "entailment", "neutral")
BINARY = ("0", "1")
ENTAILMENT = ("entailment", "not_entailment")


class ColaProcessor(DataProcessor):
    """CoLA: single sentences, acceptable (1) or not (0); Matthews correlation. train/dev.tsv have no
    header: source, label, original label, sentence."""
    labels, metrics = BINARY, ("mcc", "accuracy")
    layouts = {"train": Layout("train.tsv", 3, label=1, num_columns=4),
               "dev": Layout("dev.tsv", 3, label=1, num_columns=4),
               "test": Layout("test.tsv", "sentence", guid="index")}
    submission_files = {"test": "CoLA.tsv"}


class Sst2Processor(DataProcessor):
    """SST-2: single sentences, positive (1) or negative (0) sentiment; accuracy."""
    labels = BINARY
    layouts = {"train": Layout("train.tsv", "sentence", label="label"),
               "dev": Layout("dev.tsv", "sentence", label="label"),
               "test": Layout("test.tsv", "sentence", guid="index")}
    submission_files = {"test": "SST-2.tsv"}


class MrpcProcessor(DataProcessor):
    """MRPC: sentence pairs, paraphrase (1) or not (0); F1 and accuracy."""
    labels, metrics = BINARY, ("f1", "accuracy")
    layouts = {"train": Layout("train.tsv", "#1 String", "#2 String", label="Quality"),
               "dev": Layout("dev.tsv", "#1 String", "#2 String", label="Quality"),
               "test": Layout("test.tsv", "#1 String", "#2 String", guid="index")}
    submission_files = {"test": "MRPC.tsv"}


class StsbProcessor(DataProcessor):
    """STS-B: sentence pairs with a similarity score in [0, 5] (regression); Pearson and Spearman."""
    labels, metrics = (), ("pearson", "spearman")
    layouts = {"train": Layout("train.tsv", "sentence1", "sentence2", label="score", guid="index"),
               "dev": Layout("dev.tsv", "sentence1", "sentence2", label="score", guid="index"),
               "test": Layout("test.tsv", "sentence1", "sentence2", guid="index")}
    submission_files = {"test": "STS-B.tsv"}


class QqpProcessor(DataProcessor):
    """QQP: question pairs, duplicate (1) or not (0); F1 and accuracy."""
    labels, metrics = BINARY, ("f1", "accuracy")
    layouts = {"train": Layout("train.tsv", "question1", "question2", label="is_duplicate", guid="id"),
               "dev": Layout("dev.tsv", "question1", "question2", label="is_duplicate", guid="id"),
               "test": Layout("test.tsv", "question1", "question2", guid="id")}
    submission_files = {"test": "QQP.tsv"}


class MnliProcessor(DataProcessor):
    """MultiNLI: premise/hypothesis pairs, 3 classes; accuracy on the matched and the mismatched dev sets."""
    labels = NLI_LABELS
    layouts = {"train": Layout("train.tsv", "sentence1", "sentence2", label="gold_label", guid="index"),
               "dev_matched": Layout("dev_matched.tsv", "sentence1", "sentence2", label="gold_label", guid="index"),
               "dev_mismatched": Layout("dev_mismatched.tsv", "sentence1", "sentence2", label="gold_label",
                                        guid="index"),
               "test_matched": Layout("test_matched.tsv", "sentence1", "sentence2", guid="index"),
               "test_mismatched": Layout("test_mismatched.tsv", "sentence1", "sentence2", guid="index")}
    dev_splits = ("dev_matched", "dev_mismatched")
    test_splits = ("test_matched", "test_mismatched")
    submission_files = {"test_matched": "MNLI-m.tsv", "test_mismatched": "MNLI-mm.tsv"}


class AxProcessor(DataProcessor):
    """AX, GLUE's diagnostic set (`diagnostic/diagnostic.tsv`): NLI pairs without public labels, predicted
    by a model fine-tuned on MNLI (same labels); test only."""
    labels = NLI_LABELS
    layouts = {"test": Layout("diagnostic.tsv", "sentence1", "sentence2", guid="index")}
    dev_splits = ()
    submission_files = {"test": "AX.tsv"}


class QnliProcessor(DataProcessor):
    """QNLI: (question, sentence) pairs, does the sentence answer the question; accuracy."""
    labels = ENTAILMENT
    layouts = {"train": Layout("train.tsv", "question", "sentence", label="label", guid="index"),
               "dev": Layout("dev.tsv", "question", "sentence", label="label", guid="index"),
               "test": Layout("test.tsv", "question", "sentence", guid="index")}
    submission_files = {"test": "QNLI.tsv"}


class RteProcessor(DataProcessor):
    """RTE: sentence pairs, entailment or not; accuracy."""
    labels = ENTAILMENT
    layouts = {"train": Layout("train.tsv", "sentence1", "sentence2", label="label", guid="index"),
               "dev": Layout("dev.tsv", "sentence1", "sentence2", label="label", guid="index"),
               "test": Layout("test.tsv", "sentence1", "sentence2", guid="index")}
    submission_files = {"test": "RTE.tsv"}


class WnliProcessor(RteProcessor):
    """WNLI: sentence pairs (Winograd schemas), entailment (1) or not (0); accuracy."""
    labels = BINARY
    submission_files = {"test": "WNLI.tsv"}


class XnliProcessor(DataProcessor):
    """XNLI (Conneau et al. 2018) as the original reads it: training on the machine-translated MultiNLI of
    one language (`multinli/multinli.train.<language>.tsv`, label "contradictory" read as "contradiction"),
    evaluation on that language's rows of `xnli.dev.tsv` / `xnli.test.tsv`. The original fixes language="zh".
    """
    labels = NLI_LABELS

    def __init__(self, language="zh"):
        self.language = language
        self.layouts = {
            "train": Layout(os.path.join("multinli", f"multinli.train.{language}.tsv"), "premise", "hypo",
                            label="label"),
            "dev": Layout("xnli.dev.tsv", "sentence1", "sentence2", label="gold_label"),
            "test": Layout("xnli.test.tsv", "sentence1", "sentence2", label="gold_label")}

    def get_examples(self, data_dir, split):
        if split != "train":
            return self._read(data_dir, split, self.labels, only=("language", self.language))
        examples = self._read(data_dir, split, self.labels + ("contradictory",))
        for example in examples:
            if example.label == "contradictory":
                example.label = "contradiction"
        return examples


PROCESSORS = {"cola": ColaProcessor, "sst-2": Sst2Processor, "sst2": Sst2Processor, "mrpc": MrpcProcessor,
              "sts-b": StsbProcessor, "stsb": StsbProcessor, "qqp": QqpProcessor, "mnli": MnliProcessor,
              "qnli": QnliProcessor, "rte": RteProcessor, "wnli": WnliProcessor, "ax": AxProcessor,
              "xnli": XnliProcessor}


class UnknownTaskError(ValueError):
    """get_processor's error for a task name that is none of PROCESSORS (the message lists them; a command
    adds its own way out, such as run_classifier.py's custom task for other files)."""


def get_processor(task_name, **kwargs):
    """The processor of a task name (case-insensitive; `sst-2`/`sst2` and `sts-b`/`stsb` both work);
    kwargs go to its constructor (XNLI: language). UnknownTaskError for another name."""
    name = task_name.lower()
    if name not in PROCESSORS:
        raise UnknownTaskError(f"unknown task {task_name!r}; expected one of {', '.join(sorted(PROCESSORS))}")
    return PROCESSORS[name](**kwargs)


def write_submission(path, examples, predictions):
    """Writes a GLUE leaderboard file: header `index<TAB>prediction`, then one row per test example: its
    id (the test file's index column) and the predicted label name, or the score rounded to 3 decimals
    for regression (`predictions` float)."""
    if len(examples) != len(predictions):
        raise ValueError(f"{len(examples)} examples but {len(predictions)} predictions")
    with atomic_io.atomic_write(path) as f:
        f.write("index\tprediction\n")
        for example, prediction in zip(examples, predictions):
            value = prediction if isinstance(prediction, str) else f"{float(prediction):.3f}"
            f.write(f"{example.guid.rsplit('-', 1)[1]}\t{value}\n")
