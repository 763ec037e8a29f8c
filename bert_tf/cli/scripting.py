"""What every command shares: one clear error line instead of a traceback for bad input and for the
failures of files and disks, no empty output folder left by a failed run, every key flag in `--help`."""

import atexit
import contextlib
import datetime
import json
import logging as std_logging
import os
import re
import shutil
import sys
import time

from absl import app, flags, logging

from bert_tf import atomic_io, run_lock

TRACEBACK_VARIABLE = "BERT_TF_TRACEBACK"  # set to 1 to see the traceback of a reported error


def _reported(error):
    """True for the errors that get one line: bad input, files and disks, TensorFlow's OpErrors."""
    tf = sys.modules.get("tensorflow")  # not imported here: scripts that never start TensorFlow don't pay for it
    return isinstance(error, (ValueError, OSError)) or (tf is not None and isinstance(error, tf.errors.OpError))


def error_line(error):
    """The one line that reports `error`: its message, TensorFlow's first line with the error's name; the
    library's parameter names in it written as this command's flags (`as_flags`)."""
    if hasattr(error, "message") and hasattr(error, "error_code"):  # a tf.errors.OpError
        lines = (error.message or "").strip().splitlines()
        return f"TensorFlow {type(error).__name__}: {lines[0] if lines else 'no message'}"
    return as_flags(" ".join(str(error).split("\n")).strip())


# The library's parameters that a command's flag of another name sets (the one translation table); every
# other parameter has its flag's name.
FLAG_OF_PARAMETER = {"dtype": "export_dtype"}
# A name as a word of its own: not part of a path, a file name, a longer name, `code` or an existing --flag.
_NAME = re.compile(r"(?<![\w\-/.`])([a-z][a-z0-9_]*)(?![\w/`]|\.\w)(=?)")


class _WarningsAsFlags(std_logging.Filter):
    """The library's warnings as a command's user reads them: `as_flags` of their text."""

    def filter(self, record):
        if record.levelno >= std_logging.WARNING:
            record.msg, record.args = as_flags(record.getMessage()), None
        return True


def as_flags(message, flag_names=None):
    """`message` (a library error, which names parameters as Python does: `max_seq_length=600`, "pass
    vocab_file") as a command's user reads it: each parameter that is a flag of this command (`flag_names`,
    default: every flag defined) written as the flag, `--max_seq_length=600`, "pass --vocab_file". A name
    without an underscore (`layers`, `quantize`) is taken for a flag only right before `=`, so plain words
    stay words."""
    names = set(flags.FLAGS) if flag_names is None else set(flag_names)

    def flag(match):
        name, equals = match.groups()
        flag_name = FLAG_OF_PARAMETER.get(name, name) if equals else name
        if flag_name in names and ("_" in name or equals):
            return f"--{flag_name}{equals}"
        return match.group(0)

    return _NAME.sub(flag, message)


def run(main, lock_output=True):
    """`absl.app.run(main)`, but a ValueError (bad flags or data), an OSError (missing or unwritable file,
    full disk) or a TensorFlow OpError (damaged or truncated file, failed write) ends the program with a
    single `Error: ...` line on stderr and exit status 1 (with BERT_TF_TRACEBACK=1 in the environment, the
    traceback is printed too); other exceptions keep their traceback (they are bugs). Whatever ends a run
    early (an error, Ctrl-C), the output folders it created and wrote nothing but set-up files into are
    removed (`_remove_if_unproductive`). A run that ends well logs its `summary` last and exits at once
    (`_exit_now`). The library's errors and warnings name its parameters; the command's user reads them as
    its flags (`as_flags`).

    Before anything is created, the output flags are checked (`check_output_paths`: local paths only, no
    output folder under a symbolic link to nothing). absl's --log_dir writes the log to a file in that
    folder (absl's `<program>.<host>.<user>.log.INFO.<time>.<pid>`, with a `<program>.INFO` link to the
    newest), and the log still goes to stderr unless --alsologtostderr or --stderrthreshold is given
    (absl's own rules then; --logtostderr writes no file).

    lock_output: the command holds the lock of its --output_dir / --export_dir for its whole run
    (`bert_tf.run_lock`: a second run on the same folder stops at once with one line naming the holder), and
    first removes the temporary files that killed runs left there (`atomic_io.remove_leftovers`); False
    only for a command whose output folder appears whole, by one rename (convert_checkpoint.py)."""

    def guarded(argv):
        logging.get_absl_handler().addFilter(_WarningsAsFlags())
        created, started = [], time.time()
        try:
            _log_to_file()
            check_output_paths({name: flags.FLAGS[name].value for name in OUTPUT_FLAGS
                                if name in flags.FLAGS and flags.FLAGS[name].value})
            created = _new_output_directories()
            with contextlib.ExitStack() as locks:
                for folder in _locked_folders() if lock_output else ():
                    locks.enter_context(run_lock.hold(folder, os.path.basename(sys.argv[0])))
                    atomic_io.remove_leftovers(folder)  # of killed runs: no other run writes here now
                status = main(argv)
            logging.info("%s", summary(started))
        except BaseException as e:
            _remove_if_unproductive(created)
            if not _reported(e) or os.environ.get(TRACEBACK_VARIABLE) == "1":
                raise
            logging.flush()
            sys.stderr.write(f"Error: {error_line(e)}\n")
            sys.exit(1)
        _exit_now(status)

    _show_key_flags_in_help(main)
    _help_exits_0()
    app.run(guarded)


def _exit_now(status):
    """Ends a command that ran well: the atexit handlers, every stream flushed, then the exit with `status`
    (main's return: None or an int), skipping the interpreter's teardown of TensorFlow's graphs and modules
    (about 1.2 s after a fine-tuning run), which has nothing left to save: every file the command wrote is
    complete, synced and closed by then. In an interactive session (a notebook's kernel, `python -i`)
    absl's SystemExit instead, which leaves the session running.

    A stdout that cannot be flushed (closed, a full disk, a reader that went away) means the command's
    output is incomplete: one `Error: cannot write the standard output: ...` line on stderr (when stderr can
    take it) and exit status 1, not a traceback. A stderr that cannot be flushed changes nothing: it is the
    log, and there is nowhere left to report it."""
    if "ipykernel" in sys.modules or hasattr(sys, "ps1") or sys.flags.interactive:
        sys.exit(status)
    atexit._run_exitfuncs()
    logging.flush()  # absl's handler ignores the errors of its stream
    status = 0 if status is None else int(status)
    try:
        sys.stdout.flush()
    except (OSError, ValueError) as e:  # ValueError: a closed file
        status = 1
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"Error: cannot write the standard output: {e}\n")
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(status)


HELP_FLAGS = ("help", "helpshort", "helpfull", "helpxml")


class _ExitsZero:
    """Mixin of absl's help flags: they print the help, then exit with status 1 (absl's "main did not run");
    a command asked for its help has done what it was asked, so here they exit with 0."""

    def parse(self, argument):
        try:
            super().parse(argument)
        except SystemExit as done:
            raise SystemExit(0 if done.code == 1 else done.code) from None


def _help_exits_0():
    """Replaces absl's --help, -?, --helpshort, --helpfull and --helpxml by the same flags exiting with 0."""
    app.define_help_flags()
    for name in HELP_FLAGS:
        flag = flags.FLAGS[name]
        if isinstance(flag, _ExitsZero):
            continue
        for registered in (name, flag.short_name):
            if registered:
                delattr(flags.FLAGS, registered)
        flags.DEFINE_flag(type(type(flag).__name__, (_ExitsZero, type(flag)), {})(), module_name=app.__name__)


def _show_key_flags_in_help(main):
    """absl's `--help` lists the key flags of the module named sys.argv[0] (the script run): for a console
    command or a checkout's wrapper script, that is not the module that defines them (bert_tf/cli/*.py), so
    its key flags are registered under sys.argv[0] too."""
    module = sys.modules[main.__module__]
    if module.__name__ != "__main__":
        for flag in flags.FLAGS.get_key_flags_for_module(module):
            flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)


OUTPUT_DIRECTORY_FLAGS = ("output_dir", "export_dir")  # the folders a command creates for its outputs
OUTPUT_FLAGS = OUTPUT_DIRECTORY_FLAGS + ("output_file",)
# The metrics a summary quotes from the eval results a run wrote, the first two present (besides --best_metric).
HEADLINE_METRICS = ("eval_f1", "eval_accuracy", "eval_pearson", "eval_mcc", "masked_lm_accuracy",
                    "next_sentence_accuracy", "exact_match", "exact", "f1")


# The kernel stamps a file's mtime with its coarse clock, up to one tick (1-10 ms) behind time.time(): an
# entry written in the first milliseconds of a run can carry an mtime just before `started`.
MTIME_SLACK_SECONDS = 0.05


def summary(started):
    """The last line of a run that ends well: its wall time, what it wrote (the entries of its output flags
    changed since `started`, a time.time()) and the headline metrics of the eval results it wrote, e.g.
    `Done in 0:05:12. Wrote out/: eval_results.txt, model.ckpt-343.index, ... | eval_accuracy = 0.8426`."""
    elapsed = datetime.timedelta(seconds=round(time.time() - started))
    written, results, since = [], {}, started - MTIME_SLACK_SECONDS
    for name in OUTPUT_FLAGS:
        path = flags.FLAGS[name].value if name in flags.FLAGS else None
        if not path or not os.path.exists(path):
            continue
        if not os.path.isdir(path):
            written += [path] if os.path.getmtime(path) >= since else []
            continue
        new = sorted(entry for entry in os.listdir(path) if os.path.getmtime(os.path.join(path, entry)) >= since)
        if new:
            written.append(f"{path.rstrip('/')}/: " + ", ".join(new[:6]) + (", ..." if len(new) > 6 else ""))
        results.update(_results(path, new))
    line = f"Done in {elapsed}." + (f" Wrote {'; '.join(written)}" if written else "")
    best = flags.FLAGS["best_metric"].value if "best_metric" in flags.FLAGS else None
    quoted = ([best] if best in results else []) + [k for k in HEADLINE_METRICS if k in results and k != best][:2]
    return line + "".join(f" | {key} = {results[key]:.4f}" for key in quoted)


def _results(directory, new_entries):
    """{metric: float} of the eval_results.txt (`key = value` lines) or eval_results.json among `new_entries`."""
    from bert_tf import run_directory  # TensorFlow: not imported by the commands that never start it

    results = {}
    if run_directory.RESULTS_FILE in new_entries:
        results.update(run_directory.read_results(directory))
    if "eval_results.json" in new_entries:
        with open(os.path.join(directory, "eval_results.json"), encoding="utf-8") as f:
            results.update({k: v for k, v in json.load(f).items() if isinstance(v, (int, float))})
    return results


# A path that names a scheme (gs://, s3://, hdfs://, file://), first or after a comma (create_pretraining_data's
# list of output files).
_URL = re.compile(r"(?:^|,)\s*[A-Za-z][A-Za-z0-9+.-]*://")


def check_output_paths(values):
    """ValueError naming the flag and its value for an output path that a command cannot use as given:
    a `scheme://` path (the commands write with Python's file functions, which would make a local folder
    `gs:`, and the run's lock is a local flock), or an output folder (OUTPUT_DIRECTORY_FLAGS) that is, or
    lies under, a symbolic link to nothing (makedirs would say only "File exists").

    values: {flag name: value} of the command's output flags (OUTPUT_FLAGS) that are set."""
    for name, value in values.items():
        if _URL.search(value):
            why = "the run's lock is a local file lock" if name in OUTPUT_DIRECTORY_FLAGS else "written locally"
            raise ValueError(f"--{name}={value}: output files and folders must be local paths ({why}); mount the "
                             "bucket (e.g. with gcsfuse) and name the mounted folder, or copy the outputs there "
                             "after the run")
        link = _dangling_link(value) if name in OUTPUT_DIRECTORY_FLAGS else None
        if link:
            where = "" if link == os.path.abspath(value) else f": {link}"
            raise ValueError(f"--{name}={value}{where} is a symbolic link to {os.readlink(link)}, which does not "
                             "exist")


def _dangling_link(path):
    """`path` (made absolute) or the folder above it nearest to it that is a symbolic link to nothing; None
    when there is none."""
    path = os.path.abspath(path)
    while True:
        if os.path.islink(path) and not os.path.exists(path):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def _log_to_file():
    """With --log_dir (given, not empty): absl's handler writes the log to a file in that folder too (see
    `run`); ValueError naming the flag unless the folder exists and is writable."""
    if not (flags.FLAGS["log_dir"].present and flags.FLAGS.log_dir):
        return
    log_dir = flags.FLAGS.log_dir
    if not os.path.isdir(log_dir) or not os.access(log_dir, os.W_OK):
        raise ValueError(f"--log_dir={log_dir}: expected an existing writable folder")
    if not (flags.FLAGS["alsologtostderr"].present or flags.FLAGS["stderrthreshold"].present):
        flags.FLAGS.alsologtostderr = True  # the log on stderr as without --log_dir
    logging.get_absl_handler().use_absl_log_file()


def _locked_folders():
    """The output folders (OUTPUT_DIRECTORY_FLAGS) this process locks: none on a worker of a multi-worker run
    other than the chief, which holds the lock for the cluster (the chief as `devices.Devices.is_chief` tells it:
    TF_CONFIG's `chief` task, else worker 0)."""
    if "distribution_strategy" in flags.FLAGS and flags.FLAGS.distribution_strategy == "multi_worker_mirrored":
        from bert_tf.training.devices import task_index

        tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
        task = tf_config.get("task", {})
        if task and task_index(tf_config.get("cluster", {}), task.get("type"), int(task.get("index", 0))):
            return []
    return [flags.FLAGS[name].value for name in OUTPUT_DIRECTORY_FLAGS
            if name in flags.FLAGS and flags.FLAGS[name].value]


def _new_output_directories():
    """For each output folder flag of the command, the outermost folder of its path that does not exist yet
    (the one the run would create)."""
    created = []
    for name in OUTPUT_DIRECTORY_FLAGS:
        path = flags.FLAGS[name].value if name in flags.FLAGS else None
        if not path or os.path.exists(path):
            continue
        path = os.path.abspath(path)
        while not os.path.exists(os.path.dirname(path)):
            path = os.path.dirname(path)
        created.append(path)
    return created


def _remove_if_unproductive(folders):
    """A failed run leaves no output folder it created (so every file in it is this run's) that holds nothing
    but the files a run writes before it has produced anything (`run_directory.SETUP_FILES`: labels.txt,
    bert_config.json, training_settings.json), or nothing at all: a run refused after reading its data
    leaves no folder for the corrected rerun to read. Weights, results and predictions keep their folder."""
    from bert_tf import run_directory  # TensorFlow: not imported by the commands that never start it

    for folder in folders:
        if os.path.isdir(folder) and all(name in run_directory.SETUP_FILES for _, _, files in os.walk(folder)
                                         for name in files):
            shutil.rmtree(folder, ignore_errors=True)
