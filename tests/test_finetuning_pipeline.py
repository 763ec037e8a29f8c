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
