"""scripting.run: the errors of bad input, files, disks and TensorFlow end a script with one `Error:` line
(exit 1), with the traceback on request; a bug keeps its traceback; a run that ends well logs a summary."""

import os
import subprocess
import sys

import pytest

from tests.helpers.tiers import first_in_make_test

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
@pytest.mark.parametrize("kind, line", first_in_make_test([
    ("tensorflow", "Error: TensorFlow DataLossError: corrupted record at 12"),
    ("disk", "Error: [Errno 28] cannot write /out/x: No space left on device"),
], 1))
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


SUMMARY_SCRIPT = """
import os
from absl import flags
from bert_tf.cli import scripting

flags.DEFINE_string("output_dir", None, "")
flags.DEFINE_string("best_metric", None, "")

def main(argv):
    out = flags.FLAGS.output_dir
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "eval_results.txt"), "w") as f:
        f.write("eval_accuracy = 0.84257\\neval_f1 = 0.5\\neval_loss = 0.41\\nglobal_step = 343\\n")
    if argv[1:] == ["fail"]:
        raise ValueError("bad data")

scripting.run(main)
"""


def test_summary_names_what_the_run_wrote_and_its_headline_metrics(tmp_path):
    """A run that ends well logs one last line: wall time, the output entries it wrote, eval results' headline
    metrics (--best_metric first); an output folder that was already there keeps its older entries unnamed."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.txt").write_text("from an earlier run")
    os.utime(tmp_path / "out" / "old.txt", (0, 0))
    done = subprocess.run([sys.executable, "-c", SUMMARY_SCRIPT, f"--output_dir={tmp_path}/out",
                           "--best_metric=eval_loss"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.endswith(f"] Done in 0:00:00. Wrote {tmp_path}/out/: eval_results.txt | eval_loss = 0.4100 | "
                         "eval_f1 = 0.5000 | eval_accuracy = 0.8426"), last

    done = subprocess.run([sys.executable, "-c", SUMMARY_SCRIPT, f"--output_dir={tmp_path}/new", "fail"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and "Done in" not in done.stderr and "Error: bad data" in done.stderr
    assert (tmp_path / "new" / "eval_results.txt").exists()  # a folder with a file in it stays
