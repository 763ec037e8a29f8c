"""The tf.data reader of pretraining records: records of Google's original script, training and eval modes,
per-worker sharding, and dynamic masking with the original rules, on real State of the Union speeches."""

import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.pretraining import grain_input
from bert_tf.data.pretraining import job as pretraining_job
from bert_tf.data.pretraining import records as tfrecord
from bert_tf.data.pretraining.corpus import CorpusReader
from bert_tf.data.pretraining.instances import InstanceMaker, InstanceOptions
from bert_tf.data.pretraining.masking import MaskingConfig, mask_tokens, num_to_predict
from bert_tf.data.pretraining.pipeline import pretraining_dataset, record_stats
from bert_tf.training.devices import InputContext
from tests.helpers.sotu_speeches import prepared_corpus
from tools.original_bert import import_original

SEQ, PREDICTIONS = 64, 10


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return prepared_corpus(tmp_path_factory, 200, 206)


@pytest.fixture(scope="module")
def original_records(corpus, minilm_dir, tmp_path_factory):
    """Records written by Google's create_pretraining_data (seq 64, 10 predictions), and its instances."""
    original = import_original("create_pretraining_data")
    tokenizer = import_original("tokenization").FullTokenizer(os.path.join(minilm_dir, "vocab.txt"), True)
    instances = original.create_training_instances([corpus], tokenizer, SEQ, 1, 0.1, 0.15, PREDICTIONS,
                                                   random.Random(4))
    path = str(tmp_path_factory.mktemp("original") / "original.tfrecord")
    original.write_instance_to_example_files(instances, tokenizer, SEQ, PREDICTIONS, [path])
    return path, instances


@pytest.fixture(scope="module")
def unmasked_records(corpus, tokenizer, tmp_path_factory):
    """Our unmasked records (create_pretraining_data --dynamic_masking), in 4 files."""
    directory = tmp_path_factory.mktemp("unmasked")
    files = [str(directory / f"part-{i}") for i in range(4)]
    stats, _ = pretraining_job.create_pretraining_data([corpus], files, tokenizer,
                                                       InstanceOptions(SEQ, 0.1, 2, 8, None))
    return files, stats


def masking(tokenizer, whole_word=False):
    return MaskingConfig.from_vocab(tokenizer.vocab, 0.15, PREDICTIONS, whole_word)


INPUTS = ("tf.data", "grain")


def input_batches(kind, files, batch_size, is_training, **options):
    """The NumPy batches of the tf.data input (`pretraining_dataset`) or of the Grain one (`grain_input`)."""
    if kind == "tf.data":
        return pretraining_dataset(files, batch_size, SEQ, PREDICTIONS, is_training, **options).as_numpy_iterator()
    files = [files] if isinstance(files, str) else files
    return iter(grain_input.pretraining_batches(files, batch_size, SEQ, PREDICTIONS, is_training, **options))


def all_rows(batches):
    """{name: every batch's rows concatenated} of a tf.data dataset or an iterable of NumPy batches."""
    batches = list(batches.as_numpy_iterator() if hasattr(batches, "as_numpy_iterator") else batches)
    return {name: np.concatenate([b[name] for b in batches]) for name in batches[0]}


def test_reads_the_original_scripts_records(original_records):
    path, instances = original_records
    rows = all_rows(pretraining_dataset(path, 7, SEQ, PREDICTIONS, is_training=False))
    assert len(rows["input_ids"]) == len(instances)
    spec = tfrecord.pretraining_feature_spec(SEQ, PREDICTIONS)
    for name, expected in spec.items():
        assert rows[name].dtype == (np.float32 if expected.dtype == tf.float32 else np.int32), name
        assert rows[name].shape == (len(instances), *expected.shape), name
    for row, instance in enumerate(instances[:50]):
        n = len(instance.tokens)
        assert rows["input_mask"][row].sum() == n and rows["segment_ids"][row][:n].tolist() == instance.segment_ids
        k = len(instance.masked_lm_positions)
        assert rows["masked_lm_positions"][row][:k].tolist() == instance.masked_lm_positions
        assert rows["masked_lm_weights"][row].tolist() == [1.0] * k + [0.0] * (PREDICTIONS - k)
        assert rows["next_sentence_labels"][row].tolist() == [int(instance.is_random_next)]


def test_record_stats_of_the_original_records(original_records, tokenizer):
    path, instances = original_records
    stats = record_stats(path, SEQ, PREDICTIONS, tokenizer.vocab["[MASK]"])
    assert stats.instances == len(instances)
    assert stats.masked == sum(len(i.masked_lm_positions) for i in instances)
    assert stats.by_mask == sum(i.tokens[p] == "[MASK]" for i in instances for p in i.masked_lm_positions)
    assert stats.random_next == sum(i.is_random_next for i in instances)


def test_training_batches_are_full_repeated_shuffled_and_seeded(original_records):
    path, instances = original_records
    batches = 2 * len(instances) // 16 + 3  # more than two epochs
    dataset = pretraining_dataset(path, 16, SEQ, PREDICTIONS, is_training=True, seed=3)
    rows = [b["input_ids"] for b in dataset.take(batches).as_numpy_iterator()]
    assert len(rows) == batches and all(r.shape == (16, SEQ) for r in rows)
    again = [b["input_ids"] for b in pretraining_dataset(path, 16, SEQ, PREDICTIONS, is_training=True,
                                                         seed=3).take(3).as_numpy_iterator()]
    np.testing.assert_array_equal(np.concatenate(rows[:3]), np.concatenate(again))
    in_order = all_rows(pretraining_dataset(path, 16, SEQ, PREDICTIONS, is_training=False))["input_ids"][:48]
    assert not np.array_equal(np.concatenate(rows[:3]), in_order)


@pytest.fixture(scope="module")
def masked_files(corpus, tokenizer, tmp_path_factory):
    """Our masked records in 4 files."""
    directory = tmp_path_factory.mktemp("masked")
    files = [str(directory / f"part-{i}") for i in range(4)]
    pretraining_job.create_pretraining_data([corpus], files, tokenizer,
                                            InstanceOptions(SEQ, 0.1, 1, 2, masking(tokenizer)))
    return files


@pytest.mark.parametrize("num_files", [4, 1])
def test_input_pipelines_read_disjoint_parts(masked_files, num_files):
    files = masked_files[:num_files]
    everything = all_rows(pretraining_dataset(files, 5, SEQ, PREDICTIONS, is_training=False))
    parts = []
    for pipeline_id in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline_id)
        parts.append(all_rows(pretraining_dataset(files, 5, SEQ, PREDICTIONS, is_training=False,
                                                  input_context=context)))

    def as_set(rows):
        return set(zip(map(tuple, rows["input_ids"]), map(tuple, rows["masked_lm_positions"])))

    assert as_set(parts[0]) & as_set(parts[1]) == set()
    assert len(parts[0]["input_ids"]) + len(parts[1]["input_ids"]) == len(everything["input_ids"])
    assert as_set(parts[0]) | as_set(parts[1]) == as_set(everything)
    assert abs(len(parts[0]["input_ids"]) - len(parts[1]["input_ids"])) < 0.2 * len(everything["input_ids"])


def unmasked(files):
    """The unmasked records as written, in file order: dict of numpy arrays."""
    spec = {name: tf.io.FixedLenFeature([SEQ], tf.int64) for name in ("input_ids", "input_mask", "segment_ids")}
    spec["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)
    records = [r.numpy() for r in tf.data.TFRecordDataset(files)]
    return {name: value.numpy() for name, value in tf.io.parse_example(records, spec).items()}


def dynamic_rows(files, config, seed=5, kind="tf.data"):
    """Masked rows (eval mode: in file order) plus the unmasked ids they came from."""
    rows = all_rows(input_batches(kind, files, 32, False, dynamic_masking=config, seed=seed))
    rows["original_ids"] = unmasked(files)["input_ids"]
    return rows


@pytest.mark.parametrize("kind", INPUTS)
def test_dynamic_masking_follows_the_original_rules(unmasked_records, tokenizer, kind):
    config = masking(tokenizer)
    rows = dynamic_rows(unmasked_records[0], config, kind=kind)
    ids, original, positions = rows["input_ids"], rows["original_ids"], rows["masked_lm_positions"]
    weights, labels = rows["masked_lm_weights"], rows["masked_lm_ids"]
    lengths = rows["input_mask"].sum(axis=1)
    counts = (weights > 0).sum(axis=1)
    expected = [num_to_predict(n, 0.15, PREDICTIONS) for n in lengths]
    np.testing.assert_array_equal(counts, expected)  # seq 64: always enough candidates
    by_mask = by_random = kept = 0
    for row in range(len(ids)):
        k = counts[row]
        chosen = positions[row][:k]
        assert (np.diff(chosen) > 0).all() and (positions[row][k:] == 0).all() and (labels[row][k:] == 0).all()
        assert (chosen > 0).all() and (chosen < lengths[row]).all()
        assert not np.isin(original[row][chosen], [config.cls_id, config.sep_id]).any()
        np.testing.assert_array_equal(labels[row][:k], original[row][chosen])
        untouched = np.setdiff1d(np.arange(SEQ), chosen)
        np.testing.assert_array_equal(ids[row][untouched], original[row][untouched])
        by_mask += (ids[row][chosen] == config.mask_id).sum()
        kept += (ids[row][chosen] == original[row][chosen]).sum()
        by_random += ((ids[row][chosen] != config.mask_id) & (ids[row][chosen] != original[row][chosen])).sum()
    total = counts.sum()
    assert total > 3000
    for count, rate in ((by_mask, 0.8), (by_random, 0.1), (kept, 0.1)):
        assert abs(count / total - rate) < 4 * (rate * (1 - rate) / total) ** 0.5
    np.testing.assert_array_equal(dynamic_rows(unmasked_records[0], config, kind=kind)["masked_lm_positions"],
                                  positions)
    other_seed = dynamic_rows(unmasked_records[0], config, seed=6, kind=kind)
    assert (other_seed["masked_lm_positions"] != positions).any(axis=1).mean() > 0.9
    with pytest.raises(ValueError, match="max_predictions_per_seq=12 but the masking config has 10"):
        pretraining_dataset(unmasked_records[0], 32, SEQ, 12, is_training=False, dynamic_masking=config)
    with pytest.raises(ValueError, match="max_predictions_per_seq=12 but the masking config has 10"):
        grain_input.pretraining_batches(unmasked_records[0], 32, SEQ, 12, is_training=False, dynamic_masking=config)


@pytest.mark.parametrize("kind", INPUTS)
def test_dynamic_masks_change_from_epoch_to_epoch_in_training(unmasked_records, tokenizer, kind):
    files, stats = unmasked_records
    stream = input_batches(kind, files, 32, True, dynamic_masking=masking(tokenizer), seed=1)
    masks = {}
    for _, batch in zip(range(3 * stats.instances // 32), stream):
        for ids, positions, labels, weights in zip(batch["input_ids"], batch["masked_lm_positions"],
                                                   batch["masked_lm_ids"], batch["masked_lm_weights"]):
            original = ids.copy()
            original[positions[weights > 0]] = labels[weights > 0]  # undo the masking
            masks.setdefault(original.tobytes(), []).append(tuple(positions))
    originals = {ids.astype(np.int32).tobytes() for ids in unmasked(files)["input_ids"]}
    assert set(masks) <= originals and len(masks) > 0.9 * len(originals)
    repeated = [m for m in masks.values() if len(m) > 1]
    assert len(repeated) > 0.5 * len(originals)
    assert np.mean([len(set(m)) == len(m) for m in repeated]) > 0.95


@pytest.mark.parametrize("kind", INPUTS)
def test_dynamic_whole_word_masking_matches_the_static_masker(unmasked_records, tokenizer, kind):
    config = masking(tokenizer, whole_word=True)
    rows = dynamic_rows(unmasked_records[0], config, kind=kind)
    continuation = np.frombuffer(config.continuation, np.uint8).astype(bool)
    rng = random.Random(0)
    static_counts = []
    for row in range(len(rows["input_ids"])):
        original, n = rows["original_ids"][row], rows["input_mask"][row].sum()
        chosen = set(rows["masked_lm_positions"][row][rows["masked_lm_weights"][row] > 0].tolist())
        candidates = [p for p in range(n) if original[p] not in (config.cls_id, config.sep_id)]
        for previous, position in zip(candidates, candidates[1:]):  # a "##" piece goes with its word
            if continuation[original[position]]:
                assert (position in chosen) == (previous in chosen)
        assert len(chosen) <= num_to_predict(n, 0.15, PREDICTIONS)
        static_counts.append(len(mask_tokens(list(original[:n]), candidates, config, rng).positions))
    dynamic_counts = (rows["masked_lm_weights"] > 0).sum(axis=1)
    assert abs(dynamic_counts.mean() / np.mean(static_counts) - 1) < 0.01


def test_our_unmasked_records_hold_the_documents(unmasked_records, corpus, tokenizer):
    files, stats = unmasked_records
    rows = unmasked(files)
    assert len(rows["input_ids"]) == stats.instances
    maker = InstanceMaker(tokenizer, InstanceOptions(SEQ, 0.1, 1, 0, None))
    vocabulary = {i for d in maker.tokenize_documents([d.lines for d in CorpusReader().documents([corpus])])
                  for s in d for i in s}
    real = rows["input_mask"] > 0
    assert set(np.unique(rows["input_ids"][real])) <= vocabulary | {101, 102}


# ------------------------------------------------------------------------------ the input without TensorFlow

@pytest.mark.parametrize("source", ["original", "ours"])
def test_grain_input_yields_the_tf_data_input_in_order(original_records, masked_files, source):
    """Evaluation order: the Grain input's batches are the tf.data input's, value for value and dtype for dtype
    (Google's records and ours)."""
    files = [original_records[0]] if source == "original" else masked_files
    ours, theirs = list(input_batches("grain", files, 7, False)), list(input_batches("tf.data", files, 7, False))
    assert len(ours) == len(theirs) > 10
    for a, b in zip(ours, theirs):
        assert a.keys() == b.keys()
        for name in b:
            assert a[name].dtype == b[name].dtype and a[name].shape == b[name].shape, name
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def row_keys(rows):
    return sorted(zip(map(bytes, rows["input_ids"]), map(bytes, rows["masked_lm_positions"])))


def test_grain_training_epochs_are_shuffled_permutations(masked_files):
    """Training: each epoch is every record once (the same multiset as in order), in a new order each epoch and
    for each seed; batches are full."""
    everything = all_rows(input_batches("grain", masked_files, 5, False))
    count = len(everything["input_ids"])
    stream = input_batches("grain", masked_files, 5, True, seed=3)
    taken = [next(stream) for _ in range(-(-2 * count // 5))]
    assert all(len(b["input_ids"]) == 5 for b in taken)
    rows = all_rows(taken)
    first = {name: values[:count] for name, values in rows.items()}
    second = {name: values[count:2 * count] for name, values in rows.items()}
    assert row_keys(first) == row_keys(everything) == row_keys(second)
    assert not np.array_equal(first["input_ids"], everything["input_ids"])
    assert not np.array_equal(first["input_ids"], second["input_ids"])
    other = all_rows([next(input_batches("grain", masked_files, 5, True, seed=4)) for _ in range(3)])
    assert not np.array_equal(other["input_ids"], first["input_ids"][:15])


def test_grain_workers_read_disjoint_shards(masked_files):
    everything = all_rows(input_batches("grain", masked_files, 5, False))
    parts = [all_rows(input_batches("grain", masked_files, 5, False, input_context=InputContext(2, i)))
             for i in range(2)]
    assert sorted(row_keys(parts[0]) + row_keys(parts[1])) == row_keys(everything)
    assert abs(len(parts[0]["input_ids"]) - len(parts[1]["input_ids"])) <= 1
    with pytest.raises(ValueError, match=r"input pipeline 2 must be in \[0, 2\)"):
        grain_input.pretraining_batches(masked_files, 5, SEQ, PREDICTIONS, False, input_context=InputContext(2, 2))


@pytest.mark.parametrize("dynamic", [False, True], ids=["masked", "dynamic_masking"])
def test_grain_iterator_resumes_from_its_state(masked_files, unmasked_records, tokenizer, dynamic):
    """The input position: an iterator restored from another's state after 7 batches (the JSON it is saved as)
    yields what the first yields next: the same records, and with dynamic masking the same masks."""
    files = unmasked_records[0] if dynamic else masked_files
    options = {"seed": 2, "dynamic_masking": masking(tokenizer) if dynamic else None}
    first = iter(grain_input.pretraining_batches(files, 8, SEQ, PREDICTIONS, True, **options))
    for _ in range(7):
        next(first)
    state = json.loads(json.dumps(first.get_state()))
    resumed = iter(grain_input.pretraining_batches(files, 8, SEQ, PREDICTIONS, True, **options))
    resumed.set_state(state)
    for _ in range(5):
        expected, got = next(first), next(resumed)
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
