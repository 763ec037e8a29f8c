"""The inputs of in-memory fine-tuning features: tf.data's (`pipeline.make_dataset`) and Grain's, without
TensorFlow (`grain_input.feature_batches`), the same batches by the same rules."""

import itertools
import json

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.tasks import batches as in_memory
from bert_tf.data.tasks import grain_input
from bert_tf.data.tasks import pipeline as finetuning_pipeline

INPUTS = ("tf.data", "grain")


def input_batches(kind, data, batch_size, training, count=None, **options):
    """The first `count` batches (all of a finite input when None) of the tf.data or the Grain input, as NumPy."""
    if kind == "tf.data":
        stream = finetuning_pipeline.make_dataset(data, batch_size, training, **options).as_numpy_iterator()
    else:
        stream = iter(grain_input.feature_batches(data, batch_size, training, **options))
    return list(itertools.islice(stream, count))


def features(count, seq=3):
    return {"input_ids": np.arange(count * seq, dtype=np.int32).reshape(count, seq),
            "label_ids": np.arange(count, dtype=np.int32), "is_real_example": np.ones(count, np.int32)}


def test_pad_to_multiple():
    padded, count = in_memory.pad_to_multiple(features(5), 4)
    assert count == 5 and padded["input_ids"].shape == (8, 3)
    assert padded["is_real_example"].tolist() == [1] * 5 + [0] * 3 and padded["label_ids"][5:].tolist() == [0] * 3
    tags = {"label_ids": np.ones((3, 2), np.int32), "is_real_example": np.ones(3, np.int32)}
    assert in_memory.pad_to_multiple(tags, 2)[0]["label_ids"][3].tolist() == [-100, -100]
    same, count = in_memory.pad_to_multiple(features(4), 4)
    assert count == 4 and len(same["input_ids"]) == 4


@pytest.mark.parametrize("kind", INPUTS)
def test_eval_keeps_order_and_training_shards_and_repeats(kind):
    batches = input_batches(kind, features(5), 2, training=False)
    assert [b["label_ids"].tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)
    taken = input_batches(kind, features(7), 2, True, 6, seed=3, input_context=context)
    seen = np.concatenate([b["label_ids"] for b in taken])
    assert set(seen) == {1, 3, 5} and len(seen) == 12
    with pytest.raises(ValueError, match="3 training examples are fewer than one batch of 4"):
        input_batches(kind, features(3), 4, training=True, count=1)
    with pytest.raises(ValueError, match="different numbers of examples"):
        in_memory.num_examples({"a": np.zeros(2), "b": np.zeros(3)})


@pytest.mark.parametrize("kind", INPUTS)
def test_trim_padding_cuts_each_batch_to_its_longest_example(kind):
    lengths = np.array([3, 20, 9, 5, 17, 2])
    mask = (np.arange(24) < lengths[:, None]).astype(np.int32)
    tagged = {"input_ids": mask * 7, "input_mask": mask, "segment_ids": mask * 0, "label_ids": mask * 2 - 1,
              "is_real_example": np.ones(6, np.int32)}
    batches = input_batches(kind, tagged, 2, training=False, trim_padding=True)
    # longest per batch 20, 9, 17 -> rounded up to multiples of 8, at most 24
    assert [b["input_ids"].shape[1] for b in batches] == [24, 16, 24]
    assert [b["label_ids"].shape[1] for b in batches] == [24, 16, 24]  # per-token labels follow
    np.testing.assert_array_equal(batches[1]["input_mask"], mask[2:4, :16])
    classified = {**tagged, "label_ids": np.arange(6, dtype=np.int32)}
    batch = input_batches(kind, classified, 4, True, 1, seed=1, trim_padding=True)[0]
    assert batch["label_ids"].shape == (4,) and batch["input_ids"].shape[1] % 8 == 0
    assert batch["input_ids"].shape[1] >= batch["input_mask"].sum(1).max()


def test_length_sorted_batches_take_the_smallest_width_that_holds_their_longest():
    lengths = np.array([3, 20, 9, 5, 17, 2, 24])
    mask = (np.arange(24) < lengths[:, None]).astype(np.int32)
    features = {"input_ids": mask * 7, "input_mask": mask, "label_ids": np.arange(7, dtype=np.int32)}
    trimmed = list(in_memory.length_sorted_batches(features, 2))
    assert [indexes.tolist() for indexes, _ in trimmed] == [[5, 0], [3, 2], [4, 1], [6]]  # shortest first
    assert [inputs["input_ids"].shape[1] for _, inputs in trimmed] == [8, 16, 24, 24]
    assert set(trimmed[0][1]) == {"input_ids", "input_mask"}  # the encoder inputs only
    bucketed = list(in_memory.length_sorted_batches(features, 2, widths=[4, 8, 16, 24]))
    assert [inputs["input_mask"].shape[1] for _, inputs in bucketed] == [4, 16, 24, 24]
    full = list(in_memory.length_sorted_batches(features, 3, widths=[24]))
    assert [inputs["input_mask"].shape[1] for _, inputs in full] == [24, 24, 24]
    with pytest.raises(ValueError, match=r"widths=\[8, 16\]: expected ascending widths, the last the full length 24"):
        next(in_memory.length_sorted_batches(features, 2, widths=[8, 16]))
    assert not list(in_memory.length_sorted_batches({k: v[:0] for k, v in features.items()}, 2))


def varied(count, seq=64, seed=0, choices=None):
    """Real-looking fine-tuning features of `count` examples of 3 to seq tokens ([count, choices, seq] with
    `choices`); label_ids the example's index."""
    lengths = np.random.default_rng(seed).integers(3, seq + 1, (count,) if choices is None else (count, choices))
    mask = (np.arange(seq) < lengths[..., None]).astype(np.int32)
    return {"input_ids": mask * 7, "input_mask": mask, "segment_ids": mask * 0,
            "label_ids": np.arange(count, dtype=np.int32)}


def labels_of(batches):
    return [np.asarray(b["label_ids"]).tolist() for b in batches]


@pytest.mark.parametrize("kind", INPUTS)
def test_group_by_length_batches_similar_lengths_in_random_order_every_example_once_an_epoch(kind):
    data = varied(1000)
    lengths = data["input_mask"].sum(1)
    grouped = input_batches(kind, data, 8, True, 250, seed=5, group_by_length=True)
    shuffled = input_batches(kind, data, 8, True, 125, seed=5)
    for epoch in (grouped[:125], grouped[125:]):
        seen = np.concatenate(labels_of(epoch))
        assert len(set(seen.tolist())) == len(seen) == 1000  # every example once (1000 = 125 batches of 8)
    assert labels_of(grouped[:125]) != labels_of(grouped[125:])  # reshuffled every epoch

    def spread(batches):  # the mean (longest - shortest) of a batch
        return np.mean([np.ptp(lengths[b["label_ids"]]) for b in batches])

    assert spread(grouped) < 3 < 40 < spread(shuffled)
    longest = [lengths[b["label_ids"]].max() for b in grouped[:125]]
    assert sorted(longest) != longest and sorted(longest, reverse=True) != longest  # batches in random order
    # Deterministic from the seed; another seed, other batches.
    again = input_batches(kind, data, 8, True, 250, seed=5, group_by_length=True)
    assert labels_of(again) == labels_of(grouped)
    other = input_batches(kind, data, 8, True, 10, seed=6, group_by_length=True)
    assert labels_of(other) != labels_of(grouped[:10])


@pytest.mark.parametrize("kind", INPUTS)
def test_group_by_length_drops_a_different_remainder_each_epoch_and_shards_over_workers(kind):
    data = varied(103)
    batches = labels_of(input_batches(kind, data, 10, True, 20, seed=1, group_by_length=True))
    epochs = [set(np.concatenate(batches[:10]).tolist()), set(np.concatenate(batches[10:]).tolist())]
    assert [len(e) for e in epochs] == [100, 100] and epochs[0] != epochs[1]
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)
    shard = input_batches(kind, data, 10, True, 5, seed=1, input_context=context, group_by_length=True)
    assert set(np.concatenate(labels_of(shard)).tolist()) <= set(range(1, 103, 2))
    pairs = varied(50, choices=2)  # [N, C, T] (multiple choice): grouped by the longer text
    batch = input_batches(kind, pairs, 5, True, 1, seed=1, group_by_length=True, trim_padding=True)[0]
    assert batch["input_ids"].shape[:2] == (5, 2) and batch["input_ids"].shape[2] % 8 == 0


@pytest.mark.parametrize("stop", [37, 125, 130])
def test_group_by_length_resumes_at_the_same_batch_from_an_iterator_checkpoint(tmp_path, stop):
    """The training loop saves tf.data's iterator with every checkpoint: a new process restoring it continues
    with the batch the interrupted one would have drawn next (mid-epoch, at and after an epoch's end)."""
    data = varied(1000)

    def dataset():
        return finetuning_pipeline.make_dataset(data, 8, True, seed=2, trim_padding=True, group_by_length=True)

    expected = labels_of(dataset().take(stop + 20))
    interrupted = iter(dataset())
    for _ in range(stop):
        next(interrupted)
    path = tf.train.Checkpoint(iterator=interrupted).write(str(tmp_path / "data"))
    resumed = iter(dataset())
    tf.train.Checkpoint(iterator=resumed).read(path).assert_consumed()
    assert [next(resumed)["label_ids"].numpy().tolist() for _ in range(20)] == expected[stop:]


@pytest.mark.parametrize("group_by_length", [True, False], ids=["grouped", "shuffled"])
@pytest.mark.parametrize("stop", [37, 125, 130])
def test_grain_input_resumes_at_the_same_batch_from_its_state(stop, group_by_length):
    """The Grain input's position is its iterator's state (JSON): a new iterator given it continues with the
    batch the interrupted one would have drawn next (mid-epoch, at and after an epoch's end)."""
    data = varied(1000)

    def batches():
        return grain_input.feature_batches(data, 8, True, seed=2, trim_padding=True, group_by_length=group_by_length)

    expected = labels_of(itertools.islice(iter(batches()), stop + 20))
    interrupted = iter(batches())
    for _ in range(stop):
        next(interrupted)
    resumed = iter(batches())
    resumed.set_state(json.loads(json.dumps(interrupted.get_state())))
    assert [next(resumed)["label_ids"].tolist() for _ in range(20)] == expected[stop:]


@pytest.mark.parametrize("kind", INPUTS)
def test_widths_cut_each_batch_to_the_smallest_bucket_that_holds_it(kind):
    assert in_memory.bucket_widths(128) == [32, 64, 96, 128]
    assert in_memory.bucket_widths(384) == [96, 192, 288, 384]
    assert in_memory.bucket_widths(20) == [8, 16, 20]
    data = varied(64, seq=128)
    widths = in_memory.bucket_widths(128)
    for batch in input_batches(kind, data, 4, True, 16, seed=1, trim_padding=True, group_by_length=True,
                               widths=widths):
        width, longest = batch["input_ids"].shape[1], batch["input_mask"].sum(1).max()
        assert width in widths and width >= longest and (width == 32 or width - 32 < longest)
