"""Fine-tune BERT on SQuAD 1.1 / 2.0 and predict answers, with the original run_squad.py's flags and files.

    python run_squad.py --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_train=True --train_file=$SQUAD_DIR/train-v1.1.json \
      --do_predict=True --predict_file=$SQUAD_DIR/dev-v1.1.json --train_batch_size=12 --learning_rate=3e-5 \
      --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base/

writes `predictions.json`, `nbest_predictions.json`, for SQuAD 2.0 (`--version_2_with_negative`)
`null_odds.json`, and, when the predict file has answers, `eval_results.json` with the official evaluation
script's numbers (`python -m bert_tf.evaluate_squad` does the same on files). New flags beside the
original's: `--distribution_strategy`, `--num_gpus`, `--mixed_precision`, `--use_xla`, `--optimizer`,
`--num_accumulation_steps`, `--seed`, `--cache_dir` (features are cached as TFRecords keyed by their
settings, so a second run skips the conversion). Rerunning a killed command resumes from its last checkpoint.
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf
from absl import flags, logging

from bert_tf import BertConfig, scripting
from bert_tf.checkpoints import load_checkpoint
from bert_tf.data import squad_records
from bert_tf.data.squad import load_squad_json
from bert_tf.data.squad_postprocess import RawResult, compute_predictions, write_predictions
from bert_tf.evaluate_squad import evaluate
from bert_tf.modeling.span_labeler import BertSpanLabeler
from bert_tf.tokenization import FullTokenizer
from bert_tf.training import distribute, loop, optimization

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
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000, "Steps per tf.function call, and how often to log progress.")
flags.DEFINE_integer("n_best_size", 20, "The total number of n-best predictions to generate in the "
                     "nbest_predictions.json output file.")
flags.DEFINE_integer("max_answer_length", 30, "The maximum length of an answer that can be generated.")
flags.DEFINE_bool("use_tpu", False, "Train on TPU (same as --distribution_strategy=tpu).")
flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use: its name or a grpc://ip.address.of.tpu:8470 url.")
flags.DEFINE_string("tpu_zone", None, "[Optional] GCE zone of the Cloud TPU.")
flags.DEFINE_string("gcp_project", None, "[Optional] GCP project of the Cloud TPU.")
flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL (a TPU address, if --tpu_name is unset).")
flags.DEFINE_integer("num_tpu_cores", 8, "Only used if `use_tpu` is True: the TPU cores expected.")
flags.DEFINE_bool("verbose_logging", False, "Log the failures of mapping predictions back to the original text.")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: some questions have no answer.")
flags.DEFINE_float("null_score_diff_threshold", 0.0, "SQuAD 2.0: predict null if null_score - best_non_null > "
                   "this threshold.")
# New flags.
flags.DEFINE_enum("distribution_strategy", "one_device", distribute.STRATEGIES, "tf.distribute strategy; "
                  "multi_worker_mirrored reads the cluster from TF_CONFIG.")
flags.DEFINE_integer("num_gpus", None, "GPUs to use with --distribution_strategy=mirrored (default: all).")
flags.DEFINE_enum("mixed_precision", "float32", ["float32", "bfloat16", "float16"], "Compute dtype of the "
                  "matmuls (variables, LayerNorm and softmax stay float32); float16 uses dynamic loss scaling.")
flags.DEFINE_bool("use_xla", None, "Compile the training step with XLA (default: on GPU and TPU, off on CPU).")
flags.DEFINE_enum("optimizer", "adam_weight_decay", optimization.OPTIMIZERS, "adam_weight_decay: the "
                  "original's; adamw: Keras AdamW; lamb: LAMB.")
flags.DEFINE_integer("num_accumulation_steps", 1, "Micro-batches per optimizer step (train_batch_size is split).")
flags.DEFINE_integer("seed", None, "Seed of the initialisation, dropout and input order.")
flags.DEFINE_string("cache_dir", None, "Where the feature TFRecords are cached (default: --output_dir).")
for _name in ("vocab_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(_name)

POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def validate_flags(config):
    """The original's `validate_flags_or_throw`, as ValueErrors."""
    if not FLAGS.do_train and not FLAGS.do_predict:
        raise ValueError("At least one of `do_train` or `do_predict` must be True.")
    if FLAGS.do_train and not FLAGS.train_file:
        raise ValueError("If `do_train` is True, then `train_file` must be specified.")
    if FLAGS.do_predict and not FLAGS.predict_file:
        raise ValueError("If `do_predict` is True, then `predict_file` must be specified.")
    config.check_seq_length(FLAGS.max_seq_length)
    if FLAGS.max_seq_length <= FLAGS.max_query_length + 3:
        raise ValueError(f"The max_seq_length ({FLAGS.max_seq_length}) must be greater than max_query_length "
                         f"({FLAGS.max_query_length}) + 3")


def prepare(path, tokenizer, is_training):
    return squad_records.prepare_squad(
        path, tokenizer, FLAGS.cache_dir or FLAGS.output_dir, FLAGS.max_seq_length, FLAGS.doc_stride,
        FLAGS.max_query_length, is_training, FLAGS.version_2_with_negative)


def train(strategy, model, tokenizer, config, use_xla, policy):
    prepared = prepare(FLAGS.train_file, tokenizer, is_training=True)
    num_train_steps = int(len(prepared.examples) / FLAGS.train_batch_size * FLAGS.num_train_epochs)
    if num_train_steps < 1:
        raise ValueError(f"{FLAGS.train_file}: {len(prepared.examples)} examples make no step of "
                         f"train_batch_size={FLAGS.train_batch_size} in {FLAGS.num_train_epochs} epochs")
    num_warmup_steps = int(num_train_steps * FLAGS.warmup_proportion)
    with strategy.scope():
        optimizer = optimization.create_optimizer(
            FLAGS.optimizer, FLAGS.learning_rate, num_train_steps, num_warmup_steps, model.trainable_variables,
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
    prepared = prepare(FLAGS.predict_file, tokenizer, is_training=False)
    features = squad_records.read_prediction_features(prepared.record_file)
    dataset = squad_records.squad_dataset(prepared.record_file, FLAGS.max_seq_length, False,
                                          FLAGS.predict_batch_size)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(-(-len(features) // FLAGS.predict_batch_size)))
    logging.info("***** Running predictions *****: %d examples, %d features, batch %d", len(prepared.examples),
                 len(features), FLAGS.predict_batch_size)
    outputs = model.predict(dataset, verbose=0)
    unique_ids = np.concatenate([batch["unique_ids"].numpy() for batch in dataset])
    results = [RawResult(*values) for values in zip(unique_ids, outputs["start_logits"], outputs["end_logits"])]
    predictions, nbest, null_odds = compute_predictions(
        prepared.examples, features, results, FLAGS.n_best_size, FLAGS.max_answer_length, FLAGS.do_lower_case,
        FLAGS.version_2_with_negative, FLAGS.null_score_diff_threshold)
    write_predictions(FLAGS.output_dir, predictions, nbest, null_odds)
    dataset_json = load_squad_json(FLAGS.predict_file)
    if all("answers" in qa for article in dataset_json for p in article["paragraphs"] for qa in p["qas"]):
        results = evaluate(dataset_json, predictions, null_odds or None)
        path = os.path.join(FLAGS.output_dir, "eval_results.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
        logging.info("Evaluation of %s: %s (written to %s)", FLAGS.predict_file, json.dumps(results), path)


def main(_):
    logging.set_verbosity(logging.DEBUG if FLAGS.verbose_logging else logging.INFO)
    strategy = distribute.create_strategy("tpu" if FLAGS.use_tpu else FLAGS.distribution_strategy, FLAGS.num_gpus,
                                          FLAGS.tpu_name or FLAGS.master, FLAGS.tpu_zone, FLAGS.gcp_project)
    config = BertConfig.from_json_file(FLAGS.bert_config_file)
    validate_flags(config)
    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    config.check_vocab_size(len(tokenizer.vocab), FLAGS.vocab_file)
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    if FLAGS.seed is not None:
        keras.utils.set_random_seed(FLAGS.seed)
    policy = POLICIES[FLAGS.mixed_precision]
    keras.mixed_precision.set_global_policy(policy)
    use_xla = FLAGS.use_xla
    if use_xla is None:
        use_xla = bool(tf.config.list_physical_devices("GPU")) or FLAGS.use_tpu or FLAGS.distribution_strategy == "tpu"
    with strategy.scope():
        model = BertSpanLabeler(config)
        model.build()
    latest = tf.train.latest_checkpoint(FLAGS.output_dir)
    source = FLAGS.init_checkpoint if FLAGS.do_train or not latest else latest
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
