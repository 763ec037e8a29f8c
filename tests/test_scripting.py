"""scripting.run: the errors of bad input, files, disks and TensorFlow end a script with one `Error:` line
(exit 1), with the traceback on request; a bug keeps its traceback; a run that ends well logs a summary."""

import os
import re
import signal
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


EXIT_SCRIPT = """
import atexit
import sys
from bert_tf.cli import scripting

def main(argv):
    atexit.register(lambda: open(argv[1], "w").write("atexit ran"))
    sys.stdout.write("unflushed output")  # no newline, no flush: a buffered pipe until the exit
    return int(argv[2])

scripting.run(main)
"""


@pytest.mark.parametrize("status", [0, 3])
def test_a_run_that_ends_well_exits_at_once_with_its_status_its_output_and_its_atexit_handlers(tmp_path, status):
    """_exit_now skips the interpreter's teardown, not the atexit handlers, buffered output or main's status."""
    marker = tmp_path / "marker"
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout a buffered pipe
    done = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, str(marker), str(status)], capture_output=True,
                          text=True, cwd=ROOT, env=buffered)
    assert done.returncode == status, done.stderr
    assert done.stdout == "unflushed output" and "Done in" in done.stderr.splitlines()[-1], done.stderr
    assert marker.read_text() == "atexit ran"


def test_help_exits_0_and_a_bad_flag_1(tmp_path):
    """absl's help flags exit with status 1; a command asked for its help exits with 0 (a flag error stays 1)."""
    for help_flag in ("--help", "-?", "--helpshort", "--helpfull"):
        done = subprocess.run([sys.executable, "-c", SUMMARY_SCRIPT, help_flag], capture_output=True, text=True,
                              cwd=ROOT)
        assert done.returncode == 0 and "--output_dir" in done.stdout, (help_flag, done.returncode, done.stderr)
    done = subprocess.run([sys.executable, "-c", SUMMARY_SCRIPT, "--no_such_flag=1", "--help"], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 0  # absl shows the help as soon as it meets --help: the user gets what they asked
    done = subprocess.run([sys.executable, "-c", SUMMARY_SCRIPT, f"--output_dir={tmp_path}", "--no_such_flag=1"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and "FATAL Flags parsing error" in done.stderr


# What TensorFlow 2.21 writes to stderr before TF_CPP_MIN_LOG_LEVEL applies (recorded on a CPU machine), and
# lines of the same window that must pass: other errors, a fatal check, a warning, Python's output.
STARTUP_LINES = """\
WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
I0000 00:00:1796439267.034174   30658 port.cc:153] oneDNN custom operations are on. You may see slightly different \
numerical results due to floating-point round-off errors from different computation orders. To turn them off, set \
the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.
I0000 00:00:1796439267.034454   30658 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not \
be used.
E0000 00:00:1796439280.077629   31187 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call \
to cuInit: UNKNOWN ERROR (303)
"""
KEPT_LINES = """\
W0000 00:00:1796439280.1   31187 op_kernel.cc:1857] OP_REQUIRES failed at save_restore_v2_ops.cc:109 : \
NOT_FOUND: /x; No such file or directory
E0000 00:00:1796439280.2   31187 cuda_dnn.cc:8579] Unable to register cuDNN factory
F0000 00:00:1796439280.3   31187 session.cc:12] Check failed: ok
Traceback (most recent call last):
  File "<string>", line 1, in <module>
"""
TF_LINE = re.compile(r"^([IWEF][0-9]{4} [0-9:.]+ +[0-9]+ [\w.-]+:[0-9]+\] |WARNING: All log messages before absl)")


def filtered(text, level):
    from bert_tf import cli

    return subprocess.run([sys.executable, "-I", "-S", "-c", cli.STARTUP_FILTER, str(level)], input=text,
                          capture_output=True, text=True, check=True).stdout


def test_the_startup_filter_drops_only_tensorflows_startup_lines():
    assert filtered(STARTUP_LINES + KEPT_LINES, 1) == KEPT_LINES
    assert filtered(STARTUP_LINES + KEPT_LINES, 2) == KEPT_LINES.split("\n", 1)[1]  # level 2: no warnings
    cuinit = STARTUP_LINES.splitlines(keepends=True)[3]
    assert filtered(cuinit, 1) == cuinit  # a driver that is there and fails is a real error


def test_a_command_starts_without_tensorflows_startup_lines():
    """A command that imports TensorFlow (convert_checkpoint) prints no line of TensorFlow's C++ logging before
    its help; TF_CPP_MIN_LOG_LEVEL is 1 unless the user set it, and a user's 0 shows every line."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-m", "bert_tf.cli.convert_checkpoint", "--help"], capture_output=True,
                          text=True, cwd=ROOT, env=env)
    assert done.returncode == 0 and "--init_checkpoint" in done.stdout, done.stderr[-2000:]
    assert not [line for line in done.stderr.splitlines() if TF_LINE.match(line)], done.stderr
    show = "import os, bert_tf.cli; print(os.environ['TF_CPP_MIN_LOG_LEVEL'])"
    done = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True, cwd=ROOT, env=env)
    assert done.stdout == "1\n", done.stderr
    done = subprocess.run([sys.executable, "-c", show + "; import tensorflow"], capture_output=True, text=True,
                          cwd=ROOT, env={**env, "TF_CPP_MIN_LOG_LEVEL": "0"})
    assert done.stdout == "0\n" and "port.cc" in done.stderr  # oneDNN's start-up line, on x86 CPUs


def test_what_dies_while_tensorflow_starts_is_still_shown(tmp_path):
    """The filter is a process of its own: the last words of a process that aborts inside the filtered window
    (a stand-in `tensorflow` package that logs and aborts) reach stderr, without the start-up lines."""
    package = tmp_path / "tensorflow"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import os\n"
        f"os.write(2, {(STARTUP_LINES + KEPT_LINES).encode()!r})\n"
        "os.abort()\n")
    done = subprocess.run([sys.executable, "-c", "import bert_tf.cli, tensorflow"], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": f"{tmp_path}:{ROOT}", "TF_CPP_MIN_LOG_LEVEL": "1"})
    assert done.returncode == -signal.SIGABRT and done.stderr == KEPT_LINES, done.stderr


def test_library_parameters_are_written_as_the_commands_flags():
    """The library names its parameters as Python does; a command's error line names them as its flags (one
    translation table, `scripting.FLAG_OF_PARAMETER`), and leaves paths, file names, `code` and words alone."""
    from bert_tf.cli.scripting import as_flags

    names = {"max_seq_length", "vocab_file", "output_dir", "init_checkpoint", "layers", "export_dtype", "do_train"}
    cases = {
        "max_seq_length=600 must be between 2 and max_position_embeddings=512":
            "--max_seq_length=600 must be between 2 and max_position_embeddings=512",
        "output_dir=/tmp/output_dir/a is the folder of init_checkpoint=/x; choose another output_dir":
            "--output_dir=/tmp/output_dir/a is the folder of --init_checkpoint=/x; choose another --output_dir",
        "needs vocab_file; /data/vocab_file.txt is missing": "needs --vocab_file; /data/vocab_file.txt is missing",
        "layers='x': integers; the layers of the model": "--layers='x': integers; the layers of the model",
        "dtype='int4': expected float32": "--export_dtype='int4': expected float32",
        "At least one of `do_train` or `do_eval` must be True": "At least one of `do_train` or `do_eval` must be True",
        "--vocab_file is required": "--vocab_file is required",
    }
    for message, expected in cases.items():
        assert as_flags(message, names) == expected
