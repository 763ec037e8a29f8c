"""GLUE / XNLI processors on a few lines in the exact layouts of GLUE's files, and against the original
run_classifier.py processors (CoLA, MNLI, MRPC, XNLI)."""

import pytest

from bert_tf.data.tasks import glue as glue_tasks
from bert_tf.data.tasks.classification import InputExample
from tests.original_classifier import original_run_classifier

MNLI_TRAIN_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
                     "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label")
MNLI_DEV_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
                   "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tlabel3\tlabel4\t"
                   "label5\tgold_label")
MNLI_TEST_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
                    "sentence1_parse\tsentence2_parse\tsentence1\tsentence2")
XNLI_HEADER = ("language\tgold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
               "sentence2_parse\tsentence1\tsentence2\tpromptID\tpairID\tgenre\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5")
PARSE = "( ( x ) )\t( ( y ) )\t(ROOT x)\t(ROOT y)"
# Real GLUE lines: quotes are ordinary characters (GLUE's files are not quoted), some unbalanced.
GLUE = {
    "CoLA/train.tsv": "gj04\t1\t\tOur friends won't buy this analysis, let alone the next one we propose.\n"
                      "gj04\t0\t*\t\"One more pseudo generalization and I'm giving up.\n",
    "CoLA/dev.tsv": "gj04\t1\t\tThe sailors rode the breeze clear of the rocks.\n",
    "CoLA/test.tsv": "index\tsentence\n0\tBill whistled past the house.\n1\tThe car honked its way down the road.\n",
    "SST-2/train.tsv": "sentence\tlabel\nhide new secretions from the parental units \t0\n\"contains no wit , only "
                       "labored gags \t0\n",
    "SST-2/dev.tsv": "sentence\tlabel\nit 's a charming and often affecting journey . \t1\n",
    "SST-2/test.tsv": "index\tsentence\n0\tuneasy mishmash of styles and genres .\n",
    "MRPC/train.tsv": "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                      "1\t702876\t702977\tAmrozi accused his brother , whom he called \" the witness \" , of "
                      "deliberately distorting his evidence .\tReferring to him as only \" the witness \" , Amrozi "
                      "accused his brother of deliberately distorting his evidence .\n"
                      "0\t2108705\t2108831\tYucaipa owned Dominick 's before selling the chain to Safeway in 1998 "
                      "for $ 2.5 billion .\tYucaipa bought Dominick 's in 1995 for $ 693 million and sold it to "
                      "Safeway for $ 1.8 billion in 1998 .\n",
    "MRPC/dev.tsv": "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1355540\t1355592\tHe said the foodservice "
                    "pie business doesn 't fit .\tThe foodservice pie business does not fit .\n",
    "MRPC/test.tsv": "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n0\t1089874\t1089925\tPCCW 's chief operating "
                     "officer , Mike Butcher , will report .\tCurrent Chief Operating Officer Mike Butcher will "
                     "report .\n",
    "STS-B/train.tsv": "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
                       "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane is taking off.\tAn air "
                       "plane is taking off.\t5.000\n1\tmain-captions\tMSRvid\t2012test\t0004\tnone\tnone\tA man "
                       "is playing a large flute.\tA man is playing a flute.\t3.800\n",
    "STS-B/dev.tsv": "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
                     "0\tmain-captions\tMSRvid\t2012test\t0000\tnone\tnone\tA man with a hard hat is dancing.\tA "
                     "man wearing a hard hat is dancing.\t5.000\n",
    "STS-B/test.tsv": "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\n"
                      "0\tmain-captions\tMSRvid\t2012test\t0024\tnone\tnone\tA girl is styling her hair.\tA girl "
                      "is brushing her hair.\n",
    "QQP/train.tsv": "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n133273\t213221\t213222\tHow is the life "
                     "of a math student? Could you describe your own experiences?\tWhich level of prepration is "
                     "enough for the exam jlpt5?\t0\n",
    "QQP/dev.tsv": "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n201359\t303345\t303346\tWhy are African-"
                   "Americans so beautiful?\tWhy are hispanics so beautiful?\t0\n",
    "QQP/test.tsv": "id\tquestion1\tquestion2\n0\tWhy am I mentally very lonely? How can I solve it?\tFind the "
                    "remainder when [math]23^{24}[/math] is divided by 24,23?\n",
    "MNLI/train.tsv": f"{MNLI_TRAIN_HEADER}\n0\t31193\t31193n\tgovernment\t{PARSE}\tConceptually cream "
                      "skimming has two basic dimensions - product and geography.\tProduct and geography are what "
                      "make cream skimming work. \tneutral\tneutral\n1\t101457\t101457e\ttelephone\t"
                      f"{PARSE}\t\"you know during the season and i guess at at your level uh\tYou lose the things "
                      "to the following level if the people recall.\tentailment\tentailment\n",
    "MNLI/dev_matched.tsv": f"{MNLI_DEV_HEADER}\n0\t63735\t63735n\tslate\t{PARSE}\tThe new rights are nice "
                            "enough\tEveryone really likes the newest benefits \tneutral\tentailment\tneutral\t"
                            "neutral\tneutral\tneutral\n",
    "MNLI/dev_mismatched.tsv": f"{MNLI_DEV_HEADER}\n0\t75290\t75290c\tletters\t{PARSE}\tYour contribution "
                               "helped make it possible.\tYour contributions were of no help.\tcontradiction\t"
                               "contradiction\tcontradiction\tcontradiction\tcontradiction\tcontradiction\n",
    "MNLI/test_matched.tsv": f"{MNLI_TEST_HEADER}\n0\t31493\t31493\ttravel\t{PARSE}\tHierbas, ans seco, ans "
                             "dulce, and frigola are just a few names.\tHierbas is a name worth looking out for.\n",
    "MNLI/test_mismatched.tsv": f"{MNLI_TEST_HEADER}\n0\t75289\t75289\tletters\t{PARSE}\tWhat a Shame\tAnd "
                                "what a shame.\n",
    "QNLI/train.tsv": "index\tquestion\tsentence\tlabel\n0\tWhen did the third Digimon series begin?\tUnlike the "
                      "two seasons before it, it takes place in a fictional universe.\tnot_entailment\n",
    "QNLI/dev.tsv": "index\tquestion\tsentence\tlabel\n0\tWhat came into force after the new constitution was "
                    "herald?\tAs of that day, the new constitution heralding the Second Republic came into "
                    "force.\tentailment\n",
    "QNLI/test.tsv": "index\tquestion\tsentence\n0\tWhat organization is devoted to Jihad against Israel?\tFor "
                     "some decades prior to the First Palestine Intifada, it was devoted to social services.\n",
    "RTE/train.tsv": "index\tsentence1\tsentence2\tlabel\n0\tNo Weapons of Mass Destruction Found in Iraq Yet.\t"
                     "Weapons of Mass Destruction Found in Iraq.\tnot_entailment\n",
    "RTE/dev.tsv": "index\tsentence1\tsentence2\tlabel\n0\tDana Reeve, the widow of the actor, died.\tChristopher "
                   "Reeve had an accident.\tnot_entailment\n",
    "RTE/test.tsv": "index\tsentence1\tsentence2\n0\tMangla was built in 1967.\tMangla Dam was built in 1967.\n",
    "WNLI/train.tsv": "index\tsentence1\tsentence2\tlabel\n0\tI stuck a pin through a carrot. When I pulled the "
                      "pin out, it had a hole.\tThe carrot had a hole.\t1\n",
    "WNLI/dev.tsv": "index\tsentence1\tsentence2\tlabel\n0\tThe drain is clogged with hair. It has to be cleaned."
                    "\tThe hair has to be cleaned.\t0\n",
    "WNLI/test.tsv": "index\tsentence1\tsentence2\n0\tMaude and Dora had seen the trains rushing across the "
                     "prairie.\tHorses ran away when Maude and Dora came into sight.\n",
    "diagnostic/diagnostic.tsv": "index\tsentence1\tsentence2\n0\tThe cat sat on the mat.\tThe cat did not sit "
                                 "on the mat.\n",
    "XNLI/multinli/multinli.train.zh.tsv": "premise\thypo\tlabel\n从 概念 上 看 , 奶油 收入 有 两 个 基本 方面 产品 和 "
                                           "地理 .\t产品 和 地理 是 什么 使 奶油 抹 霜 工作 .\tneutral\n你 知道 在 这个 "
                                           "季节\t你 会 失去 东西\tcontradictory\n",
    "XNLI/xnli.dev.tsv": f"{XNLI_HEADER}\nen\tneutral\ta\tb\tc\td\tHe said, \"Mom, I'm home.\"\tHe didn't say a "
                         "word.\t1\t1\tfacetoface\tneutral\tcontradiction\tcontradiction\tcontradiction\t"
                         "contradiction\nzh\tcontradiction\ta\tb\tc\td\t他 说 , 妈妈 , 我 回来 了 。\t他 一句话 也 没 说 。"
                         "\t1\t1\tfacetoface\tcontradiction\tcontradiction\tcontradiction\tcontradiction\t"
                         "contradiction\n",
    "XNLI/xnli.test.tsv": f"{XNLI_HEADER}\nzh\tentailment\ta\tb\tc\td\t嗯 , 我 根本 没 想 过 。\t我 没 想 过 。\t1\t1\t"
                          "facetoface\tentailment\tentailment\tentailment\tentailment\tentailment\n",
}


@pytest.fixture(scope="module")
def glue_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("glue_data")
    for name, text in GLUE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def original():
    return original_run_classifier()


def as_tuples(examples):
    return [(e.guid, e.text_a, e.text_b, e.label) for e in examples]


@pytest.mark.parametrize("task,directory,splits", [
    ("cola", "CoLA", ("train", "dev")), ("mrpc", "MRPC", ("train", "dev")),
    ("mnli", "MNLI", ("train", "dev_matched")), ("xnli", "XNLI", ("train", "dev"))])
def test_same_examples_as_the_original(original, glue_dir, task, directory, splits):
    ours = glue_tasks.get_processor(task)
    theirs = {"cola": original.ColaProcessor, "mrpc": original.MrpcProcessor, "mnli": original.MnliProcessor,
              "xnli": original.XnliProcessor}[task]()
    data_dir = str(glue_dir / directory)
    assert ours.get_labels() == theirs.get_labels()
    assert as_tuples(ours.get_train_examples(data_dir)) == as_tuples(theirs.get_train_examples(data_dir))
    assert as_tuples(ours.get_dev_examples(data_dir)) == as_tuples(theirs.get_dev_examples(data_dir))
    assert ours.dev_splits[0] == splits[1]


def test_original_test_sets_read_the_same_texts(original, glue_dir):
    for task, directory in (("cola", "CoLA"), ("mrpc", "MRPC"), ("mnli", "MNLI")):
        theirs = getattr(original, f"{directory.capitalize()}Processor")().get_test_examples(str(glue_dir / directory))
        ours = glue_tasks.get_processor(task).get_test_examples(str(glue_dir / directory))
        assert [(e.text_a, e.text_b) for e in ours] == [(e.text_a, e.text_b) for e in theirs]
        assert all(e.label is None for e in ours)


EXPECTED_FIRST = {  # task: (split, first example)
    "sst-2": ("train", InputExample("train-1", "hide new secretions from the parental units ", None, "0")),
    "sts-b": ("train", InputExample("train-0", "A plane is taking off.", "An air plane is taking off.", 5.0)),
    "qqp": ("dev", InputExample("dev-201359", "Why are African-Americans so beautiful?",
                                "Why are hispanics so beautiful?", "0")),
    "qnli": ("train", InputExample("train-0", "When did the third Digimon series begin?",
                                   "Unlike the two seasons before it, it takes place in a fictional universe.",
                                   "not_entailment")),
    "rte": ("dev", InputExample("dev-0", "Dana Reeve, the widow of the actor, died.",
                                "Christopher Reeve had an accident.", "not_entailment")),
    "wnli": ("dev", InputExample("dev-0", "The drain is clogged with hair. It has to be cleaned.",
                                 "The hair has to be cleaned.", "0")),
    "mnli": ("dev_mismatched", InputExample("dev_mismatched-0", "Your contribution helped make it possible.",
                                            "Your contributions were of no help.", "contradiction")),
}
DIRECTORIES = {"sst-2": "SST-2", "sts-b": "STS-B", "qqp": "QQP", "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI",
               "mnli": "MNLI", "cola": "CoLA", "mrpc": "MRPC", "ax": "diagnostic", "xnli": "XNLI"}


@pytest.mark.parametrize("task", sorted(EXPECTED_FIRST))
def test_layouts(glue_dir, task):
    split, expected = EXPECTED_FIRST[task]
    processor = glue_tasks.get_processor(task)
    assert processor.get_examples(str(glue_dir / DIRECTORIES[task]), split)[0] == expected


def test_every_task_reads_its_test_set_and_writes_its_submission(glue_dir, tmp_path):
    names = set()
    for task, directory in DIRECTORIES.items():
        processor = glue_tasks.get_processor(task)
        for split in processor.test_splits:
            examples = processor.get_examples(str(glue_dir / directory), split)
            if task == "xnli":  # XNLI's test set is labelled and has no leaderboard
                assert [e.label for e in examples] == ["entailment"]
                continue
            assert examples and all(e.label is None for e in examples)
            predictions = [0.5] * len(examples) if processor.is_regression else [processor.labels[-1]] * len(examples)
            name = processor.submission_files[split]
            glue_tasks.write_submission(str(tmp_path / name), examples, predictions)
            names.add(name)
    assert names == {"CoLA.tsv", "SST-2.tsv", "MRPC.tsv", "STS-B.tsv", "QQP.tsv", "MNLI-m.tsv", "MNLI-mm.tsv",
                     "QNLI.tsv", "RTE.tsv", "WNLI.tsv", "AX.tsv"}
    assert (tmp_path / "QQP.tsv").read_text() == "index\tprediction\n0\t1\n"
    assert (tmp_path / "STS-B.tsv").read_text() == "index\tprediction\n0\t0.500\n"
    assert (tmp_path / "AX.tsv").read_text() == "index\tprediction\n0\tneutral\n"
    assert (tmp_path / "CoLA.tsv").read_text() == "index\tprediction\n0\t1\n1\t1\n"


def test_task_properties():
    assert glue_tasks.get_processor("STS-B").is_regression
    assert glue_tasks.get_processor("CoLA").metrics[0] == "mcc"
    assert glue_tasks.get_processor("qqp").metrics == ("f1", "accuracy")
    assert glue_tasks.get_processor("sst2").get_labels() == ["0", "1"]
    assert glue_tasks.get_processor("mnli").dev_splits == ("dev_matched", "dev_mismatched")
    assert glue_tasks.get_processor("xnli", language="en").language == "en"


def test_xnli_keeps_one_language_and_maps_contradictory(glue_dir):
    processor = glue_tasks.get_processor("xnli")
    assert [e.label for e in processor.get_train_examples(str(glue_dir / "XNLI"))] == ["neutral", "contradiction"]
    english = glue_tasks.get_processor("xnli", language="en").get_dev_examples(str(glue_dir / "XNLI"))
    assert as_tuples(english) == [("dev-1", "He said, \"Mom, I'm home.\"", "He didn't say a word.", "neutral")]
    with pytest.raises(ValueError, match="no examples in the dev set"):
        glue_tasks.get_processor("xnli", language="de").get_dev_examples(str(glue_dir / "XNLI"))


def test_bad_input(glue_dir, tmp_path):
    with pytest.raises(ValueError, match="unknown task 'glue'"):
        glue_tasks.get_processor("glue")
    with pytest.raises(ValueError, match="AxProcessor has no 'train' set"):
        glue_tasks.get_processor("ax").get_train_examples(str(glue_dir / "diagnostic"))
    with pytest.raises(ValueError, match="dev.tsv does not exist"):
        glue_tasks.get_processor("rte").get_dev_examples(str(tmp_path))
    (tmp_path / "train.tsv").write_text("index\tquestion\tsentence\tlabel\n0\tq?\ta\tb\tentailment\n")
    with pytest.raises(ValueError, match=r"train.tsv:2: 5 columns, expected 4"):
        glue_tasks.get_processor("qnli").get_train_examples(str(tmp_path))
    (tmp_path / "train.tsv").write_text("index\tquestion\tsentence\tlabel\n0\tq?\ta\tyes\n")
    with pytest.raises(ValueError, match=r"train.tsv:2: label 'yes' is not one of the task's labels"):
        glue_tasks.get_processor("qnli").get_train_examples(str(tmp_path))
    (tmp_path / "train.tsv").write_text("index\tsentence1\tsentence2\tscore\n0\ta\tb\tfive\n")
    with pytest.raises(ValueError, match=r"train.tsv:2: regression label 'five' is not a number"):
        glue_tasks.get_processor("sts-b").get_train_examples(str(tmp_path))
    (tmp_path / "dev.tsv").write_text("gj04\t1\t\tgood\ngj04\t2\t\tbad label\n")
    with pytest.raises(ValueError, match=r"dev.tsv:2: label '2'"):
        glue_tasks.get_processor("cola").get_dev_examples(str(tmp_path))
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\n")
    with pytest.raises(ValueError, match="no examples in the dev set"):
        glue_tasks.get_processor("sst-2").get_dev_examples(str(tmp_path))
    (tmp_path / "dev.tsv").write_bytes("sentence\tlabel\ncaf\xe9\t1\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"dev.tsv:2: invalid UTF-8"):
        glue_tasks.get_processor("sst-2").get_dev_examples(str(tmp_path))
