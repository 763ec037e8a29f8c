"""prepare_corpus.py and the sentence splitter, on real State of the Union speeches and ChatterBot Chinese."""

import glob
import json
import os
import subprocess
import sys

import pytest

from bert_tf.data.pretraining.corpus import CorpusReader, expand_input_patterns, prepare_corpus
from bert_tf.data.pretraining.sentences import split_sentences
from tests.helpers.sotu_speeches import SPEECHES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("text,sentences", [
    ("Mr. Smith met Gen. Grant in Jan. 1865. The war ended.", ["Mr. Smith met Gen. Grant in Jan. 1865.",
                                                               "The war ended."]),
    ("The U.S. Army grew 3.5 percent. We paid $1.2 billion.", ["The U.S. Army grew 3.5 percent.",
                                                               "We paid $1.2 billion."]),
    ("See No. 5 and Fig. 3. Then stop. I said no. Then he left.",
     ["See No. 5 and Fig. 3.", "Then stop.", "I said no.", "Then he left."]),
    ("J. Q. Adams spoke. So did I. He was brief!", ["J. Q. Adams spoke.", "So did I.", "He was brief!"]),
    ('He said "Stop." Then he left. "Why?" she asked. Wait... what?! Yes.',
     ['He said "Stop."', "Then he left.", '"Why?" she asked.', "Wait... what?!", "Yes."]),
    ("Prices rose (sharply.) Next year, e.g. in May, they fell.", ["Prices rose (sharply.)",
                                                                   "Next year, e.g. in May, they fell."]),
    ("谁发明了电灯泡? 托马斯·爱迪生。我喜欢历史！你呢？",
     ["谁发明了电灯泡?", "托马斯·爱迪生。", "我喜欢历史！", "你呢？"]),
    ("「你好。」他说。你好!我很好", ["「你好。」", "他说。", "你好!", "我很好"]),
    ("  no  end   ", ["no end"]),
])
def test_sentence_splitter(text, sentences):
    assert split_sentences(text) == sentences


def test_prepares_speeches_as_one_document_per_file(tmp_path):
    output = str(tmp_path / "corpus.txt")
    documents, sentences, reader = prepare_corpus(SPEECHES[:20], output)
    assert documents == 20 and reader.bytes_read == sum(os.path.getsize(p) for p in SPEECHES[:20])
    text = open(output, encoding="utf-8").read()
    assert text.endswith("\n\n") and "\n\n\n" not in text
    parsed = list(CorpusReader().documents([output]))
    assert len(parsed) == 20 and sum(len(d.lines) for d in parsed) == sentences
    lines = [line for d in parsed for line in d.lines]
    assert sentences > 20 * 50 and sum(map(len, lines)) / len(lines) < 250  # sentences, not paragraphs
    assert not [line for line in lines if line.endswith((" Mr.", " Gen.", " St.", " U.S."))]
    first = open(SPEECHES[0], encoding="utf-8").read()
    assert " ".join(parsed[0].lines) == " ".join(first.split())  # nothing lost or reordered


def test_jsonl_input_gives_the_same_sentences(tmp_path):
    with open(tmp_path / "docs.jsonl", "w", encoding="utf-8") as f:
        for path in SPEECHES[:3]:
            paragraphs = [p for p in open(path, encoding="utf-8").read().split("\n\n") if p.strip()]
            f.write(json.dumps({"id": path, "text": "\n".join(" ".join(p.split()) for p in paragraphs)}) + "\n\n")
    prepare_corpus([str(tmp_path / "docs.jsonl")], str(tmp_path / "from_json.txt"), input_format="jsonl")
    prepare_corpus(SPEECHES[:3], str(tmp_path / "from_text.txt"))
    assert (tmp_path / "from_json.txt").read_text(encoding="utf-8") == (tmp_path / "from_text.txt").read_text(
        encoding="utf-8")


def test_bad_input_names_file_and_line(tmp_path):
    (tmp_path / "bad.txt").write_bytes(b"Fine line.\nBroken \xe2\x82 line.\n\nNext paragraph.\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2: invalid UTF-8"):
        prepare_corpus([str(tmp_path / "bad.txt")], str(tmp_path / "out.txt"))
    assert sorted(os.listdir(tmp_path)) == ["bad.txt"]  # no output, no temporary left
    _, sentences, reader = prepare_corpus([str(tmp_path / "bad.txt")], str(tmp_path / "out.txt"),
                                          invalid_utf8="skip")
    assert reader.skipped_lines == 1 and sentences == 2
    (tmp_path / "bad.jsonl").write_text('{"text": "ok"}\n{"body": "no text"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: expected a JSON object with a string field 'text'"):
        prepare_corpus([str(tmp_path / "bad.jsonl")], str(tmp_path / "out2.txt"), input_format="jsonl")
    (tmp_path / "broken.jsonl").write_text('{"text": "ok"}\n{"text": \n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.jsonl:2: not valid JSON"):
        prepare_corpus([str(tmp_path / "broken.jsonl")], str(tmp_path / "out3.txt"), input_format="jsonl")
    with pytest.raises(ValueError, match="matches no file"):
        expand_input_patterns(f"{SPEECHES[0]},{tmp_path}/none*.txt")


@pytest.mark.subprocess
def test_script_writes_the_pretraining_input(tmp_path):
    pattern = os.path.join(os.path.dirname(SPEECHES[0]), "179*.txt")
    result = subprocess.run([sys.executable, os.path.join(ROOT, "prepare_corpus.py"), f"--input_file={pattern}",
                             f"--output_file={tmp_path}/corpus.txt"], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr
    assert f"Wrote {len(glob.glob(pattern))} documents" in result.stderr
    assert len(list(CorpusReader().documents([str(tmp_path / "corpus.txt")]))) == len(glob.glob(pattern))
