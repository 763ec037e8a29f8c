"""Fine-tunes BERT for sentence(-pair) classification or regression: every GLUE task, XNLI, your own files.

The original's flags and defaults, e.g. the google-research/bert README command runs unchanged:

    python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true --data_dir=$GLUE_DIR/MRPC \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 --train_batch_size=32 \
      --learning_rate=2e-5 --num_train_epochs=3.0 --output_dir=/tmp/mrpc_output/

Tasks: cola, sst-2 (sst2), mrpc, sts-b (stsb, regression), qqp, mnli (matched and mismatched dev/test), qnli,
rte, wnli, ax (predict only, with an MNLI model), xnli (`--xnli_language`), and `custom`: your own
train/dev/test .tsv/.csv/.jsonl files with `--text_a_column`, `--text_b_column`, `--label_column`,
`--id_column`, `--label_list` or `--regression`. Or, instead of --task_name, `--tfds_name=glue/mrpc` (any GLUE
config, or another TFDS set with `--text_a_column`...) reads TensorFlow Datasets into --data_dir (TFDS's
feature names and label order; needs `pip install tensorflow-datasets`). `--truncation` picks which pieces of
a long single text are kept (head, tail, head+tail).

Writes to --output_dir: model.ckpt-N (training), eval_results.txt (eval_accuracy, eval_loss, the task's GLUE
metrics such as eval_f1 / eval_mcc / eval_pearson / eval_spearman, global_step, loss; MNLI adds
eval_mismatched_*), test_results.tsv (one line of class probabilities, or the score, per test example;
MNLI's mismatched test set: test_mismatched_results.tsv) and the GLUE leaderboard file ({TASK}.tsv).
"""

import functools
import os

from absl import flags, logging

from bert_tf import run_directory
from bert_tf.cli import finetuning_flags, flag_checks, scripting, training_flags
from bert_tf.data.tasks import classification
from bert_tf.data.tasks import glue as glue_tasks
from bert_tf.data.tasks import tfds as tfds_tasks
from bert_tf.evaluation import glue_metrics
from bert_tf.evaluation.probabilities import softmax
from bert_tf.feature_schema import LABEL_IDS
from bert_tf.modeling.tasks.classifier import BertClassifier

FLAGS = flags.FLAGS
flags.adopt_module_key_flags(finetuning_flags)  # its flags in --help, not only in --helpfull
flags.mark_flag_as_required("data_dir")
flags.DEFINE_string("task_name", None, "The name of the task to train: a GLUE task, xnli, or custom.")
flags.DEFINE_string("tfds_name", None, "Instead of --task_name: a TensorFlow Datasets name (glue/mrpc, glue/mnli, "
                    "imdb_reviews, ...) read with TFDS's feature names (others: --text_a_column ...) into "
                    "--data_dir, TFDS's data directory. Needs tensorflow-datasets and, the first time, network.")
flags.DEFINE_string("text_a_column", "text", "custom task: the column (or JSON key) of the first text.")
flags.DEFINE_string("text_b_column", None, "custom task: the column of the second text, for pairs.")
flags.DEFINE_string("label_column", "label", "custom task: the column of the label.")
flags.DEFINE_string("id_column", None, "custom task: a column of example ids (default: the row index).")
flags.DEFINE_list("label_list", None, "custom task: the labels, in label-id order (default: the sorted "
                  "labels of train.*).")
flags.DEFINE_bool("regression", False, "custom task: the labels are numbers (one output, squared error).")
flags.DEFINE_string("xnli_language", "zh", "xnli task: the language to train and evaluate on.")
flags.DEFINE_enum("truncation", "head", classification.TRUNCATIONS, "Which word pieces of a single text longer "
                  "than max_seq_length - 2 to keep: head (the original), tail, or head+tail (the first quarter "
                  "and the last three quarters).")


def get_processor():
    if (FLAGS.task_name is None) == (FLAGS.tfds_name is None):
        raise ValueError("pass one of --task_name and --tfds_name")
    if FLAGS.tfds_name:
        text_a = None if FLAGS.tfds_name.startswith("glue/") else FLAGS.text_a_column
        return tfds_tasks.TfdsProcessor(FLAGS.tfds_name, text_a, FLAGS.text_b_column, FLAGS.label_column,
                                        FLAGS.data_dir)
    name = FLAGS.task_name.lower()
    if name == "custom":
        processor = classification.ColumnProcessor(FLAGS.text_a_column, FLAGS.text_b_column, FLAGS.label_column,
                                                   FLAGS.id_column, FLAGS.label_list, FLAGS.regression)
        processor.infer_labels(FLAGS.data_dir)
        return processor
    try:
        return glue_tasks.get_processor(name, **({"language": FLAGS.xnli_language} if name == "xnli" else {}))
    except glue_tasks.UnknownTaskError as e:
        raise ValueError(f"{e}, or custom: --task_name=custom reads your own train/dev/test files (.tsv, .csv or "
                         ".jsonl in --data_dir) with --text_a_column, --text_b_column, --label_column") from None


@functools.cache  # read once, also when the dev set is evaluated at every checkpoint
def features_of(processor, split, tokenizer):
    examples = processor.get_examples(FLAGS.data_dir, split)
    if any(example.text_b for example in examples):
        flag_checks.check_max_seq_length(segments=2)
    return examples, classification.convert_examples(examples, processor.get_labels(), FLAGS.max_seq_length,
                                                     tokenizer, FLAGS.truncation)


def evaluate(tuner, processor, split, tokenizer):
    """{metric: value} of the model on one dev split: loss, accuracy and the processor's metrics."""
    examples, features = features_of(processor, split, tokenizer)
    outputs = tuner.predict(features, FLAGS.eval_batch_size)
    logging.info("%s: %d examples", split, len(examples))
    if processor.is_regression:
        return glue_metrics.regression_results(outputs[:, 0], features[LABEL_IDS], processor.metrics)
    own_task = isinstance(processor, classification.ColumnProcessor)  # no class is "the positive one"
    return glue_metrics.logits_results(outputs, features[LABEL_IDS], processor.metrics,
                                       processor.get_labels() if own_task else None)


def dev_results(tuner, processor, tokenizer):
    """eval_results.txt's dict: every dev split's metrics (eval_*, MNLI's mismatched eval_mismatched_*)."""
    if not processor.dev_splits:
        raise ValueError(f"task {FLAGS.task_name or FLAGS.tfds_name} has no dev set; use --do_predict")
    results = {"global_step": tuner.global_step}
    for split in processor.dev_splits:
        prefix = "eval_" if split == processor.dev_splits[0] else f"eval_{split.rsplit('_', 1)[1]}_"
        results.update({prefix + k: v for k, v in evaluate(tuner, processor, split, tokenizer).items()})
    results["loss"] = results["eval_loss"]
    return results


def predict(tuner, processor, split, tokenizer):
    """Writes test_results.tsv (probabilities or scores) and, for a GLUE task, the leaderboard file."""
    examples, features = features_of(processor, split, tokenizer)
    outputs = tuner.predict(features, FLAGS.predict_batch_size)
    suffix = "" if split == processor.test_splits[0] else split.rsplit("_", 1)[1] + "_"
    if processor.is_regression:
        rows, predictions = outputs[:, :1], outputs[:, 0]
    else:
        rows = softmax(outputs)
        predictions = [processor.leaderboard_labels[i] for i in outputs.argmax(-1)]
    run_directory.write_test_results(FLAGS.output_dir, rows, f"test_{suffix}results.tsv")
    logging.info("Wrote test_%sresults.tsv: a line per test example (%d), no header; columns: %s", suffix,
                 len(rows), processor.results_columns())
    submission = getattr(processor, "submission_files", {}).get(split)
    if submission:
        glue_tasks.write_submission(os.path.join(FLAGS.output_dir, submission), examples, predictions)
        logging.info("Wrote the leaderboard file %s", submission)


def splits_used(processor):
    """The splits this run reads: train (--do_train), the dev splits (--do_eval, or --best_metric while
    training), the test splits (--do_predict)."""
    splits = ["train"] if FLAGS.do_train else []
    if FLAGS.do_eval or (FLAGS.do_train and FLAGS.best_metric):
        splits += processor.dev_splits
    if FLAGS.do_predict:
        splits += processor.test_splits
    return splits


def main(_):
    strategy, config, tokenizer = finetuning_flags.setup()
    processor = get_processor()
    for split in splits_used(processor):  # every file read and checked before any model is built
        features_of(processor, split, tokenizer)
    train = features_of(processor, "train", tokenizer)[1] if FLAGS.do_train else None
    num_labels = 1 if processor.is_regression else len(processor.get_labels())
    if not processor.is_regression:
        run_directory.write_labels(FLAGS.output_dir, processor.get_labels())
    tuner = finetuning_flags.create_finetuner(strategy, lambda: BertClassifier(
        config, num_labels, **finetuning_flags.head_options()))
    if FLAGS.do_train:
        finetuning_flags.train(tuner, train, lambda: dev_results(tuner, processor, tokenizer))
    if FLAGS.do_eval:
        training_flags.write_results(dev_results(tuner, processor, tokenizer))
    if FLAGS.do_predict:
        for split in processor.test_splits:
            predict(tuner, processor, split, tokenizer)


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
