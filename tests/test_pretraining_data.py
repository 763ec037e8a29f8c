"""create_pretraining_data: the original algorithm (checked against Google's code), masking rules, record
format, determinism, sharding, bad input and Ctrl-C, on real State of the Union speeches."""

import collections
import glob
import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.pretraining import job as pretraining_job
from bert_tf.data.pretraining import records as tfrecord
from bert_tf.data.pretraining.corpus import CorpusReader, prepare_corpus
from bert_tf.data.pretraining.example_codec import PretrainingExampleEncoder
from bert_tf.data.pretraining.instances import (
    ChunkTokenizer,
    InstanceMaker,
    InstanceOptions,
    PretrainingStats,
    create_instances_from_document,
    truncate_seq_pair,
)
from bert_tf.data.pretraining.masking import MaskingConfig, mask_tokens, num_to_predict
from bert_tf.data.pretraining.pipeline import record_stats
from bert_tf.data.record_framing import check_framing, frame
from bert_tf.tokenization import FullTokenizer
from tests.helpers.sotu_speeches import SPEECHES, prepared_corpus
from tools.original_bert import import_original

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return prepared_corpus(tmp_path_factory, 100, 130)


@pytest.fixture(scope="module")
def documents(corpus, tokenizer):
    """The corpus as documents of id segments."""
    maker = InstanceMaker(tokenizer, InstanceOptions(128, 0.1, 1, 0))
    return maker.tokenize_documents([d.lines for d in CorpusReader().documents([corpus])])


def masking_config(tokenizer, whole_word=False, prob=0.15, max_predictions=20):
    return MaskingConfig.from_vocab(tokenizer.vocab, prob, max_predictions, whole_word)


def run_script(*flags, **popen):
    command = [sys.executable, os.path.join(ROOT, "create_pretraining_data.py"), *flags]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    if popen:
        return subprocess.Popen(command, cwd=ROOT, env=env, **popen)
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)


def read_records(path):
    return [r.numpy() for r in tf.data.TFRecordDataset(path)]


def parse(records, max_seq_length=128, max_predictions=20):
    spec = tfrecord.pretraining_feature_spec(max_seq_length, max_predictions)
    return {k: v.numpy() for k, v in tf.io.parse_example(records, spec).items()}


# --- The original algorithm ---------------------------------------------------------------------------

@pytest.mark.parametrize("max_seq_length,short_seq_prob", [(128, 0.1), (48, 0.5), (9, 0.2)])
def test_instances_equal_the_originals_given_the_same_random_state(documents, tokenizer, monkeypatch,
                                                                    max_seq_length, short_seq_prob):
    """Segmenting, random next documents with put-back and truncation draw the same numbers as Google's
    create_instances_from_document (its masking replaced by the identity, which draws none)."""
    original = import_original("create_pretraining_data")
    monkeypatch.setattr(original, "create_masked_lm_predictions", lambda tokens, *args: (tokens, [], []))
    docs = documents[:12]
    token_docs = [[tokenizer.convert_ids_to_tokens(s) for s in d] for d in docs]
    count = 0
    for index in range(len(docs)):
        theirs = original.create_instances_from_document(token_docs, index, max_seq_length, short_seq_prob, 0.15,
                                                         20, list(tokenizer.vocab), random.Random(index))
        ours = create_instances_from_document(docs, index, max_seq_length, short_seq_prob, random.Random(index))
        assert len(ours) == len(theirs)
        for mine, their in zip(ours, theirs):
            tokens = ["[CLS]", *tokenizer.convert_ids_to_tokens(mine.tokens_a), "[SEP]",
                      *tokenizer.convert_ids_to_tokens(mine.tokens_b), "[SEP]"]
            assert tokens == their.tokens and mine.is_random_next == their.is_random_next
            assert len(tokens) <= max_seq_length
        count += len(ours)
    assert count > 100


def test_truncation_equals_the_originals():
    original = import_original("create_pretraining_data")
    for seed in range(200):
        rng = random.Random(seed)
        a, b = list(range(rng.randint(1, 60))), list(range(100, 100 + rng.randint(1, 60)))
        theirs_a, theirs_b = list(a), list(b)
        limit = rng.randint(2, 70)
        original.truncate_seq_pair(theirs_a, theirs_b, limit, random.Random(seed))
        truncate_seq_pair(a, b, limit, random.Random(seed))
        assert (a, b) == (theirs_a, theirs_b)


def test_chunk_cache_tokenizes_exactly_like_full_tokenizer(tokenizer, corpus):
    """Hard text (accents, CJK, control and zero-width characters, long words) and real prose, with a small
    cache that is cleared many times."""
    chunked = ChunkTokenizer(tokenizer, max_entries=500)
    lines = open(os.path.join(ROOT, "tests", "fixtures", "tokenizer_corpus.txt"), encoding="utf-8").read().split("\n")
    lines += open(corpus, encoding="utf-8").read().split("\n")[:1500]
    lines += ["ΑΣ'Β ΟΔΟΣ, x\x00y,z", "a\tb,\x0bc", "  two  spaces ", "e.g.,U.S.A.'s 3.14%"]
    for line in lines:
        assert chunked.ids(line) == tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line)), repr(line)


# --- Masking ------------------------------------------------------------------------------------------

def test_num_to_predict_is_the_originals_rounding():
    assert num_to_predict(50, 0.15, 20) == 8  # 7.5 rounds to even
    assert num_to_predict(30, 0.15, 20) == 4  # 4.5 rounds to even
    assert num_to_predict(5, 0.15, 20) == 1  # at least one
    assert num_to_predict(512, 0.15, 76) == 76


def test_masking_follows_the_80_10_10_rules(documents, tokenizer):
    config = masking_config(tokenizer)
    rng = random.Random(7)
    by_mask = by_random = kept = total = 0
    for document in documents:
        for segment in document[:40]:
            ids = [config.cls_id] + segment[:60] + [config.sep_id] + segment[:20] + [config.sep_id]
            len_a = min(60, len(segment))
            candidates = list(range(1, len_a + 1)) + list(range(len_a + 2, len(ids) - 1))
            original = list(ids)
            masked = mask_tokens(ids, candidates, config, rng)
            assert masked.positions == sorted(set(masked.positions))
            assert set(masked.positions) <= set(candidates)
            assert len(masked.positions) == min(num_to_predict(len(ids), 0.15, 20), len(candidates))
            assert masked.labels == [original[p] for p in masked.positions]
            assert all(ids[p] == original[p] for p in range(len(ids)) if p not in masked.positions)
            by_mask += sum(ids[p] == config.mask_id for p in masked.positions)
            kept += masked.kept
            by_random += masked.replaced_by_random
            total += len(masked.positions)
            assert masked.replaced_by_mask + masked.replaced_by_random + masked.kept == len(masked.positions)
    assert total > 5000
    for rate, expected in ((by_mask / total, 0.8), (by_random / total, 0.1), (kept / total, 0.1)):
        assert abs(rate - expected) < 4 * (expected * (1 - expected) / total) ** 0.5


def test_masked_positions_are_uniform_over_candidates(tokenizer):
    config = masking_config(tokenizer)
    segment = list(range(2000, 2030))
    candidates = list(range(1, 31)) + list(range(32, 62))
    counts = collections.Counter()
    rng = random.Random(11)
    for _ in range(3000):
        ids = [config.cls_id] + segment + [config.sep_id] + segment + [config.sep_id]
        counts.update(mask_tokens(ids, candidates, config, rng).positions)
    assert sum(counts.values()) == 3000 * 9 and set(counts) == set(candidates)  # round(63 * 0.15) = 9
    expected = 3000 * 9 / 60
    assert all(abs(counts[p] - expected) < 5 * (expected * (1 - 9 / 60)) ** 0.5 for p in candidates)


def test_whole_word_masking_never_splits_a_word(documents, tokenizer):
    config = masking_config(tokenizer, whole_word=True)
    continuation = config.continuation
    rng = random.Random(3)
    words_masked = 0
    for document in documents[:10]:
        for segment in document:
            ids = [config.cls_id] + segment + [config.sep_id] + segment[:5] + [config.sep_id]
            candidates = list(range(1, len(segment) + 1)) + list(range(len(segment) + 2, len(ids) - 1))
            original = list(ids)
            masked = mask_tokens(ids, candidates, config, rng)
            target = num_to_predict(len(ids), 0.15, 20)
            assert len(masked.positions) <= target
            chosen = set(masked.positions)
            for position in candidates:  # a piece is masked iff the piece before it in the word is
                if continuation[original[position]] and position - 1 in candidates:
                    assert (position in chosen) == (position - 1 in chosen)
            words_masked += sum(1 for p in chosen if not continuation[original[p]])
    assert words_masked > 1000


def test_vocab_without_special_tokens_is_an_error(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"lacks \[MASK\]"):
        MaskingConfig.from_vocab(FullTokenizer(str(vocab)).vocab, 0.15, 20, False, str(vocab))


# --- Format -------------------------------------------------------------------------------------------

def test_encoder_writes_the_original_features(tokenizer):
    encoder = PretrainingExampleEncoder(len(tokenizer.vocab), 64, 7)
    rng = random.Random(0)
    for _ in range(50):
        len_a, len_b = rng.randint(1, 30), rng.randint(1, 30)
        ids = [101] + [rng.randrange(30522) for _ in range(len_a)] + [102] + [rng.randrange(30522) for _ in
                                                                             range(len_b)] + [102]
        positions = sorted(rng.sample(range(1, len(ids) - 1), rng.randint(1, 7)))
        labels = [rng.randrange(30522) for _ in positions]
        record = encoder.encode(ids, len_a, len_a % 2 == 0, positions, labels)
        pad, pad_p = 64 - len(ids), 7 - len(positions)
        reference = tfrecord.serialize_pretraining_example({
            "input_ids": ids + [0] * pad, "input_mask": [1] * len(ids) + [0] * pad,
            "segment_ids": [0] * (len_a + 2) + [1] * (len_b + 1) + [0] * pad,
            "masked_lm_positions": positions + [0] * pad_p, "masked_lm_ids": labels + [0] * pad_p,
            "masked_lm_weights": [1.0] * len(positions) + [0.0] * pad_p, "next_sentence_labels": [len_a % 2 == 0]})
        ours, theirs = parse([record], 64, 7), parse([reference], 64, 7)
        for name in theirs:
            np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
        unmasked = tf.train.Example.FromString(encoder.encode(ids, len_a, False))
        assert sorted(unmasked.features.feature) == ["input_ids", "input_mask", "next_sentence_labels", "segment_ids"]


def test_framing_is_byte_identical_to_tf_record_writer(tmp_path):
    rng = random.Random(1)
    records = [bytes(rng.getrandbits(8) for _ in range(rng.choice([1, 2, 3, 4, 5, 700, 3000])))
               for _ in range(300)]
    with tf.io.TFRecordWriter(str(tmp_path / "reference")) as writer:
        for record in records:
            writer.write(record)
    assert frame(records) == (tmp_path / "reference").read_bytes()


def test_framing_walk_counts_records_and_finds_truncated_and_damaged_files(tmp_path):
    rng = random.Random(2)
    records = [bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 7, 300]))) for _ in range(5000)]
    path = tmp_path / "records"
    with tf.io.TFRecordWriter(str(path)) as writer:  # TensorFlow's own framing
        for record in records:
            writer.write(record)
    data = path.read_bytes()
    starts = np.cumsum([0] + [len(record) + 16 for record in records])  # starts[-1]: the file's size
    assert starts[-1] == len(data) and check_framing(str(path)) == 5000
    last, bad = int(starts[-2]), tmp_path / "bad"

    def error(content):
        bad.write_bytes(content)
        with pytest.raises(ValueError) as raised:
            check_framing(str(bad))
        return str(raised.value)

    assert error(data[:last + 12 + 3]) == (
        f"{bad}: ends inside a record at byte {last} (a record of {len(records[-1])} bytes starts there, the file "
        f"has {last + 15}); the file is truncated: recreate it")
    assert error(data[:last + 5]) == (f"{bad}: ends inside a record at byte {last} (its 12-byte header is cut "
                                      "after 5 bytes); the file is truncated: recreate it")
    for index, byte in ((10, 9), (4500, 1)):  # a header's CRC, a length (the walk jumps; its CRC tells first)
        damaged = bytearray(data)
        damaged[starts[index] + byte] ^= 0x40
        assert error(bytes(damaged)) == (f"{bad}: the record header at byte {starts[index]} has a wrong CRC; the "
                                         "file is damaged or not a TFRecord file: recreate it")
    bad.write_bytes(data[:last])  # cut between records: framing alone cannot tell
    assert check_framing(str(bad)) == 4999
    bad.write_bytes(b"")
    assert check_framing(str(bad)) == 0


# --- The script ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def script_output(corpus, minilm_dir, tmp_path_factory):
    """The script on the corpus, 2 workers, 3 output shards, dupe_factor 2."""
    directory = tmp_path_factory.mktemp("out")
    result = run_script(f"--input_file={corpus}", f"--output_file={directory}/part-{{shard}}-of-{{num_shards}}",
                        "--num_output_shards=3", f"--vocab_file={minilm_dir}/vocab.txt", "--dupe_factor=2",
                        "--num_workers=2", "--random_seed=5")
    assert result.returncode == 0, result.stderr
    return directory, result.stderr


@pytest.mark.subprocess
def test_script_writes_shards_the_original_spec_parses(script_output, tokenizer):
    directory, log = script_output
    files = sorted(os.listdir(directory))
    assert files == ["part-0-of-3", "part-1-of-3", "part-2-of-3"]
    records = [read_records(str(directory / f)) for f in files]
    assert max(map(len, records)) - min(map(len, records)) <= 3
    features = parse([r for shard in records for r in shard])
    ids, mask, positions = features["input_ids"], features["input_mask"], features["masked_lm_positions"]
    weights = features["masked_lm_weights"]
    assert ids.shape == (sum(map(len, records)), 128) and positions.shape[1] == 20
    lengths = mask.sum(axis=1)
    assert (ids[:, 0] == 101).all() and (ids[np.arange(len(ids)), lengths - 1] == 102).all()
    assert ((ids == 102).sum(axis=1) == 2).all() and (ids[mask == 0] == 0).all()
    real = weights > 0
    labels = features["masked_lm_ids"]
    assert not np.isin(labels[real], [0, 101, 102]).any()  # [CLS]/[SEP] never masked
    assert (positions[real] > 0).all()
    assert (positions[real] < np.broadcast_to(lengths[:, None], positions.shape)[real]).all()
    assert (np.diff(np.where(real, positions, 1000 + np.arange(20)), axis=1) > 0).all()  # sorted, padding last
    assert (positions[~real] == 0).all() and (labels[~real] == 0).all()
    at_positions = np.take_along_axis(ids, positions, axis=1)[real]
    assert 0.75 < (at_positions == 103).mean() < 0.85 and 0.07 < (at_positions == labels[real]).mean() < 0.13
    assert "documents: 30" in log and "random next" in log and "masked:" in log


@pytest.mark.subprocess
def test_output_does_not_depend_on_workers_and_matches_a_single_file(script_output, corpus, minilm_dir, tmp_path):
    directory, _ = script_output
    single = tmp_path / "single.tfrecord"
    result = run_script(f"--input_file={corpus}", f"--output_file={single}", f"--vocab_file={minilm_dir}/vocab.txt",
                        "--dupe_factor=2", "--num_workers=1", "--random_seed=5")
    assert result.returncode == 0, result.stderr
    sharded = sorted(r for f in sorted(os.listdir(directory)) for r in read_records(str(directory / f)))
    assert sorted(read_records(str(single))) == sharded
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".incomplete")]


@pytest.fixture(scope="module")
def paragraph_corpus(tmp_path_factory):
    """The 30 speeches with each paragraph as a document (4,000 short documents: statistics vary little from
    one seed to another, unlike with 30 long documents, where one speech drawn short makes hundreds of short
    instances)."""
    path = str(tmp_path_factory.mktemp("paragraphs") / "paragraphs.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for speech in SPEECHES[100:130]:
            for paragraph in open(speech, encoding="utf-8").read().split("\n\n"):
                f.write(json.dumps({"text": paragraph}) + "\n")
    prepare_corpus([path], path + ".txt", input_format="jsonl")
    return path + ".txt"


@pytest.mark.slow
def test_statistics_match_the_original_script(paragraph_corpus, tokenizer, minilm_dir, tmp_path):
    """Google's create_training_instances (its reader, tokenizer, algorithm and masking) and our whole
    pipeline on the same corpus (seq 128, dupe_factor 2, 2 seeds each)."""
    original = import_original("create_pretraining_data")
    their_tokenizer = import_original("tokenization").FullTokenizer(os.path.join(minilm_dir, "vocab.txt"), True)
    theirs, ours = PretrainingStats(), PretrainingStats()
    for seed in (1, 2):
        for instance in original.create_training_instances([paragraph_corpus], their_tokenizer, 128, 2, 0.1, 0.15,
                                                           20, random.Random(seed)):
            theirs.instances += 1
            theirs.tokens += len(instance.tokens)
            theirs.short += len(instance.tokens) < 128
            theirs.random_next += instance.is_random_next
            theirs.masked += len(instance.masked_lm_positions)
            theirs.by_mask += sum(instance.tokens[p] == "[MASK]" for p in instance.masked_lm_positions)
            theirs.kept += sum(instance.tokens[p] == label for p, label in
                               zip(instance.masked_lm_positions, instance.masked_lm_labels))
        options = InstanceOptions(128, 0.1, 2, seed, masking_config(tokenizer))
        ours += pretraining_job.create_pretraining_data([paragraph_corpus], [str(tmp_path / "out")], tokenizer,
                                                        options)[0]
    assert abs(ours.instances / theirs.instances - 1) < 0.05
    mine, their = ours.rates(), theirs.rates()
    assert abs(mine["masked_fraction"] - their["masked_fraction"]) < 0.005
    assert abs(mine["mask_token_rate"] - their["mask_token_rate"]) < 0.02
    assert abs(ours.kept / ours.masked - theirs.kept / theirs.masked) < 0.02
    assert abs(mine["random_next_rate"] - their["random_next_rate"]) < 0.02
    assert abs(mine["short_rate"] - their["short_rate"]) < 0.02


def test_record_statistics_agree_with_the_summary(corpus, tokenizer, tmp_path):
    options = InstanceOptions(64, 0.1, 1, 9, masking_config(tokenizer, max_predictions=10))
    output = str(tmp_path / "out.tfrecord")
    stats, _ = pretraining_job.create_pretraining_data([corpus], [output], tokenizer, options, num_workers=1)
    from_records = record_stats(output, 64, 10, tokenizer.vocab["[MASK]"])
    assert from_records.instances == stats.instances and from_records.tokens == stats.tokens
    assert from_records.masked == stats.masked and from_records.by_mask == stats.by_mask
    assert from_records.random_next == stats.random_next and from_records.short == stats.short
    assert abs(from_records.kept - stats.kept) <= stats.masked // 1000 + 2  # a random id may equal the label


@pytest.mark.subprocess
def test_workers_started_from_a_tensorflow_process(corpus, tokenizer, tmp_path):
    """This process has imported TensorFlow, so the workers are spawned, not forked; same output."""
    options = InstanceOptions(64, 0.1, 1, 4, masking_config(tokenizer, max_predictions=10))
    outputs = [str(tmp_path / "one"), str(tmp_path / "two")]
    for workers, output in zip((1, 2), outputs):
        pretraining_job.create_pretraining_data([corpus], [output], tokenizer, options, num_workers=workers)
    assert open(outputs[0], "rb").read() == open(outputs[1], "rb").read()


def test_dynamic_masking_writes_unmasked_instances(corpus, tokenizer, tmp_path):
    output = str(tmp_path / "unmasked.tfrecord")
    options = InstanceOptions(128, 0.1, 1, 3, None)
    stats, _ = pretraining_job.create_pretraining_data([corpus], [output], tokenizer, options)
    records = read_records(output)
    assert len(records) == stats.instances and stats.masked == 0
    example = tf.train.Example.FromString(records[0])
    assert sorted(example.features.feature) == ["input_ids", "input_mask", "next_sentence_labels", "segment_ids"]
    spec = {k: v for k, v in tfrecord.pretraining_feature_spec(128, 20).items() if k in example.features.feature}
    ids = tf.io.parse_example(records, spec)["input_ids"].numpy()
    assert not (ids == tokenizer.vocab["[MASK]"]).any()


# --- Bad input ----------------------------------------------------------------------------------------

def create(tmp_path, tokenizer, text_or_files, **kwargs):
    if isinstance(text_or_files, bytes):
        (tmp_path / "in.txt").write_bytes(text_or_files)
        text_or_files = [str(tmp_path / "in.txt")]
    options = InstanceOptions(32, 0.1, 1, 1, masking_config(tokenizer))
    return pretraining_job.create_pretraining_data(text_or_files, [str(tmp_path / "out")], tokenizer, options,
                                                   **kwargs)


def test_bad_corpora_are_clear_errors_and_leave_nothing(tmp_path, tokenizer):
    with pytest.raises(ValueError, match="0 document"):
        create(tmp_path, tokenizer, b"\n\n  \n")
    with pytest.raises(ValueError, match="1 document"):
        create(tmp_path, tokenizer, b"Only one document.\nIt has two sentences.\n")
    with pytest.raises(ValueError, match=r"in\.txt:3: invalid UTF-8.*invalid_utf8=skip"):
        create(tmp_path, tokenizer, b"First document.\n\nSecond \xff document.\n")
    assert os.listdir(tmp_path) == ["in.txt"]


def test_invalid_utf8_lines_can_be_skipped_and_one_sentence_documents_work(tmp_path, tokenizer):
    stats, reader = create(tmp_path, tokenizer, b"One sentence.\n\nBad \xc3( line.\nGood line here.\n\nThird.\n",
                           invalid_utf8="skip")
    assert reader.skipped_lines == 1 and stats.documents == 3
    records = read_records(str(tmp_path / "out"))
    assert len(records) == stats.instances >= 3
    # One-sentence documents pair with a random other document.
    assert stats.random_next == stats.instances


@pytest.mark.subprocess
def test_script_reports_errors_in_one_line(tmp_path, minilm_dir):
    result = run_script(f"--input_file={tmp_path}/missing*.txt", f"--output_file={tmp_path}/out",
                        f"--vocab_file={minilm_dir}/vocab.txt")
    assert result.returncode == 1
    expected = f"Error: input file pattern '{tmp_path}/missing*.txt' matches no file"
    assert result.stderr.strip().splitlines()[-1] == expected
    with pytest.raises(ValueError, match="num_output_shards"):
        pretraining_job.output_files_from_flag(str(tmp_path / "out-{shard}"))
    with pytest.raises(ValueError, match="does not exist"):
        pretraining_job.output_files_from_flag(str(tmp_path / "no" / "out"))


@pytest.mark.subprocess
def test_ctrl_c_leaves_no_output(tmp_path, minilm_dir):
    big = tmp_path / "big.txt"
    prepare_corpus(SPEECHES[:60], str(big))
    process = run_script(f"--input_file={big}", f"--output_file={tmp_path}/a,{tmp_path}/b",
                         f"--vocab_file={minilm_dir}/vocab.txt", "--dupe_factor=40", "--num_workers=2",
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not glob.glob(str(tmp_path / "a.incomplete-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    assert process.poll() is None, process.stderr.read()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Interrupted" in stderr
    assert sorted(os.listdir(tmp_path)) == ["big.txt"]
