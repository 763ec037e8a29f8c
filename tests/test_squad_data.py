"""SQuAD reading, windows, labels and cached TFRecords: equal to the original run_squad.py, bad input handled."""

import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.squad import examples as squad
from bert_tf.data.squad import pipeline as squad_pipeline
from bert_tf.data.squad import records as squad_records
from tests.helpers.squad_fixtures import make_hard_squad, original_run_squad, space_out_cjk

SETTINGS = {"max_seq_length": 96, "doc_stride": 24, "max_query_length": 12}


def _hard_file(tmp_path_factory, tokenizer, version_2):
    """(path, version_2) of a small hard file: one context of 300+ words, 10+ windows per question."""
    path = str(tmp_path_factory.mktemp("squad") / "hard.json")
    make_hard_squad(path, tokenizer, version_2, seed=1, num_contexts=1, min_words=300, **SETTINGS)
    return path, version_2


@pytest.fixture(scope="module", params=[False, True], ids=["v1.1", "v2.0"])
def hard_file(request, tokenizer, tmp_path_factory):
    return _hard_file(tmp_path_factory, tokenizer, request.param)


@pytest.fixture(scope="module")
def hard_file_v2(tokenizer, tmp_path_factory):
    return _hard_file(tmp_path_factory, tokenizer, True)


def _write(tmp_path, data, name="data.json"):
    path = str(tmp_path / name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data if isinstance(data, dict) else {"version": "1.1", "data": data}, f, ensure_ascii=False)
    return path


def _squad(context, *qas):
    return [{"title": "t", "paragraphs": [{"context": context, "qas": list(qas)}]}]


def _qa(qid, question, answers=(), **extra):
    return {"id": qid, "question": question,
            "answers": [{"text": t, "answer_start": s} for t, s in answers], **extra}


# ------------------------------------------------------------------------------------ original equality

def _fields(example):
    """An example's attributes but `glued` (which the original's examples lack)."""
    return {k: v for k, v in vars(example).items() if k != "glued"}


@pytest.mark.parametrize("is_training", [True, False], ids=["train", "predict"])
def test_examples_and_features_equal_the_original(hard_file, tokenizer, is_training):
    """On the hard file with spaces around its CJK characters (東京 -> 東 京), where the original's whitespace
    words are bert_tf's words; test_cjk_characters_are_words_of_their_own: without the spaces bert_tf reads the
    same."""
    path, version_2 = hard_file
    path = space_out_cjk(path, path.replace(".json", "_spaced.json"))
    original = original_run_squad()
    original.FLAGS.version_2_with_negative = version_2
    expected_examples = original.read_squad_examples(path, is_training)
    read = squad.read_squad_examples(path, is_training, version_2)
    assert read.skipped == []
    assert len(read.examples) == len(expected_examples) > 100
    for ours, theirs in zip(read.examples, expected_examples):
        assert _fields(ours) == vars(theirs) and not any(ours.glued)
    expected = []
    original.convert_examples_to_features(expected_examples, tokenizer, output_fn=expected.append,
                                          is_training=is_training, **SETTINGS)
    features = list(squad.convert_examples_to_features(read.examples, tokenizer, is_training=is_training,
                                                       **SETTINGS))
    assert len(features) == len(expected)
    for ours, theirs in zip(features, expected):
        assert vars(ours) == vars(theirs)
    windows = np.bincount([f.example_index for f in features])
    assert windows.min() >= 10  # many windows per question
    if is_training:
        in_window = [f for f in features if f.start_position > 0]
        assert len({f.example_index for f in in_window}) == sum(not e.is_impossible for e in read.examples)
        assert all(f.start_position == f.end_position == 0 for f in features if f.is_impossible)


@pytest.mark.parametrize("is_training", [True, False], ids=["train", "predict"])
def test_cjk_characters_are_words_of_their_own(hard_file, tokenizer, is_training):
    """The hard file as it is reads into the examples and features of its CJK-spaced copy (which equal the
    original's); only `glued` tells the two apart."""
    path, version_2 = hard_file
    spaced = squad.read_squad_examples(space_out_cjk(path, path.replace(".json", "_spaced.json")), is_training,
                                       version_2)
    read = squad.read_squad_examples(path, is_training, version_2)

    def unspaced(example):  # the spaced copy's answer texts have the spaces too
        fields = _fields(example)
        text = fields["orig_answer_text"]
        return {**fields, "orig_answer_text": text and "".join(text.split())}

    assert [unspaced(e) for e in read.examples] == [unspaced(e) for e in spaced.examples]
    example = read.examples[0]
    glued = [(example.doc_tokens[i - 1], example.doc_tokens[i]) for i, g in enumerate(example.glued) if g]
    assert glued and all(squad.is_cjk(before[-1]) or squad.is_cjk(word[0]) for before, word in glued)
    features = list(squad.convert_examples_to_features(read.examples, tokenizer, is_training=is_training,
                                                       **SETTINGS))
    expected = list(squad.convert_examples_to_features(spaced.examples, tokenizer, is_training=is_training,
                                                       **SETTINGS))
    assert [vars(f) for f in features] == [vars(f) for f in expected]


def test_chinese_answers_are_labelled_where_answer_start_puts_them(tmp_path, tokenizer):
    """A repeated answer is labelled at its answer_start (the original labels the first occurrence in a
    no-space paragraph), and an answer inside a tokenizer word ("58" of "99∶58": ∶ is no punctuation to BERT)
    is labelled on that word (the original: on the whole paragraph)."""
    context = "中国队以99∶58战胜日本队。中国队第二次夺冠，日本队第三。"
    second, score = context.index("日本队", context.index("日本队") + 1), context.index("58")
    path = _write(tmp_path, _squad(context, _qa("a", "谁第三？", [("日本队", second)]),
                                   _qa("b", "比分？", [("58", score)])))
    examples = squad.read_squad_examples(path, is_training=True).examples
    assert [e.words_text(e.start_position, e.end_position) for e in examples] == ["日本队", "99∶58"]
    assert examples[0].start_position == second - 4  # a word per character before it, "99∶58" one word
    assert examples[0].words_text(0, len(examples[0].doc_tokens) - 1) == context


def test_answer_span_is_narrowed_to_the_word_pieces_of_the_answer(tmp_path, tokenizer):
    context = "The leader was John Smith (1895-1943). The Japanese electronics industry is the largest."
    path = _write(tmp_path, _squad(context, _qa("year", "When was he born?", [("1895", 27)]),
                                   _qa("country", "Which country?", [("Japan", 43)])))
    examples = squad.read_squad_examples(path, is_training=True).examples
    assert [e.doc_tokens[e.start_position] for e in examples] == ["(1895-1943).", "Japanese"]
    features = list(squad.convert_examples_to_features(examples, tokenizer, 64, 16, 16, is_training=True))
    answers = [f.tokens[f.start_position:f.end_position + 1] for f in features]
    # "1895" is found among the pieces of "(1895-1943)."; "Japan" is not a piece of "japanese", so the whole
    # word is the label (the original's documented limitation).
    assert answers == [["1895"], ["japanese"]]


# --------------------------------------------------------------------------------------------- bad input

def test_malformed_json_names_the_file(tmp_path):
    path = str(tmp_path / "broken.json")
    with open(path, "w") as f:
        f.write('{"data": [{"paragraphs": [}')
    with pytest.raises(ValueError, match=r"broken\.json: a SQuAD file is not valid JSON \(Expecting value: line 1"):
        squad.read_squad_examples(path, is_training=False)
    with pytest.raises(ValueError, match="expected a SQuAD JSON object with a 'data' list"):
        squad.read_squad_examples(_write(tmp_path, {"articles": []}), is_training=False)


def test_missing_or_wrong_fields_name_the_place(tmp_path):
    cases = [
        ([{"title": "t"}], r"article 0 has no 'paragraphs'"),
        ([{"paragraphs": [{"qas": []}]}], r"article 0 paragraph 0 has no 'context'"),
        (_squad("text", {"question": "q?"}), r"article 0 paragraph 0, a question has no 'id'"),
        (_squad("text", {"id": "x7", "question": None}), r"question x7 has no 'question' of type str"),
        # A string "false" was true to training (bool("false")) and false to the evaluation (`is True`).
        (_squad("text", {"id": "x8", "question": "q?", "is_impossible": "false"}),
         r"question x8 has no 'is_impossible' of type bool \(got 'false'\)"),
    ]
    for data, message in cases:
        with pytest.raises(ValueError, match=message):
            squad.read_squad_examples(_write(tmp_path, data), is_training=False)


def test_answers_not_in_the_context_are_skipped_with_their_ids(tmp_path, caplog):
    context = "Denver Broncos won Super Bowl 50 in Santa Clara."
    data = _squad(context,
                  _qa("good", "Who won?", [("Denver Broncos", 0)]),
                  _qa("shifted", "Who won?", [("Denver Broncos", 19)]),
                  _qa("outside", "Where?", [("Santa Clara", 200)]),
                  _qa("negative", "Where?", [("Santa", -3)]),
                  _qa("blank", "Where?", [("  ", 3)]),
                  _qa("not-int", "Where?", [("Santa", "36")]),
                  {"id": "not-dict", "question": "Where?", "answers": ["Santa Clara"]})
    path = _write(tmp_path, data)
    with caplog.at_level(logging.WARNING, logger="absl"):
        read = squad.read_squad_examples(path, is_training=True)
    assert [e.qas_id for e in read.examples] == ["good"]
    assert [qid for qid, _ in read.skipped] == ["shifted", "outside", "negative", "blank", "not-int", "not-dict"]
    assert "skipping question shifted: answer 'Denver Broncos' is not in the context at answer_start=19" in caplog.text
    # Prediction does not read answers: every question gets a prediction.
    assert len(squad.read_squad_examples(path, is_training=False).examples) == 7


def test_training_needs_one_answer_and_version_2_for_impossible(tmp_path):
    two = _write(tmp_path, _squad("a b c", _qa("two", "q?", [("a", 0), ("b", 2)])))
    with pytest.raises(ValueError, match="question two has 2 answers; for training each question needs exactly 1"):
        squad.read_squad_examples(two, is_training=True)
    impossible = _write(tmp_path, _squad("a b c", _qa("none", "q?", is_impossible=True)))
    with pytest.raises(ValueError, match="question none is_impossible, but version_2_with_negative is False"):
        squad.read_squad_examples(impossible, is_training=True)
    example, = squad.read_squad_examples(impossible, is_training=True, version_2_with_negative=True).examples
    assert (example.is_impossible, example.start_position, example.orig_answer_text) == (True, -1, "")
    duplicate = _write(tmp_path, _squad("a b c", _qa("same", "q?"), _qa("same", "r?")))
    with pytest.raises(ValueError, match="question id 'same' appears twice"):
        squad.read_squad_examples(duplicate, is_training=False)


def test_empty_context_gets_one_window_without_context(tmp_path, tokenizer):
    path = _write(tmp_path, _squad("  \n ", _qa("empty", "Is there anything?", is_impossible=True)))
    for is_training in (False, True):
        examples = squad.read_squad_examples(path, is_training, version_2_with_negative=True).examples
        feature, = squad.convert_examples_to_features(examples, tokenizer, 32, 8, 8, is_training)
        assert feature.tokens == ["[CLS]", "is", "there", "anything", "?", "[SEP]", "[SEP]"]
        assert feature.token_to_orig_map == {}
        assert (feature.start_position, feature.end_position) == ((0, 0) if is_training else (None, None))
    answerable = _write(tmp_path, _squad("", _qa("lost", "q?", [("x", 0)])))
    assert squad.read_squad_examples(answerable, is_training=True).skipped[0][0] == "lost"


def test_long_questions_are_truncated_to_max_query_length(tmp_path, tokenizer, caplog):
    question = " ".join(["why"] * 40) + "?"
    path = _write(tmp_path, _squad("Because it is so. " * 3, _qa("long", question, [("it is so", 8)])))
    examples = squad.read_squad_examples(path, is_training=True).examples
    with caplog.at_level(logging.INFO, logger="absl"):
        features = list(squad.convert_examples_to_features(examples, tokenizer, 48, 16, 10, is_training=True))
    assert "Truncated 1 question(s) longer than max_query_length=10 word pieces: long" in caplog.text
    assert all(f.tokens[:12] == ["[CLS]"] + ["why"] * 10 + ["[SEP]"] for f in features)
    assert features[0].tokens[features[0].start_position:features[0].end_position + 1] == ["it", "is", "so"]
    with pytest.raises(ValueError, match=r"max_seq_length=13 must be greater than max_query_length=10 \+ 3"):
        list(squad.convert_examples_to_features(examples, tokenizer, 13, 16, 10, is_training=True))
    with pytest.raises(ValueError, match="doc_stride=0 must be >= 1"):
        list(squad.convert_examples_to_features(examples, tokenizer, 48, 0, 10, is_training=True))


# ------------------------------------------------------------------------------------- records and cache

def test_cached_records_round_trip_and_are_keyed_by_settings(hard_file_v2, tokenizer, tmp_path):
    path, version_2 = hard_file_v2
    cache = str(tmp_path / "cache")
    prepared = {}
    for is_training in (True, False):
        first = squad_records.prepare_squad(path, tokenizer, cache, is_training=is_training,
                                            version_2_with_negative=version_2, **SETTINGS)
        second = squad_records.prepare_squad(path, tokenizer, cache, is_training=is_training,
                                             version_2_with_negative=version_2, **SETTINGS)
        assert (first.from_cache, second.from_cache) == (False, True)
        assert first.record_file == second.record_file and first.num_features == second.num_features
        assert [e.qas_id for e in first.examples] == [e.qas_id for e in second.examples]
        prepared[is_training] = second
    other = squad_records.prepare_squad(path, tokenizer, cache, is_training=False,
                                        version_2_with_negative=version_2, **{**SETTINGS, "doc_stride": 40})
    assert not other.from_cache and other.record_file != prepared[False].record_file
    assert len(os.listdir(cache)) == 6  # 3 record files, each with its summary

    # Prediction records hold everything post-processing needs: they equal a fresh conversion.
    predict = prepared[False]
    fresh = list(squad.convert_examples_to_features(predict.examples, tokenizer, is_training=False, **SETTINGS))
    assert [vars(f) for f in squad_records.read_prediction_features(predict.record_file)] == [vars(f) for f in fresh]

    # Training records: the original's 7 features; examples pre-shuffled as the original does.
    train = prepared[True]
    assert [e.qas_id for e in train.examples] != [e.qas_id for e in predict.examples]
    raw = next(iter(tf.data.TFRecordDataset(train.record_file)))
    names = set(tf.train.Example.FromString(raw.numpy()).features.feature)
    assert names == {"unique_ids", "input_ids", "input_mask", "segment_ids", "start_positions", "end_positions",
                     "is_impossible"}
    expected = list(squad.convert_examples_to_features(train.examples, tokenizer, is_training=True, **SETTINGS))
    records = tf.data.TFRecordDataset(train.record_file).batch(len(expected))
    parsed = tf.io.parse_example(next(iter(records)), squad_pipeline.feature_spec(96, is_training=True))
    assert parsed["input_ids"].shape == (len(expected), 96)
    np.testing.assert_array_equal(parsed["start_positions"], [f.start_position for f in expected])
    np.testing.assert_array_equal(parsed["input_mask"], [f.input_mask for f in expected])
    batch = next(iter(squad_pipeline.squad_dataset(predict.record_file, 96, is_training=False, batch_size=5000)))
    assert sorted(batch) == ["input_ids", "input_mask", "segment_ids", "unique_ids"]
    assert all(v.dtype == tf.int32 for v in batch.values()) and batch["input_ids"].shape == (len(fresh), 96)
    np.testing.assert_array_equal(batch["segment_ids"], [f.segment_ids for f in fresh])


def test_a_truncated_cache_is_converted_anew(hard_file_v2, tokenizer, tmp_path, caplog):
    path, version_2 = hard_file_v2
    kwargs = dict(is_training=False, version_2_with_negative=version_2, **SETTINGS)
    first = squad_records.prepare_squad(path, tokenizer, str(tmp_path), **kwargs)
    with open(first.record_file, "rb") as f:
        intact = f.read()
    last = len(intact) - 16 - len(list(tf.data.TFRecordDataset(first.record_file))[-1].numpy())
    for cut, problem in ((len(intact) - 7, f"ends inside a record at byte {last}"),
                         (last, f"{first.num_features - 1} records, but its summary counts {first.num_features}")):
        with open(first.record_file, "wb") as f:
            f.write(intact[:cut])
        with caplog.at_level(logging.WARNING, logger="absl"):
            again = squad_records.prepare_squad(path, tokenizer, str(tmp_path), **kwargs)
        assert not again.from_cache and f"Cached features not reused ({first.record_file}: {problem}" in caplog.text
        with open(first.record_file, "rb") as f:
            assert f.read() == intact
    assert squad_records.prepare_squad(path, tokenizer, str(tmp_path), **kwargs).from_cache


def test_training_dataset_repeats_shuffles_and_drops_the_remainder(hard_file_v2, tokenizer, tmp_path):
    path, version_2 = hard_file_v2
    prepared = squad_records.prepare_squad(path, tokenizer, str(tmp_path), is_training=True,
                                           version_2_with_negative=version_2, **SETTINGS)
    dataset = squad_pipeline.squad_dataset(prepared.record_file, 96, is_training=True, batch_size=7, seed=3)
    batches = list(dataset.take(prepared.num_features // 7 + 2))
    assert all(b["input_ids"].shape == (7, 96) for b in batches)
    ids = np.concatenate([b["unique_ids"] for b in batches[: prepared.num_features // 7]])
    assert set(ids.tolist()) <= set(range(squad.FIRST_UNIQUE_ID, squad.FIRST_UNIQUE_ID + prepared.num_features))
    assert len(set(ids.tolist())) > 0.8 * len(ids) and not np.all(np.diff(ids) > 0)  # shuffled across epochs
    with pytest.raises(ValueError, match="not a prediction record file"):
        squad_records.read_prediction_features(prepared.record_file)
