"""atomic_io on a real file system: a 1 MiB tmpfs that fills up (needs root to mount; skipped otherwise),
and the project's writers that go through it (the previous file intact, nothing left, the path and the
disk's error in one OSError)."""

import contextlib
import errno
import json
import os
import pathlib
import subprocess
import sys

import pytest

from bert_tf import BertConfig, atomic_io
from bert_tf.data.squad import records as squad_records
from bert_tf.extraction import write_features
from tests.helpers import small_disk as small_disk_module

NO_SPACE = os.strerror(errno.ENOSPC)  # 'No space left on device'


@pytest.fixture
def small_disk(tmp_path):
    """A folder on a freshly mounted 1 MiB tmpfs, unmounted after the test whatever its outcome."""
    with small_disk_module.mounted(tmp_path / "disk", "1m") as disk:
        yield pathlib.Path(disk)


def _fill(disk):
    """Takes every free byte of `disk` with a file named `filler`."""
    with open(disk / "filler", "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 65536)


def _dead_pid():
    """The id of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", ""])
    process.wait()
    return process.pid


@pytest.mark.subprocess
@pytest.mark.parametrize("content", ["x" * 2_000_000, b"x" * 2_000_000], ids=["text", "bytes"])
def test_full_disk_names_the_path_keeps_the_previous_file_and_leaves_nothing(small_disk, content):
    target = small_disk / "out.txt"
    atomic_io.write_file(target, "previous\n")
    with pytest.raises(OSError, match=f"{target}: {NO_SPACE}"):
        atomic_io.write_file(target, content)
    assert target.read_text() == "previous\n"
    assert os.listdir(small_disk) == ["out.txt"]


def test_an_error_of_another_file_in_the_block_is_left_as_it_is(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(FileNotFoundError) as raised, atomic_io.atomic_write(target) as f:
        f.write("partial")
        open(tmp_path / "missing.txt", encoding="utf-8")
    assert raised.value.filename == str(tmp_path / "missing.txt")
    assert os.listdir(tmp_path) == []


@pytest.mark.subprocess
def test_write_all_raises_naming_the_path_on_a_full_disk(small_disk):
    with open(small_disk / "raw", "wb", buffering=0) as f, pytest.raises(OSError, match=f"raw: {NO_SPACE}"):
        atomic_io.write_all(f, b"x" * 2_000_000, str(small_disk / "raw"))


class _ShortWrites:
    """A file whose write takes at most `limit` bytes at a time (none at all with limit=0)."""

    def __init__(self, limit):
        self.limit, self.data = limit, b""

    def write(self, view):
        taken = bytes(view[:self.limit])
        self.data += taken
        return len(taken)


def test_write_all_loops_over_short_writes_and_raises_when_nothing_is_taken():
    file = _ShortWrites(3)
    atomic_io.write_all(file, b"0123456789", "p")
    assert file.data == b"0123456789"
    with pytest.raises(OSError, match="cannot write p: the file system accepted no more bytes") as raised:
        atomic_io.write_all(_ShortWrites(0), b"0123", "p")
    assert raised.value.errno == errno.ENOSPC


def _folder(path, **files):
    path.mkdir()
    for name, text in files.items():
        (path / name).write_text(text)
    return path


def _contents(path):
    return {name: (path / name).read_text() for name in os.listdir(path)}


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "fallback"])
def test_swap_directory_replaces_the_folder(tmp_path, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(atomic_io, "_exchange", lambda a, b: False)
        _folder(tmp_path / "best.previous", stale="0")  # of an earlier interrupted swap: replaced, then removed
    final = _folder(tmp_path / "best", old="1")
    atomic_io.swap_directory(str(_folder(tmp_path / "staging", new="2")), str(final))
    assert _contents(final) == {"new": "2"} and sorted(os.listdir(tmp_path)) == ["best"]
    atomic_io.swap_directory(str(_folder(tmp_path / "staging", newer="3")), str(tmp_path / "first"))
    assert _contents(tmp_path / "first") == {"newer": "3"} and sorted(os.listdir(tmp_path)) == ["best", "first"]


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "fallback"])
def test_swap_directory_replaces_a_link_not_the_folder_it_names(tmp_path, monkeypatch, exchange):
    """A best/ that is a symbolic link to a user's folder: the exchange left the link where the staging folder
    was, and rmtree refused it ("Cannot call rmtree on a symbolic link"), failing the run."""
    if not exchange:
        monkeypatch.setattr(atomic_io, "_exchange", lambda a, b: False)
    elsewhere = _folder(tmp_path / "elsewhere", mine="1")
    (tmp_path / "run").mkdir()
    os.symlink(elsewhere, tmp_path / "run" / "best")
    atomic_io.swap_directory(str(_folder(tmp_path / "run" / "staging", new="2")), str(tmp_path / "run" / "best"))
    assert not os.path.islink(tmp_path / "run" / "best") and _contents(tmp_path / "run" / "best") == {"new": "2"}
    assert os.listdir(tmp_path / "run") == ["best"] and _contents(elsewhere) == {"mine": "1"}


def test_restore_directory_puts_the_previous_folder_back_only_when_the_folder_is_missing(tmp_path):
    final = str(tmp_path / "best")
    _folder(tmp_path / "best.previous", old="1")
    atomic_io.restore_directory(final)
    assert os.listdir(tmp_path) == ["best"] and _contents(tmp_path / "best") == {"old": "1"}
    _folder(tmp_path / "best.previous", older="0")
    atomic_io.restore_directory(final)
    assert os.listdir(tmp_path) == ["best"] and _contents(tmp_path / "best") == {"old": "1"}


def test_remove_leftovers_removes_temporaries_of_ended_processes_only(tmp_path):
    dead = _dead_pid()
    leftovers = [f"x.incomplete-{dead}", "model.ckpt-3.data-00000-of-00001.tempstate123",
                 f".write_test.incomplete-{dead}"]
    kept = [f"x.incomplete-{os.getpid()}", "model.ckpt-3.index", "checkpoint", "eval_results.txt"]
    for name in leftovers + kept:
        (tmp_path / name).write_text("x")
    _folder(tmp_path / "ckpt-5_temp", part="x")
    assert sorted(atomic_io.remove_leftovers(str(tmp_path))) == sorted(leftovers + ["ckpt-5_temp"])
    assert sorted(os.listdir(tmp_path)) == sorted(kept)


def test_new_directory_appears_complete_or_not_at_all(tmp_path):
    with atomic_io.new_directory(str(tmp_path / "out") + "/") as directory:  # a trailing slash names the same folder
        assert os.path.dirname(directory) == str(tmp_path) and not (tmp_path / "out").exists()
        atomic_io.write_file(os.path.join(directory, "a.txt"), "a")
    assert os.listdir(tmp_path / "out") == ["a.txt"]
    with pytest.raises(OSError, match="out exists and is not empty"):
        with atomic_io.new_directory(str(tmp_path / "out")):
            pass
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="half-way"):
        with atomic_io.new_directory(str(tmp_path / "empty")) as directory:
            atomic_io.write_file(os.path.join(directory, "b.txt"), "b")
            raise ValueError("half-way")
    assert sorted(os.listdir(tmp_path)) == ["empty", "out"] and os.listdir(tmp_path / "empty") == []


@pytest.mark.subprocess
def test_new_directory_on_a_full_disk_leaves_nothing(small_disk):
    _fill(small_disk)
    with pytest.raises(OSError, match=f"{small_disk / 'model'}: .*{NO_SPACE}"):
        with atomic_io.new_directory(str(small_disk / "model")) as directory:
            atomic_io.write_file(os.path.join(directory, "weights"), b"x" * 100_000)
    assert os.listdir(small_disk) == ["filler"]


@pytest.mark.subprocess
def test_config_file_on_a_full_disk(small_disk):
    path = small_disk / "bert_config.json"
    BertConfig(vocab_size=99).to_json_file(path)
    previous = path.read_text()
    _fill(small_disk)
    with pytest.raises(OSError, match=f"{path}: {NO_SPACE}"):
        BertConfig(vocab_size=100).to_json_file(path)
    assert path.read_text() == previous and sorted(os.listdir(small_disk)) == ["bert_config.json", "filler"]


class _Extractor:
    """Stands in for FeatureExtractor: one large JSON object per example (texts cut, not windowed)."""

    doc_stride = None

    def extract(self, examples):
        return [(e.unique_id, e.text_a) for e in examples]

    def to_json(self, unique_id, text):
        return {"linex_index": unique_id, "text": text * 10_000}


@pytest.mark.subprocess
def test_extracted_features_on_a_full_disk(small_disk, tmp_path):
    input_file = tmp_path / "input.txt"
    input_file.write_text("".join(f"sentence {i}\n" for i in range(100)))
    output = small_disk / "features.jsonl"
    output.write_text("previous\n")
    with pytest.raises(OSError, match=f"{output}: {NO_SPACE}"):
        write_features(_Extractor(), str(input_file), str(output), batch_size=8)
    assert output.read_text() == "previous\n" and os.listdir(small_disk) == ["features.jsonl"]


@pytest.mark.subprocess
def test_squad_record_cache_on_a_full_disk(small_disk, tmp_path, tokenizer):
    squad_file = tmp_path / "tiny.json"
    squad_file.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [
        {"context": "The cat sat on the mat.", "qas": [{"id": "q1", "question": "Where did the cat sit?",
                                                          "answers": [{"text": "the mat", "answer_start": 15}]}]}]}]}))
    _fill(small_disk)
    with pytest.raises(OSError, match=f"cannot write {small_disk}/tiny.predict.*.tf_record: .*{NO_SPACE}"):
        squad_records.prepare_squad(str(squad_file), tokenizer, str(small_disk), max_seq_length=32, doc_stride=16,
                                    max_query_length=8, is_training=False, version_2_with_negative=False)
    assert os.listdir(small_disk) == ["filler"]
