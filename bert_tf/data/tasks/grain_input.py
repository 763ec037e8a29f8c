"""The fine-tuning input without TensorFlow: Grain batches of features held in memory (dicts of NumPy arrays with a
leading example axis, as `convert_examples` / `convert_sentences` return them), the same batches as the tf.data
input (`pipeline.make_dataset`) in NumPy.

    batches = feature_batches(features, 32, training=True, seed=1, trim_padding=True)
    iterator = iter(batches)      # a grain DatasetIterator: next(iterator) -> {name: array [32, ...]}
    iterator.get_state()          # the input position (JSON-able), restored by iterator.set_state

training=True: this worker's shard (examples worker, worker + num_workers, ... of `input_context`), in a new
random order every epoch (from `seed`), repeated forever, full batches. group_by_length: batches of examples of
similar length in a random order (`length_grouped_batches`: HuggingFace's LengthGroupedSampler's megabatches,
then the epoch's batches shuffled, as `pipeline.length_grouped`). training=False: one pass in order, the last
batch possibly short. trim_padding: each batch's per-token features cut to its longest example
(`batch_width.trimmed_width`, with `widths` where every shape is compiled).
"""

import grain
import numpy as np

from bert_tf.batch_width import trimmed_width
from bert_tf.data.tasks.batches import GROUP_MEGABATCHES, cut_batch, example_sizes, num_examples
from bert_tf.feature_schema import INPUT_MASK


def trim(batch, widths=None):
    """`batch` ({name: array [b, ..., T]}) with its per-token features (the encoder inputs; `label_ids` where it
    has their shape) cut to the width of its longest example (`trimmed_width`) and, with no `widths` (nothing
    compiled per shape), a batch of documents [b, W, T] to its most windows (`batches.cut_batch`)."""
    mask = batch[INPUT_MASK]
    longest = int(mask.reshape(-1, mask.shape[-1]).sum(axis=-1).max(initial=0))
    width = trimmed_width(longest, mask.shape[-1], widths)
    return cut_batch(batch, width, compiled=widths is not None)


class _Gather:
    """Batch indexes [b] -> the batch {name: array [b, ...]} of `features` (picklable for worker processes)."""

    def __init__(self, features, trim_padding, widths):
        self.features, self.trim_padding, self.widths = features, trim_padding, widths

    def __call__(self, indexes):
        batch = {name: values[np.asarray(indexes)] for name, values in self.features.items()}
        return trim(batch, self.widths) if self.trim_padding else batch


class _LengthGroupedEpochs:
    """The indexes [batch_size] of the i-th length-grouped batch of endless epochs (`length_grouped_batches`)."""

    def __init__(self, lengths, batch_size, seed):
        self.lengths, self.batch_size, self.seed = lengths, batch_size, seed
        self.per_epoch = len(lengths) // batch_size
        self._cached = (None, None)  # (epoch, its batches): batches are asked for in order

    def epoch(self, epoch):
        """[per_epoch, batch_size]: the batches of `epoch`, in their shuffled order."""
        if self._cached[0] == epoch:
            return self._cached[1]
        rng = np.random.default_rng([self.seed, epoch])
        order = rng.permutation(len(self.lengths))[:self.per_epoch * self.batch_size]
        megabatch = GROUP_MEGABATCHES * self.batch_size
        # By megabatch, then longest first (stable: the shuffled order among equal lengths).
        key = np.arange(len(order)) // megabatch * (int(self.lengths.max()) + 1) - self.lengths[order]
        batches = order[np.argsort(key, kind="stable")].reshape(self.per_epoch, self.batch_size)
        self._cached = (epoch, batches[rng.permutation(self.per_epoch)])
        return self._cached[1]

    def __call__(self, index, _):
        return self.epoch(index // self.per_epoch)[index % self.per_epoch]


def length_grouped_batches(features, batch_size, seed):
    """A Grain MapDataset of endless length-grouped batch indexes ([batch_size] each): every epoch the examples
    are shuffled, cut into megabatches of GROUP_MEGABATCHES batches, each sorted longest first and cut into
    batches, and the epoch's batches shuffled; the examples beyond the last full batch (count % batch_size, a
    different random few every epoch) are dropped. Deterministic from `seed` and the batch's index, so an
    iterator restored from its state resumes at the same batch."""
    lengths = example_sizes(features)
    epochs = _LengthGroupedEpochs(lengths, batch_size, seed)
    return grain.MapDataset.range(epochs.per_epoch).repeat().map_with_index(epochs)


def feature_batches(features, batch_size, training, seed=None, input_context=None, trim_padding=False,
                    group_by_length=False, widths=None):
    """A Grain IterDataset of feature dicts, `batch_size` examples per batch: the module docstring; the arguments
    are `pipeline.make_dataset`'s (input_context: anything with num_input_pipelines and input_pipeline_id), but a
    seed of None is 0: the order must follow from the seed alone for a restored position to resume it."""
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be >= 1")
    count = num_examples(features)
    if training and input_context is not None and input_context.num_input_pipelines > 1:
        shard = slice(input_context.input_pipeline_id, None, input_context.num_input_pipelines)
        features = {k: v[shard] for k, v in features.items()}
        count = num_examples(features)
    if training and count < batch_size:
        raise ValueError(f"{count} training examples are fewer than one batch of {batch_size}")
    if training and group_by_length:
        indexes = length_grouped_batches(features, batch_size, seed or 0)
    else:
        indexes = grain.MapDataset.range(count)
        if training:
            indexes = indexes.shuffle(seed=seed or 0).repeat()
        indexes = indexes.batch(batch_size, drop_remainder=training)
    return indexes.map(_Gather(features, trim_padding, widths)).to_iter_dataset()
