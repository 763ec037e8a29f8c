"""Fine-tune BERT on SQuAD 1.1 / 2.0 and predict answers, with the original run_squad.py's flags and files.

    python run_squad.py --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_train=True --train_file=$SQUAD_DIR/train-v1.1.json \
      --do_predict=True --predict_file=$SQUAD_DIR/dev-v1.1.json --train_batch_size=12 --learning_rate=3e-5 \
      --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base/

writes `predictions.json`, `nbest_predictions.json`, for SQuAD 2.0 (`--version_2_with_negative`)
`null_odds.json`, and, when the predict file has answers, `eval_results.json` with the official evaluation
script's numbers (`python -m bert_tf.evaluation.squad` does the same on files). New flags beside the
original's: the training ones of training_flags.py (`--distribution_strategy`, `--num_gpus`,
`--mixed_precision`, `--use_xla`, `--optimizer`, `--num_accumulation_steps`, `--seed`), `--cache_dir`
(features are cached as TFRecords keyed by their settings, so a second run skips the conversion),
`--tfds_name` and `--data_dir` (TensorFlow Datasets input: `--tfds_name=squad/v1.1` or `squad/v2.0`
instead of --train_file and --predict_file). Rerunning a killed command resumes from its last checkpoint.
"""

import json
import os

import numpy as np
import tensorflow as tf
from absl import flags, logging

import flag_checks
import training_flags
from bert_tf import BertConfig, atomic_io, run_directory, scripting
from bert_tf.checkpoints import load_checkpoint
from bert_tf.data.squad import records as squad_records, tfds as squad_tfds
from bert_tf.data.squad.examples import load_squad_json
from bert_tf.data.squad.postprocess import RawResult, compute_predictions, write_predictions
from bert_tf.evaluation.squad import evaluate
from bert_tf.feature_schema import END_LOGITS, START_LOGITS, UNIQUE_IDS
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.tokenization import FullTokenizer
from bert_tf.training import loop, optimization

FLAGS = flags.FLAGS
# The original's flags, with its defaults.
flags.DEFINE_string("bert_config_file", None, "bert_config.json (Google) or config.json (HuggingFace) of the model.")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_string("output_dir", None, "The output directory where the model checkpoints will be written.")
flags.DEFINE_string("train_file", None, "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string("predict_file", None, "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
flags.DEFINE_string("init_checkpoint", None, "Initial checkpoint (Google, bert_tf or HuggingFace), usually from a "
                    "pre-trained BERT model; with --do_predict alone, a fine-tuned one.")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text. True for uncased models.")
flags.DEFINE_integer("max_seq_length", 384, "The maximum total input sequence length after WordPiece "
                     "tokenization. Longer contexts are split into windows.")
flags.DEFINE_integer("doc_stride", 128, "When splitting up a long document into chunks, how much stride to "
                     "take between chunks.")
flags.DEFINE_integer("max_query_length", 64, "The maximum number of tokens for the question. Questions longer "
                     "than this will be truncated to this length.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_predict", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predictions.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1, "Proportion of training to perform linear learning rate warmup for.")
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
flags.DEFINE_string("data_dir", None, "With --tfds_name: TFDS's data directory (default: TFDS's own).")
for _name in ("vocab_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(_name)


def validate_flags(config):
    """The original's `validate_flags_or_throw`, as ValueErrors."""
    if not FLAGS.do_train and not FLAGS.do_predict:
        raise ValueError("At least one of `do_train` or `do_predict` must be True.")
    flag_checks.check_at_least(1, "train_batch_size", "predict_batch_size")
    if FLAGS.tfds_name:
        if FLAGS.train_file or FLAGS.predict_file:
            raise ValueError(f"--tfds_name={FLAGS.tfds_name} replaces --train_file and --predict_file; pass "
                             "either --tfds_name or the files, not both")
        squad_tfds.check_tfds_squad(FLAGS.tfds_name, FLAGS.data_dir, FLAGS.version_2_with_negative)
    elif FLAGS.data_dir:
        raise ValueError(f"--data_dir={FLAGS.data_dir} is TFDS's data directory: it needs --tfds_name")
    if FLAGS.do_train and not (FLAGS.train_file or FLAGS.tfds_name):
        raise ValueError("If `do_train` is True, then `train_file` (or `tfds_name`) must be specified.")
    if FLAGS.do_predict and not (FLAGS.predict_file or FLAGS.tfds_name):
        raise ValueError("If `do_predict` is True, then `predict_file` (or `tfds_name`) must be specified.")
    config.check_seq_length(FLAGS.max_seq_length)
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


def train(strategy, model, tokenizer, config, use_xla, policy):
    train_file = input_file("train")
    prepared = prepare(train_file, tokenizer, is_training=True)
    num_train_steps = int(len(prepared.examples) / FLAGS.train_batch_size * FLAGS.num_train_epochs)
    if num_train_steps < 1:
        raise ValueError(f"{train_file}: {len(prepared.examples)} examples make no step of "
                         f"train_batch_size={FLAGS.train_batch_size} in {FLAGS.num_train_epochs} epochs")
    num_warmup_steps = int(num_train_steps * FLAGS.warmup_proportion)
    with strategy.scope():
        optimizer = optimization.create_optimizer(
            FLAGS.optimizer, FLAGS.learning_rate, num_train_steps, num_warmup_steps,
            loss_scaling=policy == "mixed_float16")
    trainer = loop.Trainer(strategy, model, optimizer, FLAGS.train_batch_size, FLAGS.num_accumulation_steps,
                           use_xla=use_xla,
                           flops_per_example=loop.training_flops_per_example(config, FLAGS.max_seq_length, 0))
    logging.info("***** Running training *****: %d examples (%d skipped), %d features, batch %d, %d steps",
                 len(prepared.examples), len(prepared.skipped), prepared.num_features, FLAGS.train_batch_size,
                 num_train_steps)

    def dataset_fn(input_context, batch_size):
        return squad_records.squad_dataset(prepared.record_file, FLAGS.max_seq_length, True, batch_size,
                                           input_context, FLAGS.seed)

    if trainer.is_chief:  # the output_dir is then a complete checkpoint directory for --init_checkpoint
        config.to_json_file(os.path.join(FLAGS.output_dir, "bert_config.json"))
    trainer.train(dataset_fn, FLAGS.output_dir, num_train_steps, FLAGS.iterations_per_loop,
                  FLAGS.save_checkpoints_steps)
    return trainer.is_chief


def predict(model, tokenizer):
    predict_file = input_file("validation")
    prepared = prepare(predict_file, tokenizer, is_training=False)
    features = squad_records.read_prediction_features(prepared.record_file)
    dataset = squad_records.squad_dataset(prepared.record_file, FLAGS.max_seq_length, False,
                                          FLAGS.predict_batch_size)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(-(-len(features) // FLAGS.predict_batch_size)))
    logging.info("***** Running predictions *****: %d examples, %d features, batch %d", len(prepared.examples),
                 len(features), FLAGS.predict_batch_size)
    outputs = model.predict(dataset, verbose=0)
    unique_ids = np.concatenate([batch[UNIQUE_IDS].numpy() for batch in dataset])
    results = [RawResult(*values) for values in zip(unique_ids, outputs[START_LOGITS], outputs[END_LOGITS])]
    predictions, nbest, null_odds = compute_predictions(
        prepared.examples, features, results, FLAGS.n_best_size, FLAGS.max_answer_length, FLAGS.do_lower_case,
        FLAGS.version_2_with_negative, FLAGS.null_score_diff_threshold)
    write_predictions(FLAGS.output_dir, predictions, nbest, null_odds)
    dataset_json = load_squad_json(predict_file)
    if all("answers" in qa for article in dataset_json for p in article["paragraphs"] for qa in p["qas"]):
        results = evaluate(dataset_json, predictions, null_odds or None)
        path = os.path.join(FLAGS.output_dir, "eval_results.json")
        atomic_io.write_file(path, json.dumps(results, indent=2))
        logging.info("Evaluation of %s: %s (written to %s)", predict_file, json.dumps(results), path)


def main(_):
    logging.set_verbosity(logging.DEBUG if FLAGS.verbose_logging else logging.INFO)
    strategy = training_flags.create_strategy()
    config = BertConfig.from_json_file(FLAGS.bert_config_file)
    validate_flags(config)
    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    config.check_vocab_size(len(tokenizer.vocab), FLAGS.vocab_file)
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    policy = training_flags.set_policy()
    use_xla = training_flags.use_xla(strategy)
    with strategy.scope():
        model = BertSpanLabeler(config)
        model.build()
    latest = None if FLAGS.do_train else run_directory.newest_export(FLAGS.output_dir)
    source = latest or FLAGS.init_checkpoint
    if source:
        report = load_checkpoint(model, source)
        if FLAGS.do_predict and not FLAGS.do_train and report.missing:
            logging.warning("%s has no %s: predicting with an untrained head", source, ", ".join(report.missing))
    elif not FLAGS.do_train:
        raise ValueError(f"nothing to predict with: no checkpoint in {FLAGS.output_dir} and no --init_checkpoint")
    is_chief = True
    if FLAGS.do_train:
        is_chief = train(strategy, model, tokenizer, config, use_xla, policy)
    if FLAGS.do_predict and is_chief:
        predict(model, tokenizer)


if __name__ == "__main__":
    scripting.run(main)
