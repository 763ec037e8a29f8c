"""A whole sentence(-pair) classification or regression fine-tuning run: what run_classifier.py runs,
callable from Python. The task is a GLUE / XNLI task, a CLUE task or ChnSentiCorp, your own table files
(`task_name="custom"`) or a TensorFlow Datasets set (`tfds_name`); the run's frame (checks, weights, training,
best checkpoint) is `finetuning_run`'s.

    options = RunOptions(output_dir="out", config=config, vocab_file="vocab.txt", init_checkpoint="bert_dir",
                         do_train=True, do_eval=True, training=FineTuningOptions(num_train_epochs=2))
    results = run_classifier(options, ClassifierTask(data_dir="glue/MRPC", task_name="mrpc"))

Writes what the command writes in output_dir: model.ckpt-N, eval_results.txt, labels.txt, test_results.tsv
and a GLUE or CLUE task's leaderboard file.
"""

import dataclasses
import os

from absl import logging

from bert_tf import run_directory
from bert_tf.data import packing, windows
from bert_tf.data.tasks import classification
from bert_tf.data.tasks import clue as clue_tasks
from bert_tf.data.tasks import glue as glue_tasks
from bert_tf.data.tasks import tfds as tfds_tasks
from bert_tf.evaluation import glue_metrics
from bert_tf.evaluation.probabilities import softmax
from bert_tf.feature_schema import LABEL_IDS
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.document_classifier import BertDocumentClassifier
from bert_tf.training import distribute, finetuning_run


@dataclasses.dataclass
class ClassifierTask:
    """The task's data and head.

    data_dir: the folder of its train/dev/test files (TFDS: where the set is written).
    task_name: a GLUE task (cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli, ax), xnli, a Chinese task
      (clue.PROCESSORS: afqmc, tnews, iflytek, cmnli, ocnli, csl, cluewsc2020, chnsenticorp), or custom: your
      own train/dev/test .tsv/.csv/.jsonl files read by columns; or tfds_name: a TensorFlow Datasets set
      (one of the two).
    text_a_column, text_b_column, label_column, id_column, label_list, regression: custom (and non-GLUE TFDS)
      tasks: the columns, the labels in label-id order (default: the sorted labels of train.*), numeric labels.
    xnli_language: xnli's language. truncation: which pieces of a long single text are kept
      (classification.TRUNCATIONS), or "windows": every piece, the text read whole through windows `doc_stride`
      pieces apart (None: half a window), at most `max_windows` per document, and classified by
      BertDocumentClassifier's `window_aggregation`. head: the task model's head options ({}: the original linear
      layer; {"task_head": "bilstm", "bilstm_size": ..., "bilstm_layers": ...}).
    """
    data_dir: str
    task_name: str = None
    tfds_name: str = None
    text_a_column: str = "text"
    text_b_column: str = None
    label_column: str = "label"
    id_column: str = None
    label_list: list = None
    regression: bool = False
    xnli_language: str = "zh"
    truncation: str = "head"
    doc_stride: int = None
    max_windows: int = 16
    window_aggregation: str = "mean"
    head: dict = dataclasses.field(default_factory=dict)

    @property
    def windows(self):
        return self.truncation == classification.WINDOWS

    def stride(self, max_seq_length):
        """The windows' stride (doc_stride, or half a window); ValueError for window settings without windows."""
        if not self.windows:
            for name in ("doc_stride", "max_windows", "window_aggregation"):
                if getattr(self, name) != ClassifierTask.__dataclass_fields__[name].default:
                    raise ValueError(f"{name}={getattr(self, name)} is for truncation=windows")
            return None
        stride = (max_seq_length - 2) // 2 if self.doc_stride is None else self.doc_stride
        windows.check_stride(max_seq_length - 2, stride)
        if self.max_windows < 1:
            raise ValueError(f"max_windows={self.max_windows} must be >= 1 (windows read per document)")
        return stride

    def model(self, config, num_labels, max_seq_length):
        """BertDocumentClassifier for windows (recording the stride at `max_seq_length`), else BertClassifier,
        with the head options."""
        if self.windows:
            return BertDocumentClassifier(config, num_labels, self.window_aggregation,
                                          doc_stride=self.stride(max_seq_length), max_windows=self.max_windows,
                                          **self.head)
        return BertClassifier(config, num_labels, **self.head)

    def processor(self):
        """The DataProcessor of the task (its labels, splits, metrics; custom tasks infer their labels)."""
        if (self.task_name is None) == (self.tfds_name is None):
            raise ValueError("pass one of task_name and tfds_name")
        if self.tfds_name:
            text_a = None if self.tfds_name.startswith("glue/") else self.text_a_column
            return tfds_tasks.TfdsProcessor(self.tfds_name, text_a, self.text_b_column, self.label_column,
                                            self.data_dir)
        name = self.task_name.lower()
        if name == "custom":
            processor = classification.ColumnProcessor(self.text_a_column, self.text_b_column, self.label_column,
                                                       self.id_column, self.label_list, self.regression)
            processor.infer_labels(self.data_dir)
            return processor
        if name in clue_tasks.PROCESSORS:
            return clue_tasks.PROCESSORS[name]()
        try:
            return glue_tasks.get_processor(name, **({"language": self.xnli_language} if name == "xnli" else {}))
        except glue_tasks.UnknownTaskError as e:
            raise ValueError(f"{e}, a Chinese task ({', '.join(clue_tasks.PROCESSORS)}), or custom: task_name=custom "
                             "reads your own train/dev/test files (.tsv, .csv or .jsonl in data_dir) with "
                             "text_a_column, text_b_column, label_column") from None


class ClassifierRun:
    """One run's task data, read once per split, and what it computes from a FineTuner's predictions."""

    def __init__(self, options, task, tokenizer):
        self.options, self.task, self.tokenizer = options, task, tokenizer
        self.processor = task.processor()
        self._features = {}

    def features_of(self, split):
        """(examples, features) of `split`, read and converted once."""
        if split not in self._features:
            examples = self.processor.get_examples(self.task.data_dir, split)
            if any(example.text_b for example in examples):
                packing.check_max_seq_length(self.options.max_seq_length, segments=2)
            if self.task.windows:
                features = classification.convert_documents(
                    examples, self.processor.get_labels(), self.options.max_seq_length, self.tokenizer,
                    self.task.stride(self.options.max_seq_length), self.task.max_windows)
            else:
                features = classification.convert_examples(
                    examples, self.processor.get_labels(), self.options.max_seq_length, self.tokenizer,
                    self.task.truncation)
            self._features[split] = examples, features
        return self._features[split]

    def splits_used(self):
        """The splits this run reads: train (do_train), the dev splits (do_eval, or best_metric while
        training), the test splits (do_predict)."""
        options = self.options
        splits = ["train"] if options.do_train else []
        if options.do_eval or (options.do_train and options.best_metric):
            splits += self.processor.dev_splits
        if options.do_predict:
            splits += self.processor.test_splits
        return splits

    def _per_class_labels(self):
        """The label names whose per-class F1 the dev results report: a user's own task's (no class is "the
        positive one"), else None."""
        own_task = isinstance(self.processor, classification.ColumnProcessor)
        return self.processor.get_labels() if own_task and not self.processor.is_regression else None

    def evaluate(self, tuner, split):
        """{metric: value} of the model on one dev split: loss, accuracy and the processor's metrics."""
        examples, features = self.features_of(split)
        outputs = tuner.predict(features, self.options.eval_batch_size)
        logging.info("%s: %d examples", split, len(examples))
        if self.processor.is_regression:
            return glue_metrics.regression_results(outputs[:, 0], features[LABEL_IDS], self.processor.metrics)
        return glue_metrics.logits_results(outputs, features[LABEL_IDS], self.processor.metrics,
                                           self._per_class_labels())

    def _result_prefix(self, split):
        """The prefix of a dev split's keys in eval_results.txt: eval_ (the first), eval_<name>_ (MNLI's
        dev_mismatched: eval_mismatched_)."""
        return "eval_" if split == self.processor.dev_splits[0] else f"eval_{split.rsplit('_', 1)[1]}_"

    def dev_results(self, tuner):
        """eval_results.txt's dict: every dev split's metrics (eval_*, MNLI's mismatched eval_mismatched_*)."""
        processor = self.processor
        if not processor.dev_splits:
            raise ValueError(f"task {self.task.task_name or self.task.tfds_name} has no dev set; use do_predict")
        results = {"global_step": tuner.global_step}
        for split in processor.dev_splits:
            results.update({self._result_prefix(split) + k: v for k, v in self.evaluate(tuner, split).items()})
        results["loss"] = results["eval_loss"]
        return results

    def result_names(self):
        """The keys of `dev_results`, known before training."""
        names = glue_metrics.result_names(self.processor.metrics, self._per_class_labels(),
                                          self.processor.is_regression)
        return ["global_step", "loss"] + [self._result_prefix(split) + name
                                          for split in self.processor.dev_splits for name in names]

    def predict(self, tuner, split):
        """Writes test_results.tsv (probabilities or scores) and, for a GLUE or CLUE task, the leaderboard file
        (the processor's write_submission, GLUE's by default)."""
        processor, output_dir = self.processor, self.options.output_dir
        examples, features = self.features_of(split)
        outputs = tuner.predict(features, self.options.predict_batch_size)
        suffix = "" if split == processor.test_splits[0] else split.rsplit("_", 1)[1] + "_"
        if processor.is_regression:
            rows, predictions = outputs[:, :1], outputs[:, 0]
        else:
            rows = softmax(outputs)
            predictions = [processor.leaderboard_labels[i] for i in outputs.argmax(-1)]
        run_directory.write_test_results(output_dir, rows, f"test_{suffix}results.tsv")
        logging.info("Wrote test_%sresults.tsv: a line per test example (%d), no header; columns: %s", suffix,
                     len(rows), processor.results_columns())
        submission = getattr(processor, "submission_files", {}).get(split)
        if submission:
            write_submission = getattr(processor, "write_submission", glue_tasks.write_submission)
            write_submission(os.path.join(output_dir, submission), examples, predictions)
            logging.info("Wrote the leaderboard file %s", submission)


def run_classifier(options, task, strategy=None, config_name="the config"):
    """Runs `options` (a finetuning_run.RunOptions) on `task` (a ClassifierTask) under `strategy` (default:
    `distribute.current_strategy()`): every file read and checked before any model is built, then training, evaluation
    (written to eval_results.txt) and prediction as the options ask. Returns the final dev results, or None
    without do_eval. config_name: what a checkpoint that does not fit calls the config."""
    task.stride(options.max_seq_length)  # window settings without windows fail before anything is read
    strategy = strategy or distribute.current_strategy()
    tokenizer = finetuning_run.start(options, strategy, config_name=config_name)
    run = ClassifierRun(options, task, tokenizer)
    processor = run.processor
    for split in run.splits_used():  # every file read and checked before any model is built
        examples, _ = run.features_of(split)
        if split in processor.dev_splits:
            classification.check_scorable(examples, split)
    finetuning_run.check_best_metric(options, run.result_names())
    num_labels = 1 if processor.is_regression else len(processor.get_labels())
    if not processor.is_regression:
        run_directory.write_labels(options.output_dir, processor.get_labels())
    tuner = finetuning_run.create_finetuner(
        options, strategy, lambda: task.model(options.config, num_labels, options.max_seq_length))
    results = finetuning_run.train_and_evaluate(tuner, options, lambda: run.features_of("train")[1],
                                                lambda: run.dev_results(tuner))
    if options.do_predict:
        for split in processor.test_splits:
            run.predict(tuner, split)
    return results
