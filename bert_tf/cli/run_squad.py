"""Fine-tune BERT on SQuAD 1.1 / 2.0 and predict answers, with the original run_squad.py's flags and files.

    python run_squad.py --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_train=True --train_file=$SQUAD_DIR/train-v1.1.json \
      --do_predict=True --predict_file=$SQUAD_DIR/dev-v1.1.json --train_batch_size=12 --learning_rate=3e-5 \
      --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base/

writes `predictions.json`, `nbest_predictions.json`, for SQuAD 2.0 (`--version_2_with_negative`)
`null_odds.json`, and, when every question of the predict file has answers (or, SQuAD 2.0, `is_impossible:
true`), `eval_results.json` with the official evaluation script's numbers (`bert-tf-evaluate-squad` does the
same on files). A predict file without answers (a test set) gets its predictions and a log line saying why
it was not evaluated, as the original's predict mode, which never reads answers. These files are published
as one set (postprocess.write_predictions): the new ones are written under temporary names, the previous
run's set is removed, and the new files are renamed in with `predictions.json` last, so `predictions.json`
is present only beside the complete set of the run that wrote it. New flags beside the
original's: the training ones of training_flags.py (`--distribution_strategy`, `--num_gpus`,
`--mixed_precision`, `--use_xla`, `--optimizer`, `--num_accumulation_steps`, `--seed`), `--cache_dir`
(features are cached as TFRecords keyed by their settings, so a second run skips the conversion),
`--tfds_name` and `--data_dir` (TensorFlow Datasets input: `--tfds_name=squad/v1.1` or `squad/v2.0`
instead of --train_file and --predict_file), and those of every fine-tuning script (finetuning_flags.py):
`--best_metric=f1` evaluates --predict_file after every checkpoint and keeps the best weights in
output_dir/best/, `--early_stopping_patience` stops when it no longer improves. Rerunning a killed command
resumes from its last checkpoint.
"""

import functools
import json

import numpy as np
from absl import flags, logging

from bert_tf.cli import finetuning_flags, scripting
from bert_tf.data.squad import records as squad_records
from bert_tf.data.squad import tfds as squad_tfds
from bert_tf.data.squad.examples import load_squad_json
from bert_tf.data.squad.postprocess import RawResult, compute_predictions, write_predictions
from bert_tf.evaluation.squad import evaluate, missing_answers
from bert_tf.feature_schema import END_LOGITS, INPUT_NAMES, START_LOGITS
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.training import finetuning_run
from bert_tf.training.finetuning import TrainingInput

FLAGS = flags.FLAGS
flags.adopt_module_key_flags(finetuning_flags)  # its flags in --help, not only in --helpfull
FLAGS.set_default("max_seq_length", 384)  # the original run_squad.py's default; longer contexts become windows
flags.DEFINE_string("train_file", None, "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string("predict_file", None, "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
flags.DEFINE_integer("doc_stride", 128, "When splitting up a long document into chunks, how much stride to "
                     "take between chunks.")
flags.DEFINE_integer("max_query_length", 64, "The maximum number of tokens for the question. Questions longer "
                     "than this will be truncated to this length.")
flags.DEFINE_integer("n_best_size", 20, "The total number of n-best predictions to generate in the "
                     "nbest_predictions.json output file.")
flags.DEFINE_integer("max_answer_length", 30, "The maximum length of an answer that can be generated.")
flags.DEFINE_bool("verbose_logging", False, "Log the failures of mapping predictions back to the original text.")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: some questions have no answer.")
flags.DEFINE_float("null_score_diff_threshold", 0.0, "SQuAD 2.0: predict null if null_score - best_non_null > "
                   "this threshold.")
# New flags.
flags.DEFINE_string("cache_dir", None, "Where the feature TFRecords are cached (default: --output_dir).")
flags.DEFINE_string("tfds_name", None, "Instead of --train_file and --predict_file: a TensorFlow Datasets name "
                    "(squad/v1.1, squad/v2.0) whose train split trains and validation split is predicted and "
                    "evaluated, written as SQuAD JSON into --output_dir. Needs tensorflow-datasets and, the first "
                    "time, network.")
MODES = ("do_train", "do_predict")  # --do_predict evaluates too when the predict file has answers


def validate_flags():
    """The original's `validate_flags_or_throw`, as ValueErrors (the common checks: finetuning_flags.setup)."""
    if FLAGS.tfds_name:
        if FLAGS.train_file or FLAGS.predict_file:
            raise ValueError(f"--tfds_name={FLAGS.tfds_name} replaces --train_file and --predict_file; pass "
                             "either --tfds_name or the files, not both")
        squad_tfds.check_tfds_squad(FLAGS.tfds_name, FLAGS.data_dir, FLAGS.version_2_with_negative)
    elif FLAGS.data_dir:
        raise ValueError(f"--data_dir={FLAGS.data_dir} is TFDS's data directory: it needs --tfds_name")
    if FLAGS.do_train and not (FLAGS.train_file or FLAGS.tfds_name):
        raise ValueError("If `do_train` is True, then `train_file` (or `tfds_name`) must be specified.")
    if (FLAGS.do_predict or FLAGS.best_metric) and not (FLAGS.predict_file or FLAGS.tfds_name):
        raise ValueError("If `do_predict` (or `best_metric`) is set, then `predict_file` (or `tfds_name`) must be "
                         "specified.")
    if FLAGS.max_seq_length <= FLAGS.max_query_length + 3:
        raise ValueError(f"The max_seq_length ({FLAGS.max_seq_length}) must be greater than max_query_length "
                         f"({FLAGS.max_query_length}) + 3")


def input_file(split):
    """The SQuAD JSON file (str) to read for `split` ("train" or "validation"): --train_file / --predict_file,
    or with --tfds_name that TFDS split, written as SQuAD JSON into --output_dir."""
    if FLAGS.tfds_name:
        return squad_tfds.write_squad_json(FLAGS.tfds_name, split, FLAGS.output_dir, FLAGS.data_dir)
    return FLAGS.train_file if split == "train" else FLAGS.predict_file


def prepare(path, tokenizer, is_training):
    return squad_records.prepare_squad(
        path, tokenizer, FLAGS.cache_dir or FLAGS.output_dir, FLAGS.max_seq_length, FLAGS.doc_stride,
        FLAGS.max_query_length, is_training, FLAGS.version_2_with_negative)


def training_input(tokenizer):
    """The TrainingInput of the training questions: their windows, from the cached records."""
    prepared = prepare(input_file("train"), tokenizer, is_training=True)
    logging.info("Training on %d questions (%d skipped: no answer in their context), %d windows",
                 len(prepared.examples), len(prepared.skipped), prepared.num_features)

    def dataset_fn(input_context, batch_size):
        return squad_records.squad_dataset(prepared.record_file, FLAGS.max_seq_length, True, batch_size,
                                           input_context, FLAGS.seed)

    return TrainingInput(len(prepared.examples), dataset_fn, (FLAGS.max_seq_length,))


@functools.cache  # read once, also when --best_metric evaluates it at every checkpoint
def prediction_input(tokenizer):
    """(the predict file, its PreparedSquad, its windows' SquadFeatures, its SQuAD JSON)."""
    predict_file = input_file("validation")
    prepared = prepare(predict_file, tokenizer, is_training=False)
    features = squad_records.read_prediction_features(prepared.record_file)
    return predict_file, prepared, features, load_squad_json(predict_file)


def predict(tuner, tokenizer, batch_size):
    """(predictions, nbest, null_odds) of the predict file's questions (see compute_predictions). The windows
    run at the full --max_seq_length: the n-best of a window ranks all its positions, padding included, as
    the original does, so cutting the padding could change nbest_predictions.json."""
    _, prepared, features, _ = prediction_input(tokenizer)
    logging.info("***** Running predictions *****: %d examples, %d features, batch %d", len(prepared.examples),
                 len(features), batch_size)
    inputs = {name: np.asarray([getattr(feature, name) for feature in features], np.int32) for name in INPUT_NAMES}
    outputs = tuner.predict(inputs, batch_size, unit="windows", trim=False)
    results = [RawResult(feature.unique_id, start, end)
               for feature, start, end in zip(features, outputs[START_LOGITS], outputs[END_LOGITS])]
    return compute_predictions(
        prepared.examples, features, results, FLAGS.n_best_size, FLAGS.max_answer_length, FLAGS.do_lower_case,
        FLAGS.version_2_with_negative, FLAGS.null_score_diff_threshold)


def evaluation_of(tokenizer, predictions, null_odds):
    """The SQuAD evaluation of `predictions` on the predict file (ValueError naming it when that fails)."""
    predict_file, _, _, dataset_json = prediction_input(tokenizer)
    evaluation = evaluate(dataset_json, predictions, null_odds or None, predict_file)
    logging.info("Evaluation of %s: %s", predict_file, json.dumps(evaluation))
    return evaluation


def unlabelled(tokenizer):
    """None when every question of the predict file has answers to score against, else the line that says
    which do not (evaluation.squad.missing_answers)."""
    predict_file, _, _, dataset_json = prediction_input(tokenizer)
    return missing_answers(dataset_json, predict_file)


def check_answers_for_best_metric(tokenizer):
    """ValueError naming the predict file unless all its questions have answers: --best_metric evaluates it
    after every checkpoint. Checked before training."""
    missing = unlabelled(tokenizer)
    if missing:
        raise ValueError(f"--best_metric={FLAGS.best_metric} evaluates the predict file, but {missing}")


def dev_results(tuner, tokenizer):
    """The SQuAD evaluation of the current weights on --predict_file (for --best_metric, e.g. f1)."""
    predictions, _, null_odds = predict(tuner, tokenizer, FLAGS.predict_batch_size)
    return evaluation_of(tokenizer, predictions, null_odds)


def predict_and_write(tuner, tokenizer):
    """--do_predict: the prediction set of the predict file published in --output_dir (write_predictions),
    with eval_results.json when every question has answers; otherwise one log line says why not. When the
    evaluation fails (bad answers), the predictions are published without it and the error is raised."""
    predictions, nbest, null_odds = predict(tuner, tokenizer, FLAGS.predict_batch_size)
    evaluation, failure, missing = None, None, unlabelled(tokenizer)
    if missing:
        logging.info("Not evaluating the predictions: %s", missing)
    else:
        try:
            evaluation = evaluation_of(tokenizer, predictions, null_odds)
        except ValueError as e:
            failure = e
    path = write_predictions(FLAGS.output_dir, predictions, nbest, null_odds, evaluation)
    if failure:
        raise ValueError(f"{failure} (the predictions are written: {path})") from failure


def main(_):
    strategy, options, tokenizer = finetuning_flags.setup(segments=2, modes=MODES)  # question and context
    if FLAGS.verbose_logging:
        logging.set_verbosity(logging.DEBUG)
    validate_flags()
    if FLAGS.do_train and FLAGS.best_metric:
        check_answers_for_best_metric(tokenizer)
    tuner = finetuning_run.create_finetuner(options, strategy, lambda: BertSpanLabeler(
        options.config, **finetuning_flags.head_options()))
    if FLAGS.do_train:
        finetuning_run.train(tuner, options, training_input(tokenizer), lambda: dev_results(tuner, tokenizer))
    if FLAGS.do_predict and tuner.is_chief:
        predict_and_write(tuner, tokenizer)


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
