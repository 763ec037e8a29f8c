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
output_dir/best/, `--early_stopping_patience` stops when it no longer improves. `--cmrc2018_evaluation`
scores Chinese reading comprehension in SQuAD format (CMRC 2018, DRCD; contexts without spaces need nothing
else) with the official cmrc2018_evaluate.py's numbers too: its AVERAGE, F1, EM, TOTAL and SKIP beside SQuAD's
keys (`--best_metric=F1` keeps the best CMRC F1). Rerunning a killed command resumes from its last checkpoint.

The flags map onto `bert_tf.training.finetuning_run.RunOptions` and `bert_tf.training.squad_run.SquadTask`
(same names); the run is `squad_run.run_squad`, which a notebook calls the same way.
"""

import os

from absl import flags, logging

from bert_tf.cli import finetuning_flags, flag_checks, model_flags, scripting
from bert_tf.data.squad.postprocess import PREDICTION_SET
from bert_tf.training.squad_run import MODES, SquadTask, run_squad

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
flags.DEFINE_bool("cmrc2018_evaluation", False, "Also score the predictions with the CMRC 2018 evaluation "
                  "(cmrc2018_evaluate.py: character F1 and EM; CMRC 2018, DRCD): its AVERAGE, F1, EM, TOTAL and SKIP "
                  "beside SQuAD's keys in eval_results.json and the dev results of --best_metric. Not with "
                  "--version_2_with_negative; needs nltk.")


def main(_):
    strategy, options = finetuning_flags.prepare(segments=2, modes=MODES)  # question and context
    if FLAGS.verbose_logging:
        logging.set_verbosity(logging.DEBUG)
    task = finetuning_flags.task_of(SquadTask, head=finetuning_flags.head_options())
    flag_checks.check_outputs_not_inputs({"output_dir": [os.path.join(FLAGS.output_dir, name)
                                                         for name in PREDICTION_SET]},
                                         flag_checks.paths_of("train_file", "predict_file"))
    run_squad(options, task, strategy, config_name=model_flags.config_name())


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
