"""The training input as the loop sees it, whichever library made it: a tf.data Dataset (TensorFlow's input) or a
Grain IterDataset (the input without TensorFlow). Both give the loop an iterator of this worker's batches, the
width of their tokens when it is fixed (for tokens/s and MFU) and their position, which every save writes beside
the training state, so that a resumed run reads on exactly where the killed one stopped.

    data = wrap(dataset)               # a TfDataInput or a GrainInput
    batch = next(data.iterator)
    data.write(prefix)                 # the position as a checkpoint bundle (made atomic by the loop)
    data.read(prefix)                  # the position of a saved state; ValueError when it does not fit

A tf.data position is TensorFlow's iterator checkpoint; a Grain position is its iterator's state, JSON in a
one-tensor bundle written without TensorFlow (`formats/tensor_bundle.py`).

Which input a run reads is one rule, `kind_of(devices)`: the Keras backend's own, tf.data on TensorFlow (its
steps read tf.data iterators inside their graph), Grain on JAX (no TensorFlow on the host); the runs say it in
their training log line.
"""

import json

import numpy as np

from bert_tf.feature_schema import INPUT_IDS
from bert_tf.formats import google, tensor_bundle

POSITION_NAME = "grain_iterator_state"


class TfDataInput:
    """A tf.data Dataset of this worker's batches (feature dicts)."""

    kind = "tf.data"

    def __init__(self, dataset):
        import tensorflow as tf

        self.iterator = iter(dataset)
        self.seq_length = dataset.element_spec[INPUT_IDS].shape[-1]
        self._checkpoint = tf.train.Checkpoint(iterator=self.iterator)

    def write(self, prefix):
        self._checkpoint.write(prefix)

    def read(self, prefix):
        from bert_tf.training.tf_steps import read_checkpoint

        read_checkpoint(self._checkpoint, prefix)


class GrainInput:
    """A Grain IterDataset of this worker's batches (dicts of NumPy arrays); seq_length: their fixed width, or
    None when batches are cut to their longest example."""

    kind = "grain"

    def __init__(self, dataset, seq_length=None):
        self.iterator = iter(dataset)
        self.seq_length = seq_length

    def write(self, prefix):
        state = json.dumps(self.iterator.get_state(), sort_keys=True).encode("utf-8")
        tensor_bundle.write_bundle(prefix, {POSITION_NAME: np.asarray(state, dtype=object)})

    def read(self, prefix):
        shapes, read = google.open_bundle(prefix)
        if POSITION_NAME not in shapes:
            raise ValueError(f"no {POSITION_NAME} in it (an input position of another input: written by the "
                             "tf.data input?)")
        self.iterator.set_state(json.loads(read(POSITION_NAME).decode("utf-8")))


def kind_of(devices):
    """The input a run on `devices` (`devices.Devices`) reads: "tf.data" on TensorFlow, "grain" on JAX."""
    return "grain" if devices.backend == "jax" else "tf.data"


def is_tf_data(dataset):
    """Whether `dataset` is a tf.data Dataset (it has an element_spec), without importing TensorFlow."""
    return hasattr(dataset, "element_spec")


def wrap(dataset):
    """`dataset` as the loop's input: a TfDataInput or GrainInput as it is; a tf.data Dataset (`is_tf_data`) as a
    TfDataInput; anything else as a GrainInput of unknown width."""
    if isinstance(dataset, (TfDataInput, GrainInput)):
        return dataset
    return TfDataInput(dataset) if is_tf_data(dataset) else GrainInput(dataset)
