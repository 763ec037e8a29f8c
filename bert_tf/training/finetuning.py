"""One fine-tuning run (train, then predict) of a task model on any tf.distribute strategy, or on Keras's JAX
backend (strategy None: keras.distribution's devices, `devices`).

What run_classifier.py, run_ner.py, run_swag.py and run_squad.py share: the original's step count (examples
/ batch size x epochs, warmup a fraction of it), the shared training loop (`bert_tf.training.loop.Trainer`:
checkpoints in output_dir, resume), early stopping on a dev metric (`best_checkpoint.BestCheckpoint`), and
predictions gathered on the host so that any metric can be computed from them.

    tuner = FineTuner(strategy, lambda: BertClassifier(config, 2), FineTuningOptions(), output_dir)
    tuner.load(init_checkpoint)
    tuner.train(train_features)        # or a TrainingInput: examples read from records (SQuAD)
    logits = tuner.predict(dev_features)
"""

import dataclasses
import math
from typing import Callable

from absl import logging

from bert_tf import checkpoint_paths, run_directory
from bert_tf.batched_inference import BatchedInference
from bert_tf.checkpoints import load_checkpoint
from bert_tf.data.tasks.batches import bucket_widths, num_examples
from bert_tf.feature_schema import INPUT_IDS
from bert_tf.training import devices, inputs, optimization, trainers
from bert_tf.training.best_checkpoint import StopTraining
from bert_tf.training.flops import training_flops_per_example


@dataclasses.dataclass
class FineTuningOptions:
    """The training hyper-parameters of the original fine-tuning scripts (their defaults) and the new ones.

    train_batch_size: examples per optimizer step over all replicas and accumulation steps.
    num_train_epochs, warmup_proportion: steps = int(examples / train_batch_size * epochs), the first
      int(steps * warmup_proportion) of them with a linear warmup (the original's arithmetic).
    save_checkpoints_steps, iterations_per_loop: as the original (checkpoint / log / steps per call).
    optimizer: a name of `optimization.OPTIMIZERS`; loss_scaling: for float16 mixed precision.
    num_accumulation_steps, use_xla: see `loop.Trainer`. seed: the input order.
    group_by_length: training batches of examples of similar length (`pipeline.length_grouped`).
    """
    train_batch_size: int = 32
    learning_rate: float = 5e-5
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    optimizer: str = "adam_weight_decay"
    loss_scaling: bool = False
    num_accumulation_steps: int = 1
    use_xla: bool = False
    seed: int = None
    group_by_length: bool = False

    def train_steps(self, count):
        """(num_train_steps, num_warmup_steps) for `count` training examples."""
        steps = int(count / self.train_batch_size * self.num_train_epochs)
        if steps < 1:
            raise ValueError(f"{count} training examples at train_batch_size={self.train_batch_size} for "
                             f"num_train_epochs={self.num_train_epochs} make no training step")
        return steps, int(steps * self.warmup_proportion)


@dataclasses.dataclass
class TrainingInput:
    """Training examples that `FineTuner.train` reads through a tf.data pipeline instead of from memory.

    count: the number of training examples (the original's step arithmetic counts examples, e.g. SQuAD
      questions, not the windows that they become).
    dataset_fn: (devices.InputContext, per-worker batch size) -> dataset of feature dicts, shuffled and
      repeated as training needs (see `loop.Trainer.train`).
    sequence_shape: the token shape of one example, (T,) or (choices, T): for the FLOPs in the log.
    """
    count: int
    dataset_fn: Callable
    sequence_shape: tuple


class FineTuner:
    """A task model (`model_fn()`, a BertTaskModel, built under the strategy's scope) and how to train it.

    Attributes: model, strategy, options, output_dir, global_step (steps trained, or read from the
    checkpoint that `load` loaded).
    """

    def __init__(self, strategy, model_fn, options, output_dir):
        self.strategy, self.options, self.output_dir = strategy, options, output_dir
        self.devices = devices.of(strategy)
        with self.devices.scope():
            self.model = model_fn()
            self.model.build()
        self.global_step = 0
        self._inference = {}  # {(model method name, trim): its BatchedInference}

    def load(self, checkpoint):
        """Loads pretrained or fine-tuned weights (any `open_checkpoint` format, or an opened source); a fresh
        head is reported."""
        report = load_checkpoint(self.model, checkpoint)
        self.global_step = checkpoint_paths.step_of(report.path) or 0  # report.path: the prefix a folder resolved to
        return report

    def train(self, data, after_checkpoint=None, on_start=None):
        """Trains on `data` for the options' epochs, resuming from output_dir if a previous run of the same
        command was interrupted. `data`: a dict of NumPy arrays with `label_ids` (held in memory), or a
        TrainingInput. `after_checkpoint(step)` runs after every checkpoint (e.g. `BestCheckpoint.update` on a
        dev evaluation); if it raises `StopTraining`, training ends there. `on_start(step)` runs on the chief
        once the state to resume is restored (`loop.Trainer.train`), after bert_config.json is written. Returns
        the last metrics (None after an early stop)."""
        options = self.options
        if not isinstance(data, TrainingInput):
            data = self.in_memory_input(data)
        num_train_steps, num_warmup_steps = options.train_steps(data.count)
        with self.devices.scope():
            optimizer = optimization.create_optimizer(
                options.optimizer, options.learning_rate, num_train_steps, num_warmup_steps,
                loss_scaling=options.loss_scaling)
        sequences, seq_length = math.prod(data.sequence_shape[:-1]), data.sequence_shape[-1]
        flops = sequences * training_flops_per_example(self.model.config, seq_length, 0)
        trainer = trainers.create_trainer(self.strategy, self.model, optimizer, options.train_batch_size,
                                          options.num_accumulation_steps, use_xla=options.use_xla,
                                          flops_per_example=flops)
        logging.info("***** Running training: %d examples, batch size %d, %d steps (%d warmup); %s batches%s, "
                     "%s; input %s *****", data.count, options.train_batch_size, num_train_steps, num_warmup_steps,
                     "length-grouped" if options.group_by_length else "shuffled",
                     f" cut to widths {self.training_widths(data.sequence_shape[-1])}" if self.compiled else "",
                     self.model.encoder.training_layout(self.compiled), inputs.kind_of(self.devices))
        def started(step):  # the output_dir is then a complete checkpoint directory for --init_checkpoint
            run_directory.write_config(self.output_dir, self.model.config)
            if on_start is not None:
                on_start(step)

        try:
            results = trainer.train(lambda context, size: self._training_input(data.dataset_fn(context, size)),
                                    self.output_dir, num_train_steps, options.iterations_per_loop,
                                    options.save_checkpoints_steps, after_checkpoint, started)
        except StopTraining as stop:
            logging.info("Early stop at step %d of %d: %s", trainer.step, num_train_steps, stop)
            results = None
        self.global_step = trainer.step
        return results

    @staticmethod
    def _training_input(dataset):
        """A dataset_fn's dataset as the loop's input: tf.data without autotuning (`without_autotune`)."""
        if not inputs.is_tf_data(dataset):  # Grain's
            return dataset
        from bert_tf.data.tasks.pipeline import without_autotune

        return without_autotune(dataset)

    @property
    def is_chief(self):
        """False on the workers of a multi-worker strategy other than the chief (which writes the outputs)."""
        return self.devices.is_chief

    @property
    def compiled(self):
        """Whether the training step runs under XLA (--use_xla, or Keras's JAX backend): static shapes."""
        return self.devices.use_xla(self.options.use_xla)

    def training_widths(self, seq_length):
        """The widths that training batches are cut to (`make_dataset`'s `widths`): None (each batch's longest
        example), or where the step is compiled the 4 of `pipeline.bucket_widths`, one compilation each."""
        return bucket_widths(seq_length) if self.compiled else None

    def in_memory_input(self, features, count=None):
        """The TrainingInput of `features` (dict of NumPy arrays [N, ...]): shuffled (or length-grouped) batches
        cut to `training_widths`. count: the examples the step arithmetic counts (default N)."""
        options = self.options
        widths = self.training_widths(features[INPUT_IDS].shape[-1])

        def dataset_fn(input_context, batch_size):
            if inputs.kind_of(self.devices) == "grain":
                from bert_tf.data.tasks.grain_input import feature_batches as batches
            else:
                from bert_tf.data.tasks.pipeline import make_dataset as batches
            return batches(features, batch_size, True, options.seed, input_context, trim_padding=True,
                           group_by_length=options.group_by_length, widths=widths)

        count = num_examples(features) if count is None else count
        return TrainingInput(count, dataset_fn, tuple(features[INPUT_IDS].shape[1:]))

    def predict(self, features, batch_size, method="__call__", what="prediction", unit="examples", trim=True):
        """The model's outputs (float32 NumPy [N, ...], or a dict of them) for every example of `features`, in
        order, in batches of `batch_size` on this process's replicas (compiled with XLA when the options say
        so). `method`: the model method to run (e.g. BertFeatureTagger's "layer_features"), called with
        training=False.

        Batches group examples of similar length and drop the padding they all share
        (`bert_tf.batched_inference`; `trim=False`: full-length batches): the outputs are those of
        full-length batches (within float rounding), in a fraction of the time on short texts. A per-token
        output (e.g. [N, T, labels]) comes back padded with zeros to the full T. Shows the progress in `unit`,
        named `what`.
        """
        if (method, trim) not in self._inference:
            function = getattr(self.model, method)
            self._inference[method, trim] = BatchedInference(
                lambda inputs: function(inputs, training=False), self.options.use_xla, self.strategy, trim,
                self.model.variables)
        return self._inference[method, trim].predict(features, batch_size, what, unit)
