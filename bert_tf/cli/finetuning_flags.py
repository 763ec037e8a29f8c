"""The flags that run_classifier.py, run_ner.py, run_swag.py, run_squad.py and run_embedder.py share, mapped
onto `bert_tf.training.finetuning_run.RunOptions` (a command-side module: the library outside bert_tf/cli/
never reads flags).

The original run_classifier.py / run_squad.py flags with their defaults; the model-file flags come from
model_flags.py, the training flags (TPU, loop, distribution, precision, XLA, optimizer, seed) from
training_flags.py.
"""

import dataclasses

from absl import flags, logging

from bert_tf import BertConfig
from bert_tf.cli import flag_checks, model_flags, training_flags
from bert_tf.modeling.tasks.task_model import TASK_HEADS
from bert_tf.training.finetuning import FineTuningOptions
from bert_tf.training.finetuning_run import RunOptions

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
                    "best value of this eval_results.txt key (e.g. eval_accuracy, eval_f1; losses and perplexities "
                    "minimised, the others maximised) in output_dir/best/.")
flags.DEFINE_integer("early_stopping_patience", 0, "With --best_metric: stop training after this many dev "
                     "evaluations in a row without improvement (0: never).")
flags.DEFINE_bool("group_by_length", False, "Training batches of examples of similar length (HuggingFace's "
                  "group_by_length: shuffled, sorted within megabatches of 50 batches, the batches in random order): "
                  "less padding per batch. The order comes from --seed (0 when unset), so a resumed run continues "
                  "exactly.")
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


def prepare(segments=1, modes=("do_train", "do_eval", "do_predict")):
    """Checks the flags and creates the strategy, then the flags' RunOptions: (strategy, options). The
    strategy comes first (a multi-worker strategy must exist before TensorFlow starts).
    segments: texts per example (2: pairs), for the shortest --max_seq_length that holds a piece of each.
    modes: the --do_* flags this script has (run_squad.py predicts and evaluates in one, with --do_predict)."""
    logging.set_verbosity(logging.INFO)
    for mode in {"do_train", "do_eval", "do_predict"} - set(modes):
        if FLAGS[mode].value:
            raise ValueError(f"--{mode} is not a mode of this script; it has {', '.join('--' + m for m in modes)}")
    flag_checks.check_max_seq_length(segments)
    strategy = training_flags.create_strategy()
    return strategy, run_options()


def run_options():
    """The RunOptions of the flags: the model files, the modes, the training hyper-parameters."""
    training = FineTuningOptions(
        train_batch_size=FLAGS.train_batch_size, learning_rate=FLAGS.learning_rate,
        num_train_epochs=FLAGS.num_train_epochs, warmup_proportion=FLAGS.warmup_proportion,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps, iterations_per_loop=FLAGS.iterations_per_loop,
        optimizer=FLAGS.optimizer, num_accumulation_steps=FLAGS.num_accumulation_steps, seed=FLAGS.seed,
        group_by_length=FLAGS.group_by_length)
    return RunOptions(
        output_dir=FLAGS.output_dir, config=BertConfig.from_json_file(FLAGS.bert_config_file),
        vocab_file=FLAGS.vocab_file, init_checkpoint=model_flags.init_checkpoint(),
        do_lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length, do_train=FLAGS.do_train,
        do_eval=FLAGS.do_eval, do_predict=FLAGS.do_predict, eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size, best_metric=FLAGS.best_metric,
        early_stopping_patience=FLAGS.early_stopping_patience, mixed_precision=FLAGS.mixed_precision,
        use_xla=FLAGS.use_xla, training=training)


def task_of(task_class, **given):
    """The `task_class` (a task dataclass of bert_tf.training, e.g. ClassifierTask) of the flags: each field the
    flag of its name, but those `given` (e.g. head=head_options())."""
    names = {field.name for field in dataclasses.fields(task_class)} - set(given)
    return task_class(**given, **{name: FLAGS[name].value for name in names})


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
