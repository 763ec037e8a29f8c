"""Classification data from TensorFlow Datasets (`tensorflow-datasets`, optional): GLUE by its TFDS name, with
TFDS's feature names and label order, or any TFDS text classification set with named features.

    processor = TfdsProcessor("glue/mrpc")          # sentence1, sentence2 -> not_equivalent / equivalent
    processor = TfdsProcessor("imdb_reviews", "text")

TFDS downloads and prepares the data on first use (network needed) into `data_dir` (TFDS's default when
None). Its label order is not the GLUE TSV files' (MNLI: entailment, neutral, contradiction), so a model
fine-tuned from one source predicts other ids than one fine-tuned from the other; the leaderboard files are
the same (`leaderboard_labels`).
"""

from bert_tf.data.tasks import glue as glue_tasks
from bert_tf.data.tasks.classification import DataProcessor, InputExample

# GLUE config -> (text_a feature, text_b feature); dev / test splits where they are not "validation" / "test".
GLUE_FEATURES = {"cola": ("sentence", None), "sst2": ("sentence", None), "mrpc": ("sentence1", "sentence2"),
                 "qqp": ("question1", "question2"), "stsb": ("sentence1", "sentence2"),
                 "mnli": ("premise", "hypothesis"), "qnli": ("question", "sentence"),
                 "rte": ("sentence1", "sentence2"), "wnli": ("sentence1", "sentence2"), "ax": ("premise", "hypothesis")}
GLUE_SPLITS = {"mnli": (("validation_matched", "validation_mismatched"), ("test_matched", "test_mismatched")),
               "ax": ((), ("test",))}


def import_tfds():
    """The `tensorflow_datasets` module, imported on first use (it is optional); ValueError saying how to
    install it when it is missing."""
    try:
        import tensorflow_datasets
    except ImportError:
        raise ValueError("TFDS input needs the tensorflow-datasets package: pip install tensorflow-datasets") from None
    return tensorflow_datasets


class TfdsProcessor(DataProcessor):
    """A TFDS data set as a classification task.

    Args:
      name: the TFDS name, e.g. "glue/mnli" or "imdb_reviews" (a version may follow: "glue/mrpc:2.0.0").
      text_a_feature, text_b_feature: the text features (for glue/*: TFDS's GLUE features by default).
      label_feature: a ClassLabel (its names are the labels) or a float feature (regression).
      data_dir: TFDS's data directory (None: its default).
    GLUE configs take the GLUE task's metrics and leaderboard file names; other sets report accuracy
    (regression: Pearson, Spearman) and evaluate on "validation", predict on "test".
    """

    def __init__(self, name, text_a_feature=None, text_b_feature=None, label_feature="label", data_dir=None):
        tfds = import_tfds()
        self.name, self.data_dir = name, data_dir
        family, _, config = name.partition(":")[0].partition("/")
        glue = family == "glue" and config in GLUE_FEATURES
        if glue and text_a_feature is None:
            text_a_feature, text_b_feature = GLUE_FEATURES[config]
        if text_a_feature is None:
            raise ValueError(f"TFDS data set {name!r}: name its text feature(s) (text_a_column)")
        features = tfds.builder(name, data_dir=data_dir).info.features
        missing = [f for f in (text_a_feature, text_b_feature, label_feature) if f is not None and f not in features]
        if missing:
            raise ValueError(f"TFDS data set {name!r} has no feature {missing[0]!r}; it has {sorted(features.keys())}")
        self.features = (text_a_feature, text_b_feature, label_feature)
        self.labels = tuple(getattr(features[label_feature], "names", ()))
        self.metrics = ("pearson", "spearman") if not self.labels else ("accuracy",)
        self.dev_splits, self.test_splits = ("validation",), ("test",)
        self.submission_files = {}
        self._leaderboard_labels = self.labels
        if glue:
            task = glue_tasks.get_processor(config)
            self.metrics = task.metrics
            self.dev_splits, self.test_splits = GLUE_SPLITS.get(config, (self.dev_splits, self.test_splits))
            self.submission_files = dict(zip(self.test_splits, task.submission_files.values()))
            if task.labels == glue_tasks.BINARY:  # the leaderboard wants 0/1 where TFDS has names
                self._leaderboard_labels = task.labels
        self.layouts = {split: None for split in ("train",) + self.dev_splits + self.test_splits}

    @property
    def leaderboard_labels(self):
        return self._leaderboard_labels

    def get_examples(self, data_dir, split):
        """The examples of a TFDS split; `data_dir` is ignored (the constructor's is used). Guids use TFDS's
        `idx` feature when there is one; label -1 (GLUE's hidden test labels) becomes None."""
        if split not in self.layouts:
            raise ValueError(f"{self.name} has no {split!r} split here; it has {sorted(self.layouts)}")
        tfds = import_tfds()
        text_a, text_b, label = self.features
        examples = []
        for index, row in enumerate(tfds.as_numpy(tfds.load(self.name, split=split, data_dir=self.data_dir))):
            value = row[label].item()
            if self.labels:
                value = None if value < 0 else self.labels[value]
            examples.append(InputExample(f"{split}-{row['idx'] if 'idx' in row else index}",
                                         row[text_a].decode("utf-8"),
                                         None if text_b is None else row[text_b].decode("utf-8"), value))
        if not examples:
            raise ValueError(f"{self.name}: no examples in the {split} split")
        return examples
