"""Masked LM (+ next sentence) pretraining of BERT on TFRecords, on any tf.distribute strategy.

The original's flags and defaults, e.g. the google-research/bert README command runs unchanged:

    python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord --output_dir=/tmp/pretraining_output \
      --do_train=True --do_eval=True --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --train_batch_size=32 --max_seq_length=128 \
      --max_predictions_per_seq=20 --num_train_steps=20 --num_warmup_steps=10 --learning_rate=2e-5

plus `--distribution_strategy`, `--num_gpus`, `--tpu`, `--mixed_precision`, `--use_xla`, `--optimizer`,
`--num_accumulation_steps`, `--steps_per_loop` (= --iterations_per_loop), `--pretraining_objective`
(mlm_nsp, mlm, ltr: the paper's section 5.1 ablations; `--use_next_sentence_label=False` is mlm),
`--dynamic_masking`, `--eval_input_file`, `--seed`, `--deterministic`. Rerunning a killed command resumes
from its last checkpoint in --output_dir. Phase 2 of the two-phase recipe: a new --output_dir,
`--init_checkpoint=<phase 1 output_dir> --max_seq_length=512 --max_predictions_per_seq=80`.
"""

import dataclasses
import os

import tensorflow as tf
from absl import flags, logging

from bert_tf import BertConfig, atomic_io, run_directory
from bert_tf.checkpoints import load_checkpoint
from bert_tf.cli import flag_checks, model_flags, scripting, training_flags
from bert_tf.data.pretraining import pipeline
from bert_tf.data.pretraining.masking import MaskingConfig
from bert_tf.modeling.tasks.pretrainer import PRETRAINING_OBJECTIVES, BertPretrainer, with_perplexity
from bert_tf.tokenization import load_vocab
from bert_tf.training import distribute, loop, optimization

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
flags.DEFINE_bool("use_next_sentence_label", None, "False: the same as --pretraining_objective=mlm (kept from "
                  "earlier versions); True: mlm_nsp.")
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


# The flags whose change a rerun that resumes a training state is warned about (and records).
RESUMED_SETTINGS = ("learning_rate", "train_batch_size", "max_seq_length", "max_predictions_per_seq",
                    "num_train_steps", "num_warmup_steps", "lr_decay_power", "pretraining_objective",
                    "dynamic_masking", "optimizer", "num_accumulation_steps", "mixed_precision", "seed")


def check_output_dir(output_dir):
    """OSError now, rather than at the first checkpoint, if `output_dir` cannot be written."""
    os.makedirs(output_dir, exist_ok=True)
    probe = atomic_io.temporary_path(os.path.join(output_dir, ".write_test"))
    try:
        with open(probe, "wb") as f:
            f.write(b"ok")
    except OSError as e:
        raise atomic_io.disk_error(e, output_dir) from None
    finally:
        if os.path.exists(probe):
            os.remove(probe)


def masking_config(config):
    if not FLAGS.dynamic_masking:
        return None
    if not FLAGS.vocab_file:
        raise ValueError("--dynamic_masking needs --vocab_file (the ids of [MASK], [CLS], [SEP])")
    return MaskingConfig.from_vocab(load_vocab(FLAGS.vocab_file), FLAGS.masked_lm_prob,
                                    FLAGS.max_predictions_per_seq, FLAGS.do_whole_word_mask, FLAGS.vocab_file)


def pretraining_objective():
    """--pretraining_objective, reconciled with the older --use_next_sentence_label (ValueError if they
    disagree)."""
    objective, nsp = FLAGS.pretraining_objective, FLAGS.use_next_sentence_label
    if nsp is None:
        return objective
    if nsp and objective != "mlm_nsp":
        raise ValueError(f"--use_next_sentence_label=True contradicts --pretraining_objective={objective}, "
                         "which has no next sentence prediction; drop --use_next_sentence_label")
    return "mlm" if not nsp and objective == "mlm_nsp" else objective


def objective_config(config, objective):
    """The model's config for `objective`: ltr turns causal_attention on (so the checkpoint's config keeps
    it); a masked LM objective on a causal config is a ValueError."""
    if objective == "ltr":
        return dataclasses.replace(config, causal_attention=True)
    if config.causal_attention:
        raise ValueError(f"--bert_config_file={FLAGS.bert_config_file} has causal_attention (a left-to-right "
                         f"model) but --pretraining_objective={objective} is a masked LM, which reads both "
                         "directions; use --pretraining_objective=ltr")
    return config


def main(_):
    logging.set_verbosity(logging.INFO)
    if not FLAGS.do_train and not FLAGS.do_eval:
        raise ValueError("At least one of `do_train` or `do_eval` must be True.")
    flag_checks.check_at_least(1, "train_batch_size", "eval_batch_size")
    objective = pretraining_objective()
    strategy = training_flags.create_strategy()  # first: before TensorFlow starts
    config = objective_config(BertConfig.from_json_file(FLAGS.bert_config_file), objective)
    config.check_seq_length(FLAGS.max_seq_length)
    if not 1 <= FLAGS.max_predictions_per_seq <= FLAGS.max_seq_length:
        raise ValueError(f"max_predictions_per_seq={FLAGS.max_predictions_per_seq} must be between 1 and "
                         f"max_seq_length={FLAGS.max_seq_length}")
    if FLAGS.vocab_file:
        config.check_vocab_size(len(load_vocab(FLAGS.vocab_file)), FLAGS.vocab_file)
    settings = training_flags.check_resumable(config, RESUMED_SETTINGS) if FLAGS.do_train else None
    model_flags.check_init_checkpoint(config)
    masking = masking_config(config)
    train_files = pipeline.expand_record_patterns(FLAGS.input_file)
    eval_files = pipeline.expand_record_patterns(FLAGS.eval_input_file or FLAGS.input_file)
    checked = [train_files] + ([eval_files] if FLAGS.do_eval and eval_files != train_files else [])
    for files in checked:  # each file's framing walked once: the eval files are the training files by default
        pipeline.check_records(files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, config.vocab_size,
                               masked=masking is None)
    workers, replicas = distribute.num_workers(strategy), strategy.num_replicas_in_sync
    if FLAGS.do_eval and FLAGS.eval_batch_size % replicas:
        raise ValueError(f"eval_batch_size={FLAGS.eval_batch_size} is not a multiple of {replicas} replica(s)")
    check_output_dir(FLAGS.output_dir)

    policy = training_flags.set_policy()
    if FLAGS.deterministic:
        tf.config.experimental.enable_op_determinism()
    use_xla = training_flags.use_xla(strategy)
    with strategy.scope():
        model = BertPretrainer(config, objective)
        model.build()
        if FLAGS.init_checkpoint:
            load_checkpoint(model, model_flags.init_checkpoint())
        optimizer = optimization.create_optimizer(
            FLAGS.optimizer, FLAGS.learning_rate, FLAGS.num_train_steps, FLAGS.num_warmup_steps,
            decay_power=FLAGS.lr_decay_power, loss_scaling=policy == "mixed_float16")
    trainer = loop.Trainer(strategy, model, optimizer, FLAGS.train_batch_size, FLAGS.num_accumulation_steps,
                           use_xla=use_xla, flops_per_example=loop.training_flops_per_example(
                               config, FLAGS.max_seq_length,
                               FLAGS.max_seq_length if objective == "ltr" else FLAGS.max_predictions_per_seq))
    if trainer.is_chief and FLAGS.do_train:
        run_directory.write_config(FLAGS.output_dir, config)
        run_directory.record_settings(FLAGS.output_dir, settings)
    logging.info("Training with %s on %d replica(s), %d worker(s); XLA %s; batch %d = %d micro-batch(es) of %d",
                 policy, replicas, workers, "on" if use_xla else "off", FLAGS.train_batch_size,
                 FLAGS.num_accumulation_steps, FLAGS.train_batch_size // FLAGS.num_accumulation_steps)

    def train_dataset(input_context, batch_size):
        return pipeline.pretraining_dataset(
            train_files, batch_size, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, is_training=True,
            input_context=input_context, dynamic_masking=masking, seed=FLAGS.seed)

    def evaluate():
        # As the original: the eval records in order, repeated, max_eval_steps full batches.
        batch_size = FLAGS.eval_batch_size // workers
        dataset = pipeline.pretraining_dataset(
            eval_files, batch_size, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, is_training=False,
            input_context=trainer.input_context(), dynamic_masking=masking, seed=FLAGS.seed)
        dataset = dataset.unbatch().repeat().batch(batch_size, drop_remainder=True)
        return with_perplexity(trainer.evaluate(dataset, FLAGS.max_eval_steps, FLAGS.output_dir), objective)

    def evaluate_before_the_end(step):
        if step < FLAGS.num_train_steps:  # the final evaluation follows training
            evaluate()

    if FLAGS.do_train:
        state_dir = os.path.join(FLAGS.output_dir, run_directory.STATE_DIR)
        if FLAGS.do_eval and not run_directory.steps(state_dir, run_directory.STATE_NAME):
            evaluate()  # the starting point of the eval curve
        logging.info("***** Running training *****")
        trainer.train(train_dataset, FLAGS.output_dir, FLAGS.num_train_steps, FLAGS.iterations_per_loop,
                      FLAGS.save_checkpoints_steps, evaluate_before_the_end if FLAGS.do_eval else None)
    if FLAGS.do_eval:
        logging.info("***** Running evaluation *****")
        global_step = trainer.step
        if not FLAGS.do_train:
            latest = run_directory.newest_export(FLAGS.output_dir)
            if latest:
                load_checkpoint(model, latest)
                global_step = run_directory.step_of(latest)
            elif not FLAGS.init_checkpoint:
                raise ValueError(f"nothing to evaluate: no checkpoint in {FLAGS.output_dir} and no --init_checkpoint")
        results = evaluate()
        results["global_step"] = global_step
        if trainer.is_chief:
            training_flags.write_results(results)


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
