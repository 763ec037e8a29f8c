"""The flags and steps that run_classifier.py, run_ner.py, run_swag.py and run_squad.py share (a command-side
module: the library outside bert_tf/cli/ never reads flags).

The original run_classifier.py / run_squad.py flags with their defaults; the model-file flags come from
model_flags.py, the training flags (TPU, loop, distribution, precision, XLA, optimizer, seed) from
training_flags.py.
"""

import os

from absl import flags, logging

from bert_tf import BertConfig, run_directory
from bert_tf.cli import flag_checks, model_flags, training_flags
from bert_tf.modeling.checkpoint_names import OUTPUT_WEIGHTS, SQUAD_SCOPE
from bert_tf.modeling.tasks.task_model import TASK_HEADS
from bert_tf.tokenization import FullTokenizer
from bert_tf.training.best_checkpoint import BestCheckpoint
from bert_tf.training.finetuning import FineTuner, FineTuningOptions

FLAGS = flags.FLAGS
model_flags.define("bert_config_file", "vocab_file", "init_checkpoint", "do_lower_case")
flags.adopt_module_key_flags(model_flags)  # its flags in --help, not only in --helpfull
flags.adopt_module_key_flags(training_flags)
flags.DEFINE_string("data_dir", None, "The input data dir (the task's files; run_squad.py: TFDS's data directory, "
                    "with --tfds_name).")
flags.DEFINE_string("output_dir", None, "The output directory where the model checkpoints will be written.")
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
flags.DEFINE_string("best_metric", None, "Evaluate the dev set after every checkpoint and keep the weights with the "
                    "best value of this eval_results.txt key (e.g. eval_accuracy, eval_f1; minimised if it contains "
                    "'loss') in output_dir/best/.")
flags.DEFINE_integer("early_stopping_patience", 0, "With --best_metric: stop training after this many dev "
                     "evaluations in a row without improvement (0: never).")
flags.DEFINE_enum("task_head", "linear", TASK_HEADS, "linear: the original output layer, on the pooled output "
                  "(sentence-level tasks) or on every token's output (NER, SQuAD). bilstm: a randomly initialised "
                  "bidirectional LSTM over the sequence output, then that output layer (Devlin et al. 2019, Table 5 "
                  "'+ BiLSTM'); sentence-level tasks read its final forward and backward states.")
flags.DEFINE_integer("bilstm_size", 768, "The BiLSTM's units per direction (--task_head=bilstm; run_ner.py "
                     "--feature_based).")
flags.DEFINE_integer("bilstm_layers", 2, "The BiLSTM's stacked bidirectional layers (--task_head=bilstm; run_ner.py "
                     "--feature_based).")
for _name in ("bert_config_file", "vocab_file", "output_dir"):
    flags.mark_flag_as_required(_name)


def setup(segments=1, modes=("do_train", "do_eval", "do_predict")):
    """Checks the flags and creates what every run needs, before any data is read: (strategy, config,
    tokenizer). The strategy comes first (a multi-worker strategy must exist before TensorFlow starts).
    segments: texts per example (2: pairs), for the shortest --max_seq_length that holds a piece of each.
    modes: the --do_* flags this script has (run_squad.py predicts and evaluates in one, with --do_predict)."""
    logging.set_verbosity(logging.INFO)
    for mode in {"do_train", "do_eval", "do_predict"} - set(modes):
        if FLAGS[mode].value:
            raise ValueError(f"--{mode} is not a mode of this script; it has {', '.join('--' + m for m in modes)}")
    if not any(FLAGS[mode].value for mode in modes):
        raise ValueError(f"At least one of {', '.join(f'`{m}`' for m in modes)} must be True.")
    flag_checks.check_at_least(1, *(f"{m[3:]}_batch_size" for m in modes))
    flag_checks.check_max_seq_length(segments)
    strategy = training_flags.create_strategy()
    config = BertConfig.from_json_file(FLAGS.bert_config_file)
    config.check_seq_length(FLAGS.max_seq_length)
    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    config.check_vocab_size(len(tokenizer.vocab), FLAGS.vocab_file)
    if FLAGS.do_train:  # first: a state to resume from decides, not --init_checkpoint
        training_flags.check_resumable(config, RESUMED_SETTINGS)
    model_flags.check_init_checkpoint(config)
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    training_flags.set_policy()
    return strategy, config, tokenizer


# The flags whose change a rerun that resumes a training state is warned about (and records).
RESUMED_SETTINGS = ("learning_rate", "train_batch_size", "max_seq_length", "num_train_epochs", "warmup_proportion",
                    "optimizer", "num_accumulation_steps", "mixed_precision", "seed")


def head_options(bilstm_by=None):
    """The task model's head keyword arguments of --task_head, --bilstm_size and --bilstm_layers ({} for the
    linear head). bilstm_by: the flag that implies the BiLSTM head (run_ner.py's --feature_based), if set.
    ValueError naming a BiLSTM flag given with the linear head, or a size below 1."""
    task_head = FLAGS.task_head
    if bilstm_by:
        if FLAGS["task_head"].present and task_head != "bilstm":
            raise ValueError(f"--task_head={task_head}: {bilstm_by} always trains a BiLSTM tagger")
        task_head = "bilstm"
    if task_head == "linear":
        for name in ("bilstm_size", "bilstm_layers"):
            if FLAGS[name].present:
                raise ValueError(f"--{name} is for --task_head=bilstm, not --task_head=linear")
        return {}
    flag_checks.check_at_least(1, "bilstm_size", "bilstm_layers")
    return {"task_head": task_head, "bilstm_size": FLAGS.bilstm_size, "bilstm_layers": FLAGS.bilstm_layers}


LINEAR_HEADS = (OUTPUT_WEIGHTS, SQUAD_SCOPE + OUTPUT_WEIGHTS)  # the original fine-tuning heads' weights


def head_flags(head):
    """The command-line flags of a head (a model's `head_options()`, None for the linear head)."""
    head = dict(head or {"task_head": "linear"})
    if "feature_layers" in head:  # run_ner.py --feature_based: its BiLSTM head goes without saying
        del head["task_head"]
        head = {"feature_based": "true", **head}
    order = ("feature_based", "task_head", "feature_layers", "bilstm_size", "bilstm_layers")
    return " ".join(f"--{name}={head[name]}" for name in order if name in head)


def check_head(report, model):
    """After loading `report` (a LoadReport) into `model`, when the checkpoint has a fine-tuned head of
    another kind than the flags': ValueError without --do_train (its head would go unused and an untrained
    one predict), else one line saying that a new head trains from random weights."""
    linear = any(name in LINEAR_HEADS for name in [*report.mapped, *report.ignored])
    if report.head is None and not linear:
        return  # a pretrained checkpoint: every task head starts new
    if report.head == model.head_options():
        return
    if not FLAGS.do_train:
        raise ValueError(f"{report.path} was fine-tuned with {head_flags(report.head)}; pass the same flags to "
                         f"evaluate or predict with it (this run has {head_flags(model.head_options())})")
    logging.warning("%s has a %s head, unused: %s trains a new head from random weights (reported as missing above)",
                    report.path, (report.head or {"task_head": "linear"})["task_head"],
                    head_flags(model.head_options()))


def create_finetuner(strategy, model_fn):
    """A FineTuner of `model_fn()` with the flags' options, holding the weights to start from: when not
    training, the newest model.ckpt-N in --output_dir if there is one; otherwise --init_checkpoint."""
    options = FineTuningOptions(
        train_batch_size=FLAGS.train_batch_size, learning_rate=FLAGS.learning_rate,
        num_train_epochs=FLAGS.num_train_epochs, warmup_proportion=FLAGS.warmup_proportion,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps, iterations_per_loop=FLAGS.iterations_per_loop,
        optimizer=FLAGS.optimizer, loss_scaling=FLAGS.mixed_precision == "float16",
        num_accumulation_steps=FLAGS.num_accumulation_steps, use_xla=training_flags.use_xla(strategy),
        seed=FLAGS.seed)
    tuner = FineTuner(strategy, model_fn, options, FLAGS.output_dir)
    trained = None if FLAGS.do_train else run_directory.newest_export(FLAGS.output_dir)
    if trained or FLAGS.init_checkpoint:
        report = tuner.load(trained or model_flags.init_checkpoint())
        check_head(report, tuner.model)
        untrained = [name for name in report.missing if not name.startswith("bert/")]
        if untrained and not FLAGS.do_train:
            logging.warning("%s has no %s: predicting with an untrained head", report.path, ", ".join(untrained))
    elif not FLAGS.do_train:
        raise ValueError(f"nothing to evaluate or predict with: no model.ckpt-* in {FLAGS.output_dir} and no "
                         "--init_checkpoint")
    else:
        logging.warning("No --init_checkpoint: training from random weights")
    return tuner


def train(tuner, data, dev_results):
    """Fine-tunes on `data` (features in memory or a TrainingInput, see FineTuner.train); with --best_metric,
    `dev_results()` (the eval_results.txt dict of the current weights) runs after every checkpoint and the best
    weights go to output_dir/best/ (see BestCheckpoint), with --early_stopping_patience stopping early. The
    settings of the run are recorded in output_dir (`run_directory.record_settings`)."""
    if FLAGS.early_stopping_patience and not FLAGS.best_metric:
        raise ValueError("--early_stopping_patience needs --best_metric (the dev result to watch)")
    if tuner.is_chief:
        run_directory.record_settings(FLAGS.output_dir, training_flags.flag_values(RESUMED_SETTINGS))
    if not FLAGS.best_metric:
        return tuner.train(data)
    best = BestCheckpoint(FLAGS.output_dir, FLAGS.best_metric, FLAGS.early_stopping_patience)
    return tuner.train(data, after_checkpoint=lambda step: best.update(step, dev_results))
