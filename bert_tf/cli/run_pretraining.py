"""Masked LM (+ next sentence) pretraining of BERT on TFRecords, on any tf.distribute strategy.

The original's flags and defaults, e.g. the google-research/bert README command runs unchanged:

    python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord --output_dir=/tmp/pretraining_output \
      --do_train=True --do_eval=True --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --train_batch_size=32 --max_seq_length=128 \
      --max_predictions_per_seq=20 --num_train_steps=20 --num_warmup_steps=10 --learning_rate=2e-5

plus `--distribution_strategy`, `--num_gpus`, `--tpu`, `--mixed_precision`, `--use_xla`, `--optimizer`,
`--num_accumulation_steps`, `--steps_per_loop` (= --iterations_per_loop), `--pretraining_objective`
(mlm_nsp, mlm, ltr: the paper's section 5.1 ablations),
`--dynamic_masking`, `--eval_input_file`, `--seed`, `--deterministic`. Rerunning a killed command resumes
from its last checkpoint in --output_dir. Phase 2 of the two-phase recipe: a new --output_dir,
`--init_checkpoint=<phase 1 output_dir> --max_seq_length=512 --max_predictions_per_seq=80`.

The flags map onto `bert_tf.training.pretraining.PretrainingOptions` (same names) and the run is
`pretrain(options, strategy)`: a notebook runs the same pretraining without this command.
"""

import dataclasses

from absl import flags, logging

from bert_tf import BertConfig
from bert_tf.cli import model_flags, scripting, training_flags
from bert_tf.modeling.tasks.pretrainer import PRETRAINING_OBJECTIVES
from bert_tf.training.pretraining import PretrainingOptions, pretrain

FLAGS = flags.FLAGS
model_flags.define("bert_config_file", "init_checkpoint", "vocab_file")
flags.adopt_module_key_flags(model_flags)  # its flags in --help, not only in --helpfull
flags.adopt_module_key_flags(training_flags)
# The original's flags, with its defaults.
flags.DEFINE_string("input_file", None, "Input TF example files (can be a glob or comma separated).")
flags.DEFINE_string("output_dir", None, "The output directory where the model checkpoints will be written.")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the records. Must match data generation.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked LM predictions per sequence. Must match data "
                     "generation (or, with --dynamic_masking, the most to mask).")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set (with --do_train also before training "
                  "and at every checkpoint).")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training (all replicas, all accumulation steps).")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps (optimizer updates).")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
# New flags (the training ones are in training_flags.py).
flags.DEFINE_float("lr_decay_power", 1.0, "Power of the polynomial learning-rate decay (1.0: linear, the original).")
flags.DEFINE_enum("pretraining_objective", "mlm_nsp", PRETRAINING_OBJECTIVES,
                  "mlm_nsp: masked LM + next sentence (the paper); mlm: masked LM only (\"No NSP\"); ltr: a "
                  "left-to-right LM (\"LTR & No NSP\"): causal self-attention, written into the model's config, "
                  "every position predicts the next token of the records' original text.")
flags.DEFINE_bool("dynamic_masking", False, "Records are unmasked (create_pretraining_data --dynamic_masking): "
                  "mask them anew each time they are read. Needs --vocab_file.")
flags.DEFINE_float("masked_lm_prob", 0.15, "With --dynamic_masking: fraction of tokens to mask.")
flags.DEFINE_bool("do_whole_word_mask", False, "With --dynamic_masking: mask whole words.")
flags.DEFINE_string("eval_input_file", None, "Eval TF example files (glob or comma separated); default: "
                    "--input_file, as the original.")
flags.DEFINE_bool("deterministic", False, "Deterministic ops (tf.config.experimental.enable_op_determinism): "
                  "with --seed, reruns and resumed runs give bit-identical results. Slower.")
for _name in ("input_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(_name)


def options():
    """The PretrainingOptions of the flags."""
    names = {field.name for field in dataclasses.fields(PretrainingOptions)} - {"config", "init_checkpoint"}
    config = BertConfig.from_json_file(FLAGS.bert_config_file)
    return PretrainingOptions(config=config, init_checkpoint=model_flags.init_checkpoint(),
                              **{name: FLAGS[name].value for name in names})


def main(_):
    logging.set_verbosity(logging.INFO)
    strategy = training_flags.create_strategy()  # first: before TensorFlow starts
    pretrain(options(), strategy, model_flags.config_name())


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
