"""A whole SQuAD 1.1 / 2.0 fine-tuning and prediction run: what run_squad.py runs, callable from Python.
Training reads the windows of each question's context (cached as TFRecords keyed by their settings);
prediction writes the original's files and, when every question has answers, the official evaluation (with
`cmrc2018_evaluation`, CMRC 2018's beside SQuAD's: Chinese CMRC 2018 / DRCD data in SQuAD format). The
run's frame (checks, weights, training, best checkpoint) is `finetuning_run`'s.

    options = RunOptions(output_dir="out", config=config, vocab_file="vocab.txt", init_checkpoint="bert_dir",
                         max_seq_length=384, do_train=True, do_predict=True,
                         training=FineTuningOptions(train_batch_size=12, learning_rate=3e-5, num_train_epochs=2))
    evaluation = run_squad(options, SquadTask(train_file="train-v1.1.json", predict_file="dev-v1.1.json"))

Writes what the command writes in output_dir: model.ckpt-N, predictions.json, nbest_predictions.json,
null_odds.json (SQuAD 2.0) and eval_results.json, published as one set (`postprocess.write_predictions`).
"""

import dataclasses
import json

import numpy as np
from absl import logging

from bert_tf.data.squad import records as squad_records
from bert_tf.data.squad import tfds as squad_tfds
from bert_tf.data.squad.examples import iterate_questions, load_squad_json
from bert_tf.data.squad.postprocess import RawResult, compute_predictions, write_predictions
from bert_tf.evaluation import cmrc
from bert_tf.evaluation.squad import evaluate, missing_answers
from bert_tf.feature_schema import END_LOGITS, INPUT_NAMES, START_LOGITS
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.training import distribute, finetuning_run, inputs
from bert_tf.training.finetuning import TrainingInput

MODES = ("do_train", "do_predict")  # do_predict evaluates too when the predict file has answers


@dataclasses.dataclass
class SquadTask:
    """The task's questions, windows and answers; the original run_squad.py's settings and defaults.

    train_file, predict_file: SQuAD JSON files; or tfds_name (squad/v1.1, squad/v2.0: its train split trains,
      its validation split is predicted and evaluated, written as SQuAD JSON into output_dir) with data_dir,
      TFDS's data directory.
    doc_stride, max_query_length: contexts longer than a window become windows this many tokens apart;
      questions are cut to this many tokens. n_best_size, max_answer_length: the n-best answers kept and the
      longest answer, in tokens. version_2_with_negative, null_score_diff_threshold: SQuAD 2.0 (questions
      without an answer; predict none when null score - best score > the threshold).
    cache_dir: where the windows' TFRecords are cached (default: output_dir). head: the span labeler's head
      options ({}: the original linear layer).
    cmrc2018_evaluation: score the predictions with the CMRC 2018 evaluation too (evaluation/cmrc.py: character
      F1 and EM, for CMRC 2018 and DRCD): its AVERAGE, F1, EM, TOTAL and SKIP join SQuAD's keys (exact_match, f1
      or exact, f1, ...) in eval_results.json and in the dev results that best_metric reads (best_metric="F1":
      CMRC's F1). SQuAD 1.1-style data only (CMRC 2018 has no unanswerable questions); needs nltk.
    """
    train_file: str = None
    predict_file: str = None
    tfds_name: str = None
    data_dir: str = None
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    version_2_with_negative: bool = False
    null_score_diff_threshold: float = 0.0
    cache_dir: str = None
    head: dict = dataclasses.field(default_factory=dict)
    cmrc2018_evaluation: bool = False

    def check(self, options):
        """The original's `validate_flags_or_throw` for `options` (a RunOptions) and this task, as
        ValueErrors (the checks of every run: `finetuning_run.start`)."""
        if self.tfds_name:
            if self.train_file or self.predict_file:
                raise ValueError(f"tfds_name={self.tfds_name} replaces train_file and predict_file; pass either "
                                 "tfds_name or the files, not both")
            squad_tfds.check_tfds_squad(self.tfds_name, self.data_dir, self.version_2_with_negative)
        elif self.data_dir:
            raise ValueError(f"data_dir={self.data_dir} is TFDS's data directory: it needs tfds_name")
        if options.do_train and not (self.train_file or self.tfds_name):
            raise ValueError("If `do_train` is True, then `train_file` (or `tfds_name`) must be specified.")
        if (options.do_predict or options.best_metric) and not (self.predict_file or self.tfds_name):
            raise ValueError("If `do_predict` (or `best_metric`) is set, then `predict_file` (or `tfds_name`) must "
                             "be specified.")
        if options.max_seq_length <= self.max_query_length + 3:
            raise ValueError(f"The max_seq_length ({options.max_seq_length}) must be greater than max_query_length "
                             f"({self.max_query_length}) + 3")
        if self.cmrc2018_evaluation:
            if self.version_2_with_negative:
                raise ValueError("cmrc2018_evaluation scores answered questions only (CMRC 2018 has no "
                                 "unanswerable ones); it does not go with version_2_with_negative")
            cmrc.check_available()


class SquadRun:
    """One run's questions, prepared once per file, and what it computes from a FineTuner's predictions."""

    def __init__(self, options, task, tokenizer):
        self.options, self.task, self.tokenizer = options, task, tokenizer
        self._prediction_input = None

    def input_file(self, split):
        """The SQuAD JSON file (str) to read for `split` ("train" or "validation"): train_file / predict_file,
        or with tfds_name that TFDS split, written as SQuAD JSON into output_dir."""
        task = self.task
        if task.tfds_name:
            return squad_tfds.write_squad_json(task.tfds_name, split, self.options.output_dir, task.data_dir)
        return task.train_file if split == "train" else task.predict_file

    def prepare(self, path, is_training):
        task, options = self.task, self.options
        return squad_records.prepare_squad(
            path, self.tokenizer, task.cache_dir or options.output_dir, options.max_seq_length, task.doc_stride,
            task.max_query_length, is_training, task.version_2_with_negative)

    def training_input(self, tuner):
        """The TrainingInput of the training questions for `tuner` (a FineTuner): their windows, streamed from
        the cached records by tf.data, or read into memory first with group_by_length or for the Grain input."""
        prepared = self.prepare(self.input_file("train"), is_training=True)
        logging.info("Training on %d questions (%d skipped: no answer in their context), %d windows",
                     len(prepared.examples), len(prepared.skipped), prepared.num_features)
        max_seq_length, seed = self.options.max_seq_length, self.options.training.seed
        if self.options.training.group_by_length or inputs.kind_of(tuner.devices) == "grain":
            features = squad_records.read_training_features(prepared.record_file, max_seq_length)
            return tuner.in_memory_input(features, count=len(prepared.examples))
        widths = tuner.training_widths(max_seq_length)

        def dataset_fn(input_context, batch_size):
            from bert_tf.data.squad.pipeline import squad_dataset

            return squad_dataset(prepared.record_file, max_seq_length, True, batch_size, input_context, seed, widths)

        return TrainingInput(len(prepared.examples), dataset_fn, (max_seq_length,))

    def prediction_input(self):
        """(the predict file, its PreparedSquad, its windows' SquadFeatures, its SQuAD JSON), read once (also
        when best_metric evaluates it at every checkpoint)."""
        if self._prediction_input is None:
            predict_file = self.input_file("validation")
            prepared = self.prepare(predict_file, is_training=False)
            features = squad_records.read_prediction_features(prepared.record_file)
            self._prediction_input = predict_file, prepared, features, load_squad_json(predict_file)
        return self._prediction_input

    def predict(self, tuner):
        """(predictions, nbest, null_odds) of the predict file's questions (see compute_predictions). The
        windows run at the full max_seq_length: the n-best of a window ranks all its positions, padding
        included, as the original does, so cutting the padding could change nbest_predictions.json."""
        task, options = self.task, self.options
        _, prepared, features, _ = self.prediction_input()
        logging.info("***** Running predictions *****: %d examples, %d features, batch %d", len(prepared.examples),
                     len(features), options.predict_batch_size)
        inputs = {name: np.asarray([getattr(feature, name) for feature in features], np.int32)
                  for name in INPUT_NAMES}
        outputs = tuner.predict(inputs, options.predict_batch_size, unit="windows", trim=False)
        results = [RawResult(feature.unique_id, start, end)
                   for feature, start, end in zip(features, outputs[START_LOGITS], outputs[END_LOGITS])]
        return compute_predictions(
            prepared.examples, features, results, task.n_best_size, task.max_answer_length, options.do_lower_case,
            task.version_2_with_negative, task.null_score_diff_threshold)

    def evaluation_of(self, predictions, null_odds, quiet=False):
        """The SQuAD evaluation of `predictions` on the predict file, with cmrc2018_evaluation the CMRC 2018 one's
        keys beside it (ValueError naming the file when that fails); logged unless `quiet`."""
        predict_file, _, _, dataset_json = self.prediction_input()
        evaluation = evaluate(dataset_json, predictions, null_odds or None, predict_file)
        if self.task.cmrc2018_evaluation:
            evaluation.update(cmrc.evaluate(dataset_json, predictions, predict_file))
        if not quiet:
            logging.info("Evaluation of %s: %s", predict_file, json.dumps(evaluation))
        return evaluation

    def result_names(self):
        """The keys of `dev_results` (SQuAD v1.1's, v2.0's or with cmrc2018_evaluation also CMRC's), known
        before training: those of the evaluation of blank answers."""
        predict_file, _, _, dataset_json = self.prediction_input()
        blank = {qa["id"]: "" for _, qa in iterate_questions(dataset_json, predict_file)}
        return list(self.evaluation_of(blank, dict.fromkeys(blank, 0.0) if self.task.version_2_with_negative
                                       else None, quiet=True))

    def unlabelled(self):
        """None when every question of the predict file has answers to score against, else the line that says
        which do not (evaluation.squad.missing_answers)."""
        predict_file, _, _, dataset_json = self.prediction_input()
        return missing_answers(dataset_json, predict_file)

    def check_answers_for_best_metric(self):
        """ValueError naming the predict file unless all its questions have answers: best_metric evaluates it
        after every checkpoint. Checked before training."""
        missing = self.unlabelled()
        if missing:
            raise ValueError(f"best_metric={self.options.best_metric} evaluates the predict file, but {missing}")

    def dev_results(self, tuner):
        """The SQuAD evaluation of the current weights on the predict file (for best_metric, e.g. f1)."""
        predictions, _, null_odds = self.predict(tuner)
        return self.evaluation_of(predictions, null_odds)

    def predict_and_write(self, tuner):
        """The prediction set of the predict file published in output_dir (write_predictions), with
        eval_results.json when every question has answers; otherwise one log line says why not. Returns the
        evaluation (None without). When the evaluation fails (bad answers), the predictions are published
        without it and the error is raised."""
        predictions, nbest, null_odds = self.predict(tuner)
        evaluation, failure, missing = None, None, self.unlabelled()
        if missing:
            logging.info("Not evaluating the predictions: %s", missing)
        else:
            try:
                evaluation = self.evaluation_of(predictions, null_odds)
            except ValueError as e:
                failure = e
        path = write_predictions(self.options.output_dir, predictions, nbest, null_odds, evaluation)
        if failure:
            raise ValueError(f"{failure} (the predictions are written: {path})") from failure
        return evaluation


def run_squad(options, task, strategy=None, config_name="the config"):
    """Runs `options` (a finetuning_run.RunOptions; do_train and do_predict, which evaluates when the predict
    file has answers) on `task` (a SquadTask) under `strategy` (default: `distribute.current_strategy()`).
    Returns the evaluation of the predictions (eval_results.json's dict), or None when there is none."""
    strategy = strategy or distribute.current_strategy()
    tokenizer = finetuning_run.start(options, strategy, MODES, config_name, segments=2)  # question and context
    task.check(options)
    run = SquadRun(options, task, tokenizer)
    if options.do_train and options.best_metric:
        run.check_answers_for_best_metric()
        finetuning_run.check_best_metric(options, run.result_names())
    tuner = finetuning_run.create_finetuner(options, strategy, lambda: BertSpanLabeler(options.config, **task.head))
    if options.do_train:
        finetuning_run.train(tuner, options, run.training_input(tuner), lambda: run.dev_results(tuner))
    if options.do_predict and tuner.is_chief:
        return run.predict_and_write(tuner)
    return None
