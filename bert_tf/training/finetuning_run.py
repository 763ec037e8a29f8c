"""What every fine-tuning run does around its task's data: check the run's options before anything is read,
hold the weights to start from, train with the best-checkpoint watch, record the settings. The fine-tuning
commands (run_classifier.py, run_ner.py, run_swag.py, run_squad.py, run_embedder.py) map their flags onto
`RunOptions` and a task, and call the whole run, which a notebook calls the same way:
`classifier_run.run_classifier`, `ner_run.run_ner`, `swag_run.run_swag`, `squad_run.run_squad`,
`embedder_run.run_embedder`; each is built of these.

    options = RunOptions(output_dir="out", config=config, vocab_file="vocab.txt", init_checkpoint="bert_dir",
                         do_train=True, training=FineTuningOptions(num_train_epochs=2))
    tokenizer = start(options, strategy)
    tuner = create_finetuner(options, strategy, lambda: BertClassifier(config, 2))
    train(tuner, options, features, dev_results)
"""

import dataclasses
import os

from absl import logging

from bert_tf import checkpoint_paths, run_directory
from bert_tf.checkpoint_names import OUTPUT_WEIGHTS, SQUAD_SCOPE
from bert_tf.checkpoints import check_fits, opened
from bert_tf.config import BertConfig
from bert_tf.data import packing
from bert_tf.tokenization import FullTokenizer
from bert_tf.training import devices, precision
from bert_tf.training.best_checkpoint import BestCheckpoint
from bert_tf.training.finetuning import FineTuner, FineTuningOptions

# The options whose change a rerun that resumes a training state is warned about (and records).
RESUMED_SETTINGS = ("learning_rate", "train_batch_size", "max_seq_length", "num_train_epochs", "warmup_proportion",
                    "optimizer", "num_accumulation_steps", "mixed_precision", "seed", "group_by_length", "best_metric")
# Those a resumed run cannot change: the saved input position is in batches of that size, in that order; the
# optimizer state of float16 has a loss scale.
FIXED_ON_RESUME = ("train_batch_size", "group_by_length", "mixed_precision")
LINEAR_HEADS = (OUTPUT_WEIGHTS, SQUAD_SCOPE + OUTPUT_WEIGHTS)  # the original fine-tuning heads' weights


@dataclasses.dataclass
class RunOptions:
    """The options of a fine-tuning run besides its task's data; the defaults are the original scripts'.

    output_dir: the run directory (model.ckpt-N, eval_results.txt, ...; a killed run's state is resumed).
    config, vocab_file, do_lower_case: the model and its tokenizer. init_checkpoint: the weights to start
      from (any `open_checkpoint` format: a path, or an opened CheckpointSource), or None.
    do_train, do_eval, do_predict: what the run does. Without do_train it evaluates or predicts with the
      newest model.ckpt-N of output_dir, else with init_checkpoint.
    best_metric, early_stopping_patience: keep the best dev result's weights in output_dir/best/ (and stop
      after that many evaluations without improvement); see BestCheckpoint.
    mixed_precision: a key of `precision.POLICIES` (float16 turns on loss scaling); use_xla: None = on for
      GPUs and TPUs. training: the training hyper-parameters (FineTuningOptions; its loss_scaling and use_xla
      are set from these two).
    """
    output_dir: str
    config: BertConfig
    vocab_file: str
    init_checkpoint: object = None
    do_lower_case: bool = True
    max_seq_length: int = 128
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    best_metric: str = None
    early_stopping_patience: int = 0
    mixed_precision: str = "float32"
    use_xla: bool = None
    training: FineTuningOptions = dataclasses.field(default_factory=FineTuningOptions)

    def settings(self):
        """{name: value} of RESUMED_SETTINGS (what `run_directory.record_settings` records)."""
        return {name: getattr(self.training, name) if hasattr(self.training, name) else getattr(self, name)
                for name in RESUMED_SETTINGS}


def start(options, strategy, modes=("do_train", "do_eval", "do_predict"), config_name="the config", segments=1):
    """Checks `options` (a RunOptions) before any data is read and prepares the run: the training state in
    output_dir (`run_directory.check_training_start`), init_checkpoint opened (it becomes the opened
    CheckpointSource) and checked against the config, output_dir created, the precision policy and seed set.
    Returns the tokenizer (a FullTokenizer).
    modes: the modes this kind of run has (SQuAD predicts and evaluates in one, with do_predict).
    config_name: what a checkpoint that does not fit calls the config (`checkpoints.check_fits`).
    segments: texts per example (2: pairs), for the shortest max_seq_length that holds a piece of each."""
    if not any(getattr(options, mode) for mode in modes):
        raise ValueError(f"At least one of {', '.join(f'`{m}`' for m in modes)} must be True.")
    if options.early_stopping_patience and not options.best_metric:
        raise ValueError("early_stopping_patience needs best_metric (the dev result to watch)")
    for mode in modes:
        name = f"{mode[3:]}_batch_size"
        value = getattr(options.training if mode == "do_train" else options, name)
        if value < 1:
            raise ValueError(f"{name}={value} must be >= 1")
    packing.check_max_seq_length(options.max_seq_length, segments)
    options.config.check_seq_length(options.max_seq_length)
    tokenizer = FullTokenizer(options.vocab_file, do_lower_case=options.do_lower_case)
    options.config.check_vocab_size(len(tokenizer.vocab), options.vocab_file)
    if options.do_train:  # first: a state to resume from decides, not init_checkpoint
        run_directory.check_training_start(options.output_dir, options.init_checkpoint, options.config,
                                           options.settings(), FIXED_ON_RESUME)
    if options.init_checkpoint is not None:  # opened once: the run reads its shapes, settings and weights
        options.init_checkpoint = opened(options.init_checkpoint)
        check_fits(options.config, options.init_checkpoint, config_name)
    os.makedirs(options.output_dir, exist_ok=True)
    precision.set_policy(options.mixed_precision, options.training.seed)
    return tokenizer


def check_best_metric(options, result_names):
    """After a run has read its data and before it writes anything: when it trains with best_metric,
    ValueError unless that is one of `result_names` (the keys of the task's dev results), so that a misspelt
    or another task's metric is not found only at the first dev evaluation, after training to a checkpoint."""
    if options.do_train and options.best_metric and options.best_metric not in result_names:
        raise ValueError(f"best_metric={options.best_metric} is not a dev result of this task; its dev results are "
                         f"{', '.join(sorted(set(result_names)))}")


def head_settings(head):
    """A head's options (a model's `head_options()`, None for the linear head) as `name=value` words."""
    head = dict(head or {"task_head": "linear"})
    if "feature_layers" in head:  # run_ner.py's feature_based: its BiLSTM head goes without saying
        del head["task_head"]
        head = {"feature_based": "true", **head}
    order = ("feature_based", "task_head", "feature_layers", "bilstm_size", "bilstm_layers")
    return " ".join(f"{name}={head[name]}" for name in order if name in head)


def check_head(report, model, do_train):
    """After loading `report` (a LoadReport) into `model`, when the checkpoint has a fine-tuned head of
    another kind than the model's: ValueError without `do_train` (its head would go unused and an untrained
    one predict), else one line saying that a new head trains from random weights."""
    linear = any(name in LINEAR_HEADS for name in [*report.mapped, *report.ignored])
    if report.head is None and not linear:
        return  # a pretrained checkpoint: every task head starts new
    if report.head == model.head_options():
        return
    if not do_train:
        raise ValueError(f"{report.path} was fine-tuned with {head_settings(report.head)}; pass the same options to "
                         f"evaluate or predict with it (this run has {head_settings(model.head_options())})")
    logging.warning("%s has a %s head, unused: %s trains a new head from random weights (reported as missing above)",
                    report.path, (report.head or {"task_head": "linear"})["task_head"],
                    head_settings(model.head_options()))


def create_finetuner(options, strategy, model_fn):
    """A FineTuner of `model_fn()` with `options.training` (its loss scaling and XLA from the run's options),
    holding the weights to start from: when not training, the newest model.ckpt-N in output_dir if there is
    one; otherwise init_checkpoint."""
    training = dataclasses.replace(
        options.training, loss_scaling=options.mixed_precision == "float16",
        use_xla=devices.of(strategy).use_xla(options.use_xla))
    tuner = FineTuner(strategy, model_fn, training, options.output_dir)
    trained = None if options.do_train else checkpoint_paths.newest_export(options.output_dir)
    if trained or options.init_checkpoint is not None:
        report = tuner.load(trained or options.init_checkpoint)
        check_head(report, tuner.model, options.do_train)
        untrained = [name for name in report.missing if not name.startswith("bert/")]
        if untrained and not options.do_train:
            logging.warning("%s has no %s: predicting with an untrained head", report.path, ", ".join(untrained))
    elif not options.do_train:
        raise ValueError(f"nothing to evaluate or predict with: no model.ckpt-* in {options.output_dir} and no "
                         "init_checkpoint")
    else:
        logging.warning("No init_checkpoint: training from random weights")
    return tuner


def train(tuner, options, data, dev_results):
    """Fine-tunes on `data` (features in memory or a TrainingInput, see FineTuner.train); with best_metric,
    `dev_results()` (the eval_results.txt dict of the current weights) runs after every checkpoint and the best
    weights go to output_dir/best/ (see BestCheckpoint), early_stopping_patience stopping early. The settings
    of the run are recorded in output_dir (`run_directory.record_settings`) once its training state is restored
    (a run that cannot resume it records nothing)."""
    def record(step):
        run_directory.record_settings(options.output_dir, options.settings())

    if not options.best_metric:
        return tuner.train(data, on_start=record)
    best = BestCheckpoint(options.output_dir, options.best_metric, options.early_stopping_patience)
    return tuner.train(data, after_checkpoint=lambda step: best.update(step, dev_results), on_start=record)


def train_and_evaluate(tuner, options, training_data, dev_results):
    """What a run does between building its model and predicting: with do_train, `train` on `training_data()`
    (called only then), then with do_eval `dev_results()`, which the chief logs and writes to
    output_dir/eval_results.txt (`run_directory.report_results`). Returns those results, or None without
    do_eval."""
    if options.do_train:
        train(tuner, options, training_data(), dev_results)
    if not options.do_eval:
        return None
    results = dev_results()
    if tuner.is_chief:
        run_directory.report_results(options.output_dir, results)
    return results
