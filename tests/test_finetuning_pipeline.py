"""tf.data pipelines of in-memory fine-tuning features."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.tasks import pipeline as finetuning_pipeline


def features(count, seq=3):
    return {"input_ids": np.arange(count * seq, dtype=np.int32).reshape(count, seq),
            "label_ids": np.arange(count, dtype=np.int32), "is_real_example": np.ones(count, np.int32)}


def test_pad_to_multiple():
    padded, count = finetuning_pipeline.pad_to_multiple(features(5), 4)
    assert count == 5 and padded["input_ids"].shape == (8, 3)
    assert padded["is_real_example"].tolist() == [1] * 5 + [0] * 3 and padded["label_ids"][5:].tolist() == [0] * 3
    tags = {"label_ids": np.ones((3, 2), np.int32), "is_real_example": np.ones(3, np.int32)}
    assert finetuning_pipeline.pad_to_multiple(tags, 2)[0]["label_ids"][3].tolist() == [-100, -100]
    same, count = finetuning_pipeline.pad_to_multiple(features(4), 4)
    assert count == 4 and len(same["input_ids"]) == 4


def test_eval_keeps_order_and_training_shards_and_repeats():
    batches = list(finetuning_pipeline.make_dataset(features(5), 2, training=False))
    assert [b["label_ids"].numpy().tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)
    dataset = finetuning_pipeline.make_dataset(features(7), 2, training=True, seed=3, input_context=context)
    seen = np.concatenate([b["label_ids"].numpy() for b in dataset.take(6)])
    assert set(seen) == {1, 3, 5} and len(seen) == 12
    with pytest.raises(ValueError, match="3 training examples are fewer than one batch of 4"):
        finetuning_pipeline.make_dataset(features(3), 4, training=True)
    with pytest.raises(ValueError, match="different numbers of examples"):
        finetuning_pipeline.num_examples({"a": np.zeros(2), "b": np.zeros(3)})


def test_trim_padding_cuts_each_batch_to_its_longest_example():
    lengths = np.array([3, 20, 9, 5, 17, 2])
    mask = (np.arange(24) < lengths[:, None]).astype(np.int32)
    tagged = {"input_ids": mask * 7, "input_mask": mask, "segment_ids": mask * 0, "label_ids": mask * 2 - 1,
              "is_real_example": np.ones(6, np.int32)}
    batches = list(finetuning_pipeline.make_dataset(tagged, 2, training=False, trim_padding=True))
    # longest per batch 20, 9, 17 -> rounded up to multiples of 8, at most 24
    assert [b["input_ids"].shape[1] for b in batches] == [24, 16, 24]
    assert [b["label_ids"].shape[1] for b in batches] == [24, 16, 24]  # per-token labels follow
    np.testing.assert_array_equal(batches[1]["input_mask"].numpy(), mask[2:4, :16])
    classified = {**tagged, "label_ids": np.arange(6, dtype=np.int32)}
    batch = next(iter(finetuning_pipeline.make_dataset(classified, 4, training=True, seed=1, trim_padding=True)))
    assert batch["label_ids"].shape == (4,) and batch["input_ids"].shape[1] % 8 == 0
    assert batch["input_ids"].shape[1] >= batch["input_mask"].numpy().sum(1).max()


def test_length_sorted_batches_take_the_smallest_width_that_holds_their_longest():
    lengths = np.array([3, 20, 9, 5, 17, 2, 24])
    mask = (np.arange(24) < lengths[:, None]).astype(np.int32)
    features = {"input_ids": mask * 7, "input_mask": mask, "label_ids": np.arange(7, dtype=np.int32)}
    trimmed = list(finetuning_pipeline.length_sorted_batches(features, 2))
    assert [indexes.tolist() for indexes, _ in trimmed] == [[5, 0], [3, 2], [4, 1], [6]]  # shortest first
    assert [inputs["input_ids"].shape[1] for _, inputs in trimmed] == [8, 16, 24, 24]
    assert set(trimmed[0][1]) == {"input_ids", "input_mask"}  # the encoder inputs only
    bucketed = list(finetuning_pipeline.length_sorted_batches(features, 2, widths=[4, 8, 16, 24]))
    assert [inputs["input_mask"].shape[1] for _, inputs in bucketed] == [4, 16, 24, 24]
    full = list(finetuning_pipeline.length_sorted_batches(features, 3, widths=[24]))
    assert [inputs["input_mask"].shape[1] for _, inputs in full] == [24, 24, 24]
    with pytest.raises(ValueError, match=r"widths=\[8, 16\]: expected ascending widths, the last the full length 24"):
        next(finetuning_pipeline.length_sorted_batches(features, 2, widths=[8, 16]))
    assert not list(finetuning_pipeline.length_sorted_batches({k: v[:0] for k, v in features.items()}, 2))


def varied(count, seq=64, seed=0, choices=None):
    """Real-looking fine-tuning features of `count` examples of 3 to seq tokens ([count, choices, seq] with
    `choices`); label_ids the example's index."""
    lengths = np.random.default_rng(seed).integers(3, seq + 1, (count,) if choices is None else (count, choices))
    mask = (np.arange(seq) < lengths[..., None]).astype(np.int32)
    return {"input_ids": mask * 7, "input_mask": mask, "segment_ids": mask * 0,
            "label_ids": np.arange(count, dtype=np.int32)}


def labels_of(batches):
    return [b["label_ids"].numpy().tolist() for b in batches]


def test_group_by_length_batches_similar_lengths_in_random_order_every_example_once_an_epoch():
    data = varied(1000)
    lengths = data["input_mask"].sum(1)
    grouped = list(finetuning_pipeline.make_dataset(data, 8, True, seed=5, group_by_length=True).take(250))
    shuffled = list(finetuning_pipeline.make_dataset(data, 8, True, seed=5).take(125))
    for epoch in (grouped[:125], grouped[125:]):
        seen = np.concatenate(labels_of(epoch))
        assert len(set(seen.tolist())) == len(seen) == 1000  # every example once (1000 = 125 batches of 8)
    assert labels_of(grouped[:125]) != labels_of(grouped[125:])  # reshuffled every epoch

    def spread(batches):  # the mean (longest - shortest) of a batch
        return np.mean([np.ptp(lengths[b["label_ids"].numpy()]) for b in batches])

    assert spread(grouped) < 3 < 40 < spread(shuffled)
    longest = [lengths[b["label_ids"].numpy()].max() for b in grouped[:125]]
    assert sorted(longest) != longest and sorted(longest, reverse=True) != longest  # batches in random order
    # Deterministic from the seed; another seed, other batches.
    again = finetuning_pipeline.make_dataset(data, 8, True, seed=5, group_by_length=True).take(250)
    assert labels_of(again) == labels_of(grouped)
    other = finetuning_pipeline.make_dataset(data, 8, True, seed=6, group_by_length=True).take(10)
    assert labels_of(other) != labels_of(grouped[:10])


def test_group_by_length_drops_a_different_remainder_each_epoch_and_shards_over_workers():
    data = varied(103)
    batches = labels_of(finetuning_pipeline.make_dataset(data, 10, True, seed=1, group_by_length=True).take(20))
    epochs = [set(np.concatenate(batches[:10]).tolist()), set(np.concatenate(batches[10:]).tolist())]
    assert [len(e) for e in epochs] == [100, 100] and epochs[0] != epochs[1]
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)
    shard = finetuning_pipeline.make_dataset(data, 10, True, seed=1, input_context=context, group_by_length=True)
    assert set(np.concatenate(labels_of(shard.take(5))).tolist()) <= set(range(1, 103, 2))
    pairs = varied(50, choices=2)  # [N, C, T] (multiple choice): grouped by the longer text
    batch = next(iter(finetuning_pipeline.make_dataset(pairs, 5, True, seed=1, group_by_length=True,
                                                       trim_padding=True)))
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


def test_widths_cut_each_batch_to_the_smallest_bucket_that_holds_it():
    assert finetuning_pipeline.bucket_widths(128) == [32, 64, 96, 128]
    assert finetuning_pipeline.bucket_widths(384) == [96, 192, 288, 384]
    assert finetuning_pipeline.bucket_widths(20) == [8, 16, 20]
    data = varied(64, seq=128)
    widths = finetuning_pipeline.bucket_widths(128)
    for batch in finetuning_pipeline.make_dataset(data, 4, True, seed=1, trim_padding=True, group_by_length=True,
                                                  widths=widths).take(16):
        width, longest = batch["input_ids"].shape[1], batch["input_mask"].numpy().sum(1).max()
        assert width in widths and width >= longest and (width == 32 or width - 32 < longest)
