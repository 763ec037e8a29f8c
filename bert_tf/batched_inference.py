"""A model run over many examples in batches: the one inference path of fine-tuning prediction
(`FineTuner.predict`, run_squad.py's too), sentence embeddings (`SentenceEncoder`) and feature extraction
(`FeatureExtractor`).

    inference = BatchedInference(lambda inputs: model(inputs, training=False), use_xla, strategy,
                                 variables=model.variables)
    logits = inference.predict(features, batch_size=32, description="prediction")   # [N, ...], in order

`features` is a dict of NumPy arrays with a leading example axis: the encoder inputs `input_ids`,
`input_mask` (required: it says which tokens are real; padding ids may be anything) and `segment_ids`, int
[N, T] or, several sequences per example, [N, C, T]; other entries (labels, ids) are left out.

The batches (`data/tasks/batches.py`: `length_sorted_batches`): the examples sorted by their number of
real tokens, `batch_size` at a time, each batch cut along T to a width that holds its longest example:
- without XLA, that length rounded up to a multiple of 8; one traced function takes every shape;
- with XLA (`use_xla`), the smallest of the widths 8, 16, 32, ... (8 times a power of two) and T that
  holds it (`xla_widths`), and the batch filled up to `batch_size` rows by repeating its first example,
  whose outputs are dropped: XLA compiles one program per width, not one per shape;
- with `trim=False`, every batch at the full width T (a model whose every position's output is read, even
  the padding's: SQuAD's n-best ranks all T positions, as the original does).
Padding is masked out of attention, so an example's outputs at its real positions are those of the full
width, within float rounding. A log line (once per BatchedInference) says which of these runs.

Outputs: `forward`'s, any nesting of tensors [b, ...], come back as NumPy arrays [N, ...] in the examples'
order. A per-token output, one with an axis that follows the inputs' width (e.g. [b, w, labels], [b, w]
start logits), is padded with zeros back to T.

How a batch runs is its backend's: on TensorFlow a tf.function (`tf_inference.TfForward`: on a tf.distribute
strategy with several replicas in this process, MirroredStrategy or a TPU, each batch is split among them, its
rows filled up to a multiple of the replicas as above; otherwise, one replica or a multi-worker strategy whose
other workers take no part, on this process's default device, reading the strategy's variables); on Keras's JAX
backend a jax.jit function of the variables' values and the batch (`JaxForward`: always compiled, so always
bucketed widths; no TensorFlow). Progress: the examples done, their rate and an ETA (`bert_tf.progress`).
"""

import contextlib

import keras
import numpy as np
from absl import logging

from bert_tf.batch_width import TRIM_MULTIPLE
from bert_tf.data.tasks.batches import length_sorted_batches, num_examples
from bert_tf.feature_schema import INPUT_MASK
from bert_tf.progress import Progress


def xla_widths(full):
    """The widths that batches of inputs of length `full` take under XLA: 8, 16, 32, ... below `full`, then
    `full` (ascending)."""
    widths, width = [], TRIM_MULTIPLE
    while width < full:
        widths.append(width)
        width *= 2
    return widths + [full]


class JaxForward:
    """`forward` (a function of a batch, reading the Keras `variables`) as one jax.jit function of the variables'
    values and the batch, called with their current values: NumPy batch -> outputs (NumPy, forward's nesting).
    The weights are arguments, not constants baked into the program; one compilation per input shape."""

    replicas = 1

    def __init__(self, forward, variables):
        import jax

        self.variables = list(variables)

        def stateless(values, inputs):
            with keras.StatelessScope(state_mapping=list(zip(self.variables, values))):
                return forward(inputs)

        self._stateless, self._compiled = stateless, jax.jit(stateless)

    def outputs(self, inputs):
        """`forward`'s outputs of `inputs` as JAX arrays on the device (dispatched, not waited for)."""
        return self._compiled([v.value for v in self.variables], inputs)

    def __call__(self, inputs):
        return keras.tree.map_structure(np.asarray, self.outputs(inputs))

    def width_axes(self, inputs):
        """Per output (flattened), the axis whose size follows the inputs' width, or None: the axis whose size
        differs between the widths 2 and 3 (shapes only, nothing computed). An axis that follows neither (e.g. a
        pair embedder's [N, 2, H]) is not one."""
        import jax

        shapes = []
        for width in (2, 3):  # a batch of one: JAX shapes are static
            fixed = {k: jax.ShapeDtypeStruct([1, *v.shape[1:-1], width], v.dtype) for k, v in inputs.items()}
            values = [jax.ShapeDtypeStruct(v.shape, v.dtype) for v in self.variables]
            shapes.append([t.shape for t in keras.tree.flatten(jax.eval_shape(self._stateless, values, fixed))])
        return [next((axis for axis in range(1, len(a)) if a[axis] != b[axis]), None) for a, b in zip(*shapes)]


class BatchedInference:
    """Runs `forward` over many examples, as the module docstring says.

    forward: a function of one batch, a dict of int tensors [b, ..., w] (the encoder inputs of the features),
      to a tensor or a nesting of tensors [b, ...]; traced once (TensorFlow: inside a tf.function; JAX: jax.jit).
    use_xla: compile it with XLA (bucketed widths, full batches); always on JAX. strategy: the tf.distribute
      strategy whose variables `forward` reads, or None. trim: cut batches to their longest example (False:
      full width). variables: the Keras variables that `forward` reads (JAX: the compiled function's arguments;
      required there).
    """

    def __init__(self, forward, use_xla=False, strategy=None, trim=True, variables=None):
        self.on_jax = keras.backend.backend() == "jax"
        if self.on_jax:
            if variables is None:
                raise ValueError("on JAX, BatchedInference needs the variables that forward reads (variables=)")
            self.function = JaxForward(forward, variables)
        else:
            from bert_tf.tf_inference import TfForward

            self.function = TfForward(forward, use_xla, strategy)
        self.use_xla, self.trim = use_xla or self.on_jax, trim
        self._token_axes = None  # trimmed batches: per flattened output, the axis of its width (or None)
        self._built = self._described = False

    def predict(self, features, batch_size, description=None, unit="examples"):
        """The outputs (NumPy, `forward`'s nesting, each [N, ...]) of every example of `features`, in order;
        per-token outputs padded with zeros to T. `description`: show the progress in `unit` under that name.
        None for no examples."""
        count, full = num_examples(features), features[INPUT_MASK].shape[-1]
        outputs = None
        with Progress(description, count, unit) if description else contextlib.nullcontext() as progress:
            for indexes, batch in self.batches(features, batch_size, progress, description):
                flat = keras.tree.flatten(batch)
                if self._token_axes is not None:
                    flat = [self._full_width(value, axis, full) for value, axis in zip(flat, self._token_axes)]
                if outputs is None:
                    structure = batch
                    outputs = [np.zeros((count,) + value.shape[1:], value.dtype) for value in flat]
                for output, value in zip(outputs, flat):
                    output[indexes] = value
        return None if outputs is None else keras.tree.pack_sequence_as(structure, outputs)

    def batches(self, features, batch_size, progress=None, description=None):
        """Yields (indexes int [b], outputs) batch by batch, shortest examples first: `outputs` are `forward`'s
        (NumPy arrays [b, ...]) for the examples `indexes` of `features`, per-token ones at the batch's width.
        `progress`: a Progress that advances by b after each batch; `description`: the job, in the log line."""
        full = features[INPUT_MASK].shape[-1]
        widths = None if self.trim and not self.use_xla else xla_widths(full) if self.trim else [full]
        replicas = self.function.replicas
        for indexes, inputs in length_sorted_batches(features, batch_size, widths):
            if not self._built:
                # Full-width batches (trim=False) need no padding back: their outputs stay as they come.
                self._token_axes = self.function.width_axes(inputs) if self.trim else None
                self._built = True
                self._describe(description, batch_size, widths)
            rows = len(indexes)
            target = -(-(batch_size if self.use_xla else rows) // replicas) * replicas
            if target > rows:  # filled with copies of the first example (a real one: any model takes it)
                inputs = {k: np.concatenate([v, np.repeat(v[:1], target - rows, axis=0)]) for k, v in inputs.items()}
            outputs = keras.tree.map_structure(lambda value, rows=rows: value[:rows], self.function(inputs))
            yield indexes, outputs
            if progress is not None:
                progress.advance(rows)

    @staticmethod
    def _full_width(value, axis, full):
        """`value` padded with zeros along its width `axis` (None: not per token) to `full`."""
        if axis is None or value.shape[axis] == full:
            return value
        padding = [(0, 0)] * value.ndim
        padding[axis] = (0, full - value.shape[axis])
        return np.pad(value, padding)

    def _describe(self, description, batch_size, widths):
        """The log line of the path that runs (once)."""
        if self._described:
            return
        self._described = True
        if not self.trim:
            how = f"every batch at the full width {widths[-1]}"
        elif widths:
            how = f"each cut to the smallest of the widths {', '.join(map(str, widths))} that holds its longest"
        else:
            how = f"each cut to its longest example rounded up to a multiple of {TRIM_MULTIPLE}"
        if self.use_xla:
            how += f", filled up to {batch_size} rows ({'jax.jit' if self.on_jax else 'XLA'}: one program per width)"
        else:
            how += " (no XLA: one traced function for every width)"
        if self.function.replicas > 1:
            how += f", split among {self.function.replicas} replicas"
        logging.info("%s: batches of %d sorted by length, %s", description or "Inference", batch_size, how)
