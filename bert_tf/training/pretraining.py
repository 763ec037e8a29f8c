"""One pretraining run of BERT (masked LM + next sentence, or the paper's ablations) on TFRecords, on any
tf.distribute strategy or, on Keras's JAX backend, keras.distribution's devices (`devices`):
what `run_pretraining.py` runs, callable from Python.

    options = PretrainingOptions(input_file="records/*.tfrecord", output_dir="out", config=config,
                                 num_train_steps=1000, num_warmup_steps=100, do_eval=True)
    results = pretrain(options)                  # {"masked_lm_accuracy": ..., "global_step": 1000, ...}

The run directory is the command's (`run_directory`): model.ckpt-N, the training state, eval_results.txt;
calling `pretrain` again with the same options resumes from the state a killed run left.
"""

import dataclasses

from absl import logging

from bert_tf import atomic_io, checkpoint_paths, run_directory
from bert_tf.checkpoints import check_fits, load_checkpoint, opened
from bert_tf.config import BertConfig
from bert_tf.data.pretraining import grain_input, record_files
from bert_tf.data.pretraining.masking import MaskingConfig
from bert_tf.modeling.tasks.pretrainer import PRETRAINING_OBJECTIVES, BertPretrainer, with_perplexity
from bert_tf.tokenization import load_vocab
from bert_tf.training import devices, distribute, inputs, optimization, precision, trainers
from bert_tf.training.flops import training_flops_per_example

# The options whose change a rerun that resumes a training state is warned about (and records).
RESUMED_SETTINGS = ("learning_rate", "train_batch_size", "max_seq_length", "max_predictions_per_seq",
                    "num_train_steps", "num_warmup_steps", "lr_decay_power", "pretraining_objective",
                    "dynamic_masking", "optimizer", "num_accumulation_steps", "mixed_precision", "seed")
# Those a resumed run cannot change: the saved input position is in batches of that size, of that input; the
# optimizer state of float16 has a loss scale; the objective decides the model's heads.
FIXED_ON_RESUME = ("train_batch_size", "dynamic_masking", "mixed_precision", "pretraining_objective")


@dataclasses.dataclass
class PretrainingOptions:
    """Everything a pretraining run reads; the defaults are the original run_pretraining.py's.

    input_file: the pretraining records (create_pretraining_data's), a glob or comma-separated list.
    output_dir: the run directory (created; a killed run's state there is resumed).
    config: the model's BertConfig. init_checkpoint: weights to start from (any `open_checkpoint` format: a
      path, or an opened CheckpointSource), or None. vocab_file: the vocab.txt (checked against the config;
      needed for dynamic masking).
    do_train, do_eval: train, then (and with do_train also before training and at every checkpoint)
      evaluate max_eval_steps batches of eval_input_file (default: input_file, as the original).
    max_seq_length, max_predictions_per_seq: the records' shapes (dynamic masking: the most to mask).
    train_batch_size: examples per optimizer step over all replicas and accumulation steps.
    pretraining_objective: one of PRETRAINING_OBJECTIVES (mlm_nsp: the paper; mlm: "No NSP"; ltr: a
      left-to-right LM, causal_attention written into the config).
    dynamic_masking, masked_lm_prob, do_whole_word_mask: mask unmasked records anew each time they are read.
    optimizer: a name of `optimization.OPTIMIZERS`; lr_decay_power: the polynomial decay's power (1: linear).
    mixed_precision: a key of `precision.POLICIES`; use_xla: None = on for GPUs and TPUs.
    seed: weights and input order; deterministic: bit-identical reruns (slower).
    save_checkpoints_steps, iterations_per_loop: checkpoint / log / steps per call, as the original.
    """
    input_file: str
    output_dir: str
    config: BertConfig
    init_checkpoint: object = None
    vocab_file: str = None
    do_train: bool = True
    do_eval: bool = False
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    train_batch_size: int = 32
    eval_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    max_eval_steps: int = 100
    lr_decay_power: float = 1.0
    pretraining_objective: str = "mlm_nsp"
    dynamic_masking: bool = False
    masked_lm_prob: float = 0.15
    do_whole_word_mask: bool = False
    eval_input_file: str = None
    optimizer: str = "adam_weight_decay"
    num_accumulation_steps: int = 1
    mixed_precision: str = "float32"
    use_xla: bool = None
    seed: int = None
    deterministic: bool = False
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000

    def settings(self):
        """{name: value} of RESUMED_SETTINGS (what `run_directory.record_settings` records)."""
        return {name: getattr(self, name) for name in RESUMED_SETTINGS}


def record_run(output_dir, config, settings):
    """Once training is sure to start (the state to resume restored): bert_config.json, which makes output_dir a
    complete checkpoint directory for init_checkpoint, and the run's settings (`run_directory.record_settings`)."""
    run_directory.write_config(output_dir, config)
    run_directory.record_settings(output_dir, settings)


def objective_config(config, objective):
    """The model's config for `objective`: ltr turns causal_attention on (so the checkpoint's config keeps
    it); a masked LM objective on a causal config is a ValueError."""
    if objective not in PRETRAINING_OBJECTIVES:
        raise ValueError(f"pretraining_objective={objective!r}: expected one of {', '.join(PRETRAINING_OBJECTIVES)}")
    if objective == "ltr":
        return dataclasses.replace(config, causal_attention=True)
    if config.causal_attention:
        raise ValueError(f"the config has causal_attention (a left-to-right model) but pretraining_objective="
                         f"{objective} is a masked LM, which reads both directions; use pretraining_objective=ltr")
    return config


def _masking(options):
    """The MaskingConfig of dynamic masking, or None for records masked when they were made."""
    if not options.dynamic_masking:
        return None
    if not options.vocab_file:
        raise ValueError("dynamic_masking needs vocab_file (the ids of [MASK], [CLS], [SEP])")
    return MaskingConfig.from_vocab(load_vocab(options.vocab_file), options.masked_lm_prob,
                                    options.max_predictions_per_seq, options.do_whole_word_mask, options.vocab_file)


def check_options(options):
    """ValueError for options that cannot run, before anything is read or written; returns the model's config
    (`objective_config`)."""
    if not options.do_train and not options.do_eval:
        raise ValueError("At least one of `do_train` or `do_eval` must be True.")
    for name in ("train_batch_size", "eval_batch_size"):
        if getattr(options, name) < 1:
            raise ValueError(f"{name}={getattr(options, name)} must be >= 1")
    config = objective_config(options.config, options.pretraining_objective)
    config.check_seq_length(options.max_seq_length)
    if not 1 <= options.max_predictions_per_seq <= options.max_seq_length:
        raise ValueError(f"max_predictions_per_seq={options.max_predictions_per_seq} must be between 1 and "
                         f"max_seq_length={options.max_seq_length}")
    if options.vocab_file:
        config.check_vocab_size(len(load_vocab(options.vocab_file)), options.vocab_file)
    return config


def pretrain(options, strategy=None, config_name="the config"):
    """Runs `options` (a PretrainingOptions) under `strategy` (default: `distribute.current_strategy()`; a
    multi-worker strategy must be made before TensorFlow starts) and returns the final evaluation's results (with
    global_step; also written to output_dir/eval_results.txt), or None without do_eval.

    Everything is checked before the first write: the options, the records' framing and shapes, the
    checkpoint against the config, a training state in output_dir against the config (the settings that
    differ from the state's are warned about); an OSError now if output_dir cannot be written. config_name:
    what a checkpoint that does not fit calls the config (`checkpoints.check_fits`)."""
    strategy = strategy or distribute.current_strategy()  # None on JAX: keras.distribution's devices
    config = check_options(options)
    objective = options.pretraining_objective
    if options.do_train:
        run_directory.check_training_start(options.output_dir, options.init_checkpoint, config,
                                           options.settings(), FIXED_ON_RESUME)
    source = opened(options.init_checkpoint) if options.init_checkpoint is not None else None
    if source is not None:
        check_fits(config, source, config_name)
    masking = _masking(options)
    train_files = record_files.expand_record_patterns(options.input_file)
    eval_files = record_files.expand_record_patterns(options.eval_input_file or options.input_file)
    checked = [train_files] + ([eval_files] if options.do_eval and eval_files != train_files else [])
    for files in checked:  # each file's framing walked once: the eval files are the training files by default
        record_files.check_records(files, options.max_seq_length, options.max_predictions_per_seq, config.vocab_size,
                               masked=masking is None)
    where = devices.of(strategy)
    workers, replicas = where.num_workers, where.num_replicas
    if options.do_eval and options.eval_batch_size % replicas:
        raise ValueError(f"eval_batch_size={options.eval_batch_size} is not a multiple of {replicas} replica(s)")
    atomic_io.check_writable(options.output_dir)

    policy = precision.set_policy(options.mixed_precision, options.seed)
    if options.deterministic and where.backend == "tensorflow":  # JAX's CPU and GPU steps are deterministic
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()
    use_xla = where.use_xla(options.use_xla)
    with where.scope():
        model = BertPretrainer(config, objective)
        model.build()
        if source is not None:
            load_checkpoint(model, source)
        optimizer = optimization.create_optimizer(
            options.optimizer, options.learning_rate, options.num_train_steps, options.num_warmup_steps,
            decay_power=options.lr_decay_power, loss_scaling=policy == "mixed_float16")
    predictions = options.max_seq_length if objective == "ltr" else options.max_predictions_per_seq
    flops = training_flops_per_example(config, options.max_seq_length, predictions)
    trainer = trainers.create_trainer(strategy, model, optimizer, options.train_batch_size,
                                      options.num_accumulation_steps, use_xla=use_xla, flops_per_example=flops)
    input_kind = inputs.kind_of(where)
    logging.info("Training with %s on %d replica(s), %d worker(s); XLA %s; batch %d = %d micro-batch(es) of %d; %s; "
                 "input %s", policy, replicas, workers, "on" if use_xla else "off", options.train_batch_size,
                 options.num_accumulation_steps, options.train_batch_size // options.num_accumulation_steps,
                 model.encoder.training_layout(use_xla), input_kind)

    def batches(files, batch_size, input_context, is_training):
        """The records of `files` in batches (training: shuffled, repeated; else in order, repeated, full
        batches, as the original's evaluation), by the run's input."""
        lengths = (options.max_seq_length, options.max_predictions_per_seq)
        if input_kind == "grain":
            return inputs.GrainInput(grain_input.pretraining_batches(
                files, batch_size, *lengths, is_training, input_context, masking, options.seed, repeat=True),
                seq_length=options.max_seq_length)
        from bert_tf.data.pretraining import pipeline  # tf.data: TensorFlow's input

        dataset = pipeline.pretraining_dataset(files, batch_size, *lengths, is_training, input_context, masking,
                                               options.seed)
        return dataset if is_training else dataset.unbatch().repeat().batch(batch_size, drop_remainder=True)

    def train_dataset(input_context, batch_size):
        return batches(train_files, batch_size, input_context, is_training=True)

    def evaluate():
        # As the original: the eval records in order, repeated, max_eval_steps full batches.
        data = inputs.wrap(batches(eval_files, options.eval_batch_size // workers, trainer.input_context(),
                                   is_training=False))
        return with_perplexity(trainer.evaluate(data.iterator, options.max_eval_steps, options.output_dir), objective)

    def evaluate_before_the_end(step):
        if step < options.num_train_steps:  # the final evaluation follows training
            evaluate()

    if options.do_train:
        if options.do_eval and not checkpoint_paths.state_steps(options.output_dir):
            evaluate()  # the starting point of the eval curve
        logging.info("***** Running training *****")
        trainer.train(train_dataset, options.output_dir, options.num_train_steps, options.iterations_per_loop,
                      options.save_checkpoints_steps, evaluate_before_the_end if options.do_eval else None,
                      on_start=lambda step: record_run(options.output_dir, config, options.settings()))
    if not options.do_eval:
        return None
    logging.info("***** Running evaluation *****")
    global_step = trainer.step
    if not options.do_train:
        latest = checkpoint_paths.newest_export(options.output_dir)
        if latest:
            load_checkpoint(model, latest)
            global_step = checkpoint_paths.step_of(latest)
        elif source is None:
            raise ValueError(f"nothing to evaluate: no checkpoint in {options.output_dir} and no init_checkpoint")
    results = {**evaluate(), "global_step": global_step}
    if trainer.is_chief:
        run_directory.report_results(options.output_dir, results)
    return results
