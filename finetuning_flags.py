"""The flags and steps that run_classifier.py, run_ner.py and run_swag.py share (a script-side module: the
library under bert_tf/ never reads flags).

The original run_classifier.py flags with its defaults, then the new ones (`--distribution_strategy`,
`--num_gpus`, `--mixed_precision`, `--use_xla`, `--optimizer`, `--num_accumulation_steps`, `--seed`).
"""

import os

import keras
import tensorflow as tf
from absl import flags, logging

from bert_tf import BertConfig
from bert_tf.finetuning import FineTuner, FineTuningOptions
from bert_tf.tokenization import FullTokenizer
from bert_tf.training import distribute, optimization

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", None, "The input data dir (the task's files).")
flags.DEFINE_string("bert_config_file", None, "bert_config.json (Google) or config.json (HuggingFace) of the "
                    "pretrained model.")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_string("output_dir", None, "The output directory where the model checkpoints will be written.")
flags.DEFINE_string("init_checkpoint", None, "Initial checkpoint (usually from a pre-trained BERT model): "
                    "Google, bert_tf or HuggingFace safetensors.")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text (True for uncased models).")
flags.DEFINE_integer("max_seq_length", 128, "The maximum total input sequence length after WordPiece "
                     "tokenization; longer sequences are truncated, shorter ones padded.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_bool("do_predict", False, "Whether to run the model in inference mode on the test set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1, "Proportion of training to perform linear learning rate warmup "
                   "for. E.g., 0.1 = 10% of training.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000, "Steps per tf.function call, and how often to log progress.")
flags.DEFINE_bool("use_tpu", False, "Train on TPU (same as --distribution_strategy=tpu).")
flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use: its name or a grpc://ip.address.of.tpu:8470 url.")
flags.DEFINE_string("tpu_zone", None, "[Optional] GCE zone of the Cloud TPU.")
flags.DEFINE_string("gcp_project", None, "[Optional] GCP project of the Cloud TPU.")
flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL (a TPU address, if --tpu_name is unset).")
flags.DEFINE_integer("num_tpu_cores", 8, "Only used if `use_tpu` is True: the TPU cores expected.")
flags.DEFINE_alias("steps_per_loop", "iterations_per_loop")
flags.DEFINE_enum("distribution_strategy", "one_device", distribute.STRATEGIES, "tf.distribute strategy; "
                  "multi_worker_mirrored reads the cluster from TF_CONFIG.")
flags.DEFINE_integer("num_gpus", None, "GPUs to use with --distribution_strategy=mirrored (default: all).")
flags.DEFINE_enum("mixed_precision", "float32", ["float32", "bfloat16", "float16"], "Compute dtype of the "
                  "matmuls (variables, LayerNorm and softmax stay float32); float16 uses dynamic loss scaling.")
flags.DEFINE_bool("use_xla", None, "Compile the model with XLA (default: on GPU and TPU, off on CPU).")
flags.DEFINE_enum("optimizer", "adam_weight_decay", optimization.OPTIMIZERS, "adam_weight_decay: the "
                  "original's; adamw: Keras AdamW; lamb: LAMB.")
flags.DEFINE_integer("num_accumulation_steps", 1, "Micro-batches per optimizer step (train_batch_size is split).")
flags.DEFINE_integer("seed", None, "Seed of the initialisation, dropout and input order.")
for _name in ("data_dir", "bert_config_file", "vocab_file", "output_dir"):
    flags.mark_flag_as_required(_name)

POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def setup():
    """Checks the flags and creates what every run needs, before any data is read: (strategy, config,
    tokenizer). The strategy comes first (a multi-worker strategy must exist before TensorFlow starts)."""
    logging.set_verbosity(logging.INFO)
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
        raise ValueError("At least one of `do_train`, `do_eval` or `do_predict` must be True.")
    name = "tpu" if FLAGS.use_tpu else FLAGS.distribution_strategy
    strategy = distribute.create_strategy(name, FLAGS.num_gpus, FLAGS.tpu_name or FLAGS.master, FLAGS.tpu_zone,
                                          FLAGS.gcp_project)
    config = BertConfig.from_json_file(FLAGS.bert_config_file)
    config.check_seq_length(FLAGS.max_seq_length)
    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    config.check_vocab_size(len(tokenizer.vocab), FLAGS.vocab_file)
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    if FLAGS.seed is not None:
        keras.utils.set_random_seed(FLAGS.seed)
    keras.mixed_precision.set_global_policy(POLICIES[FLAGS.mixed_precision])
    return strategy, config, tokenizer


def create_finetuner(strategy, model_fn):
    """A FineTuner of `model_fn()` with the flags' options, holding the weights to start from: when not
    training, the newest model.ckpt-N in --output_dir if there is one; otherwise --init_checkpoint."""
    use_xla = FLAGS.use_xla
    if use_xla is None:
        use_xla = bool(tf.config.list_physical_devices("GPU")) or isinstance(strategy, tf.distribute.TPUStrategy)
    options = FineTuningOptions(
        FLAGS.train_batch_size, FLAGS.learning_rate, FLAGS.num_train_epochs, FLAGS.warmup_proportion,
        FLAGS.save_checkpoints_steps, FLAGS.iterations_per_loop, FLAGS.optimizer,
        FLAGS.mixed_precision == "float16", FLAGS.num_accumulation_steps, use_xla, FLAGS.seed)
    tuner = FineTuner(strategy, model_fn, options, FLAGS.output_dir)
    trained = None if FLAGS.do_train else tf.train.latest_checkpoint(FLAGS.output_dir)
    if trained or FLAGS.init_checkpoint:
        tuner.load(trained or FLAGS.init_checkpoint)
    elif not FLAGS.do_train:
        raise ValueError(f"nothing to evaluate or predict with: no model.ckpt-* in {FLAGS.output_dir} and no "
                         "--init_checkpoint")
    else:
        logging.warning("No --init_checkpoint: training from random weights")
    return tuner


def write_results(results, name="eval_results.txt"):
    """`key = value` lines, sorted, in output_dir (the original's eval_results.txt)."""
    with open(os.path.join(FLAGS.output_dir, name), "w", encoding="utf-8") as writer:
        logging.info("***** Eval results *****")
        for key in sorted(results):
            logging.info("  %s = %s", key, results[key])
            writer.write(f"{key} = {results[key]}\n")
