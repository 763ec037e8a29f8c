"""scripting.run: the errors of bad input, files, disks and TensorFlow end a script with one `Error:` line
(exit 1), with the traceback on request; a bug keeps its traceback; a run that ends well logs a summary;
output paths that are not local folders are refused before anything is created; --log_dir writes a log file."""

import os
import platform
import re
import signal
import subprocess
import sys

import pytest

from bert_tf import cpu_kernels
from tests.helpers.tiers import first_in_make_test

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
@pytest.mark.subprocess
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


@pytest.mark.subprocess
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


@pytest.mark.subprocess
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


@pytest.mark.subprocess
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


@pytest.mark.subprocess
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


@pytest.mark.subprocess
def test_the_startup_filter_drops_only_tensorflows_startup_lines():
    assert filtered(STARTUP_LINES + KEPT_LINES, 1) == KEPT_LINES
    assert filtered(STARTUP_LINES + KEPT_LINES, 2) == KEPT_LINES.split("\n", 1)[1]  # level 2: no warnings
    cuinit = STARTUP_LINES.splitlines(keepends=True)[3]
    assert filtered(cuinit, 1) == cuinit  # a driver that is there and fails is a real error


@pytest.mark.subprocess
def test_a_command_starts_without_tensorflows_startup_lines():
    """A command that imports TensorFlow (convert_checkpoint) prints no line of TensorFlow's C++ logging before
    its help; TF_CPP_MIN_LOG_LEVEL is 1 unless the user set it, and a user's 0 shows every line. On x86-64 the
    command's TensorFlow runs oneDNN's kernels (TF_ENABLE_ONEDNN_OPTS=1 unless the user set it: TensorFlow then
    logs that they are on, which it does not on the x86 CPUs it leaves on Eigen's); a user's 0 stays."""
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS")}
    done = subprocess.run([sys.executable, "-m", "bert_tf.cli.convert_checkpoint", "--help"], capture_output=True,
                          text=True, cwd=ROOT, env=env)
    assert done.returncode == 0 and "--init_checkpoint" in done.stdout, done.stderr[-2000:]
    assert not [line for line in done.stderr.splitlines() if TF_LINE.match(line)], done.stderr
    show = "import os, bert_tf.cli; print(os.environ['TF_CPP_MIN_LOG_LEVEL'], os.environ.get('TF_ENABLE_ONEDNN_OPTS'))"
    x86 = platform.machine().lower() in cpu_kernels.X86_64
    done = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True, cwd=ROOT,
                          env={**env, "TF_ENABLE_ONEDNN_OPTS": "0"})
    assert done.stdout == "1 0\n", done.stderr
    done = subprocess.run([sys.executable, "-c", show + "; import tensorflow"], capture_output=True, text=True,
                          cwd=ROOT, env={**env, "TF_CPP_MIN_LOG_LEVEL": "0"})
    shown = [line for line in done.stderr.splitlines() if TF_LINE.match(line)]  # which lines: the CPU's and
    assert done.stdout == f"0 {1 if x86 else None}\n" and shown, done.stderr  # the drivers' (cudart's)
    if x86:
        assert any("oneDNN custom operations are on" in line for line in shown), shown


@pytest.mark.subprocess
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


def test_output_paths_must_be_local_and_not_under_a_symbolic_link_to_nothing(tmp_path):
    """`check_output_paths`, which scripting.run applies to the output flags before anything is created."""
    from bert_tf.cli.scripting import check_output_paths

    for name, value in [("output_dir", "gs://bucket/run"), ("export_dir", "s3://bucket/model"),
                        ("output_file", "part-0.tfrecord,hdfs://node/part-1.tfrecord")]:
        with pytest.raises(ValueError, match=rf"^--{name}={re.escape(value)}: output files and folders must be "
                                             "local paths .*gcsfuse"):
            check_output_paths({name: value})
    link, missing = tmp_path / "out", tmp_path / "missing"
    link.symlink_to(missing)
    with pytest.raises(ValueError, match=rf"^--output_dir={re.escape(str(link))} is a symbolic link to "
                                         rf"{re.escape(str(missing))}, which does not exist$"):
        check_output_paths({"output_dir": str(link)})
    with pytest.raises(ValueError, match=rf"^--export_dir={re.escape(str(link))}/run: {re.escape(str(link))} is a "
                                         rf"symbolic link to {re.escape(str(missing))}, which does not exist$"):
        check_output_paths({"export_dir": f"{link}/run"})
    (tmp_path / "folder").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "folder")
    check_output_paths({"output_dir": str(tmp_path / "linked" / "new"), "output_file": str(tmp_path / "x.txt")})


@pytest.mark.subprocess
@pytest.mark.parametrize("output_dir, line", [
    ("gs://bucket/run", "Error: --output_dir=gs://bucket/run: output files and folders must be local paths"),
    ("out", "Error: --output_dir=out is a symbolic link to missing, which does not exist"),
], ids=["gs", "dangling symlink"])
def test_a_run_on_an_output_dir_it_cannot_use_stops_before_creating_anything(tmp_path, output_dir, line):
    """A gs:// --output_dir used to make a folder `gs:` in the working directory and fill it; a symbolic link
    to nothing stopped with makedirs' "File exists"."""
    if output_dir == "out":
        (tmp_path / "out").symlink_to("missing")
    done = subprocess.run([sys.executable, "-c", SUMMARY_SCRIPT, f"--output_dir={output_dir}"], capture_output=True,
                          text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": ROOT})
    errors = [x for x in done.stderr.splitlines() if x.startswith("Error:")]
    assert done.returncode == 1 and len(errors) == 1 and errors[0].startswith(line), done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(os.listdir(tmp_path)) == ([] if output_dir.startswith("gs:") else ["out"])


@pytest.mark.subprocess
def test_a_stdout_that_cannot_be_written_ends_a_run_with_one_error_line(tmp_path):
    """_exit_now's flush of a full stdout (/dev/full) used to raise: a traceback and exit status 120."""
    marker = tmp_path / "marker"
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, str(marker), "0"], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT, env=buffered)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == ("Error: cannot write the standard output: [Errno 28] No space left on "
                                            "device"), done.stderr
    assert marker.read_text() == "atexit ran"


def test_exit_now_reports_a_closed_stdout_and_exits_1(monkeypatch, tmp_path):
    """In-process: a closed stdout (ValueError on flush) gives one line on stderr and exit status 1."""
    import atexit
    import io

    from bert_tf.cli import scripting

    class Exited(Exception):
        pass

    def exit_now(status):
        raise Exited(status)

    closed, stderr = open(tmp_path / "stdout", "w"), io.StringIO()
    closed.close()
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: None)  # not this test process's own handlers
    monkeypatch.setattr(os, "_exit", exit_now)
    monkeypatch.setattr(sys, "stdout", closed)
    monkeypatch.setattr(sys, "stderr", stderr)
    with pytest.raises(Exited) as exited:
        scripting._exit_now(None)
    assert exited.value.args == (1,)
    assert stderr.getvalue() == "Error: cannot write the standard output: I/O operation on closed file.\n"


@pytest.mark.subprocess
def test_log_dir_writes_the_log_to_a_file_as_well(tmp_path):
    """absl's --log_dir used to write no file. The log still goes to stderr too; a missing folder is refused."""
    logs = tmp_path / "logs"
    logs.mkdir()
    done = subprocess.run([sys.executable, "-c", SUMMARY_SCRIPT, f"--output_dir={tmp_path}/out", f"--log_dir={logs}"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and "] Done in" in done.stderr.splitlines()[-1], done.stderr
    files = [path for path in logs.iterdir() if not path.is_symlink()]
    assert len(files) == 1 and ".INFO." in files[0].name, sorted(logs.iterdir())
    assert "] Done in" in files[0].read_text().splitlines()[-1]
    done = subprocess.run([sys.executable, "-c", SUMMARY_SCRIPT, f"--output_dir={tmp_path}/out2",
                           f"--log_dir={tmp_path}/missing"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and done.stderr.splitlines()[-1] == (
        f"Error: --log_dir={tmp_path}/missing: expected an existing writable folder"), done.stderr
    assert not (tmp_path / "out2").exists()
