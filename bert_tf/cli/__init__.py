"""The commands: one module per command, each with the absl flags it reads and a `main`, installed by pip as
`bert-tf-<name with dashes>` (run_classifier.py -> bert-tf-run-classifier) and runnable as
`python -m bert_tf.cli.<name>`; a checkout keeps the original `python run_classifier.py ...` command lines
through thin wrappers at its root. The flag modules (model_flags, training_flags, finetuning_flags,
flag_checks) are shared by the commands; the library outside bert_tf/cli/ never reads flags.

TensorFlow's CPU kernels. Importing this package (every command does, before TensorFlow) sets
TF_ENABLE_ONEDNN_OPTS=1 on x86-64 unless the environment sets it: oneDNN's kernels also on the CPUs where
TensorFlow would run Eigen's (`bert_tf/cpu_kernels.py`).

TensorFlow's start-up lines. Importing this package also sets TF_CPP_MIN_LOG_LEVEL=1 unless the environment
sets it: TensorFlow's C++ INFO lines go (CPU instructions, XLA
compiling), its warnings and errors stay. TensorFlow 2.21 prints some lines before it reads that variable,
through a copy of absl's C++ logging that nobody initialises, so no variable reaches them ("WARNING: All log
messages before absl::InitializeLog() is called are written to STDERR", then "oneDNN custom operations are
on" and "Could not find cuda drivers", twice: two of its libraries log them), nor the error "failed call to
cuInit" that looking for a GPU prints on a machine without a CUDA driver. So the first `import tensorflow`
(and the device discovery that prints the cuInit line) runs with its stderr passed through a filter process,
`STARTUP_FILTER`, which drops exactly those: the lines below the level (INFO from 1, WARNING from 2) and the
cuInit error only after TensorFlow's own "Could not find cuda drivers" line. Every other line of that window
is passed on as it comes, a process that dies there included (the filter is a separate process), and after
it stderr is untouched. With TF_CPP_MIN_LOG_LEVEL=0 nothing is filtered. A GPU stays visible.

TensorFlow missing. The commands need TensorFlow (tf.data input, the tf.distribute training loop, SavedModel
export; tensorflow-text for the in-graph tokenizer), while the models run without it on Keras's JAX and PyTorch
backends. A command started where `tensorflow` or `tensorflow_text` cannot be imported ends with one line
(`missing_tensorflow_line`) and exit status 1 instead of a traceback (with BERT_TF_TRACEBACK=1, the traceback
too).
"""

import os
import subprocess
import sys

from bert_tf.cpu_kernels import prefer_onednn

LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
DEFAULT_LEVEL = "1"  # TensorFlow's C++ INFO lines off; warnings and errors on

# The filter program (`python -I -S -c STARTUP_FILTER LEVEL`): stdin to stdout, line by line, without the
# start-up lines that TensorFlow prints whatever TF_CPP_MIN_LOG_LEVEL says (module docstring).
STARTUP_FILTER = r"""
import re, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the command; this ends when its stderr does
level = int(sys.argv[1])
notice = b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
logged = re.compile(rb"([IWEF])[0-9]{4} [0-9:.]+ +[0-9]+ [\w.-]+:[0-9]+\] ")
no_driver = False
for line in sys.stdin.buffer:
    match = logged.match(line)
    severity = match.group(1) if match else None
    no_driver = no_driver or (severity == b"I" and b"Could not find cuda drivers" in line)
    dropped = (line.rstrip(b"\r\n") == notice or (severity == b"I" and level >= 1)
               or (severity == b"W" and level >= 2)
               or (severity == b"E" and no_driver and b"failed call to cuInit" in line))
    if not dropped:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
"""


def log_level():
    """TF_CPP_MIN_LOG_LEVEL as a number (0 when unset or not a number)."""
    try:
        return int(os.environ.get(LEVEL_VARIABLE, "0"))
    except ValueError:
        return 0


class _FilteredStderr:
    """`with _FilteredStderr(level):` file descriptor 2 goes through the STARTUP_FILTER process, which
    writes to the real stderr as lines come; on exit fd 2 is the real stderr again, the filter has written
    all it got. Filters nothing where it cannot start (no fd 2, no interpreter path)."""

    def __init__(self, level):
        self.level, self.saved, self.process = level, None, None

    def __enter__(self):
        if not sys.executable or os.name != "posix":
            return self
        try:
            saved = os.dup(2)
        except OSError:  # no stderr
            return self
        read, write = os.pipe()
        try:
            self.process = subprocess.Popen([sys.executable, "-I", "-S", "-c", STARTUP_FILTER, str(self.level)],
                                            stdin=read, stdout=saved, stderr=saved)
        except OSError:
            os.close(saved)
            return self
        finally:
            os.close(read)
            if self.process is None:
                os.close(write)
        self.saved = saved
        _flush_stderr()
        os.dup2(write, 2)
        os.close(write)
        return self

    def __exit__(self, *exc_info):
        if self.saved is None:
            return
        _flush_stderr()
        os.dup2(self.saved, 2)  # closes the last write end of the pipe: the filter reads to its end and exits
        os.close(self.saved)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a process started meanwhile holds the pipe: the filter goes on
            pass


def _flush_stderr():
    if sys.stderr is not None:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


class _FilteredLoader:
    """The loader of the `tensorflow` package, run inside _FilteredStderr, with the device discovery
    (tf.config.list_physical_devices, which changes nothing: devices can still be configured after it)."""

    def __init__(self, loader, level):
        self.loader, self.level = loader, level

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        for finder in [f for f in sys.meta_path if isinstance(f, _QuietTensorFlowImport)]:
            sys.meta_path.remove(finder)  # once: a later import (after a failed one) is TensorFlow's own
        with _FilteredStderr(self.level):
            self.loader.exec_module(module)
            try:
                module.config.list_physical_devices()
            except Exception:  # the command's own first use of the devices raises it again, with its context
                pass

    def __getattr__(self, name):  # get_resource_reader, get_filename, is_package, ...
        return getattr(self.loader, name)


class _QuietTensorFlowImport:
    """A sys.meta_path finder that finds `tensorflow` as the other finders do and gives it _FilteredLoader."""

    def __init__(self, level):
        self.level = level

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        for finder in sys.meta_path:
            spec = (finder.find_spec(name, path, target)
                    if finder is not self and hasattr(finder, "find_spec") else None)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _FilteredLoader(spec.loader, self.level)
                return spec
        return None


def quiet_tensorflow_start():
    """Sets TF_CPP_MIN_LOG_LEVEL to DEFAULT_LEVEL unless it is set, and, unless it is 0 or TensorFlow is
    already imported, filters the start-up lines of the first `import tensorflow` (module docstring)."""
    os.environ.setdefault(LEVEL_VARIABLE, DEFAULT_LEVEL)
    level = log_level()
    if level >= 1 and "tensorflow" not in sys.modules and not any(
            isinstance(finder, _QuietTensorFlowImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _QuietTensorFlowImport(level))


TENSORFLOW_PACKAGES = {"tensorflow": "tensorflow", "tensorflow_text": "tensorflow-text"}  # module -> pip name


def missing_tensorflow_line(module):
    """The one line a command prints when `module` (a key of TENSORFLOW_PACKAGES) cannot be imported."""
    return (f"Error: {os.path.basename(sys.argv[0]) or 'this command'} needs {TENSORFLOW_PACKAGES[module]}, which "
            "this Python does not have: pip install tensorflow tensorflow-text (Keras's TensorFlow backend, the "
            "SavedModel and LiteRT export, the in-graph tokenizer, TFDS); every other command runs without it on "
            "Keras's JAX backend: pip install \".[jax]\" in a checkout, KERAS_BACKEND=jax (README, Backends)")


def report_missing_tensorflow():
    """Makes an uncaught ModuleNotFoundError of TensorFlow end the program with `missing_tensorflow_line`
    (and the traceback only with BERT_TF_TRACEBACK=1); every other exception goes to the previous hook."""
    previous = sys.excepthook

    def hook(kind, error, traceback):
        if not (isinstance(error, ModuleNotFoundError) and error.name in TENSORFLOW_PACKAGES):
            previous(kind, error, traceback)
            return
        from bert_tf.cli.scripting import TRACEBACK_VARIABLE
        if os.environ.get(TRACEBACK_VARIABLE) == "1":
            previous(kind, error, traceback)
        sys.stderr.write(missing_tensorflow_line(error.name) + "\n")

    sys.excepthook = hook


prefer_onednn()
quiet_tensorflow_start()
report_missing_tensorflow()
