"""scripting.run: the errors of bad input, files, disks and TensorFlow end a script with one `Error:` line
(exit 1), with the traceback on request; a bug keeps its traceback."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = """
import sys
import tensorflow as tf
from bert_tf.cli import scripting

def main(_):
    kind = sys.argv[1]
    if kind == "tensorflow":
        raise tf.errors.DataLossError(None, None, "corrupted record at 12\\nsecond line of the message")
    if kind == "disk":
        raise OSError(28, "cannot write /out/x: No space left on device")
    raise KeyError("a bug")

scripting.run(main)
"""


def run(kind, **env):
    result = subprocess.run([sys.executable, "-c", SCRIPT, kind], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env})
    return result.returncode, result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("kind, line", [
    ("tensorflow", "Error: TensorFlow DataLossError: corrupted record at 12"),
    ("disk", "Error: [Errno 28] cannot write /out/x: No space left on device"),
])
def test_one_error_line(kind, line):
    code, stderr = run(kind)
    assert code == 1 and "Traceback" not in stderr, stderr
    assert [x for x in stderr.splitlines() if x.startswith("Error:")] == [line], stderr
    code, stderr = run(kind, BERT_TF_TRACEBACK="1")
    assert code == 1 and "Traceback" in stderr, stderr


def test_a_bug_keeps_its_traceback():
    code, stderr = run("bug")
    assert code == 1 and "Traceback" in stderr and "KeyError: 'a bug'" in stderr
    assert not [x for x in stderr.splitlines() if x.startswith("Error:")]
