"""One run per output folder: an exclusive lock that a command holds on its --output_dir (or --export_dir)
for its whole life.

    with hold(output_dir, "run_classifier.py"):   # OutputInUse (an OSError) when another live run holds it
        ...                                        # train, evaluate, predict, export

The lock is the file `<folder>/.bert_tf_run.lock`, locked with `fcntl.flock` and holding one line that says
who holds it (`pid=… host=… since=… command=…`). The kernel releases a flock when its process ends in any way
(SIGKILL included), so a lock whose holder is gone is simply taken again; its file then still names the dead
holder, and the new run says in a warning that it took that lock over. The file is removed when the run ends.

Two runs on one folder at once would each overwrite the other's eval_results.txt and predictions, and
one run's checkpoint retention would delete the files the other is about to read or resume from.
"""

import contextlib
import fcntl
import os
import socket
import time

from absl import logging

LOCK_FILE = ".bert_tf_run.lock"


class OutputInUse(OSError):
    """Another run (named in the message) holds the lock of the output folder."""


def describe_holder(path):
    """The holder line of the lock file `path` ('unknown' when it is empty or unreadable)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip() or "unknown"
    except OSError:
        return "unknown"


def _acquire(path, folder):
    """An open descriptor of `path` holding its exclusive flock; OutputInUse when another process holds it.
    Retries when the file was replaced between open and flock (a run ending removes it)."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = describe_holder(path)
            os.close(fd)
            raise OutputInUse(f"{folder} is in use by another run ({holder}); wait for it to end or choose "
                              "another output folder") from None
        except OSError:
            os.close(fd)
            raise
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # the holder removed it as we opened it: lock the current file


@contextlib.contextmanager
def hold(folder, command):
    """Holds the exclusive lock of `folder` (created if missing) while the block runs.

    command: what the holder line names (e.g. the script). OutputInUse (an OSError whose message names the
    folder and the holder's pid, host, start time and command) when another live process holds it; an OSError
    naming the folder when it cannot be created or written."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise OSError(e.errno, f"cannot create the output folder {folder}: {e.strerror}") from None
    path = os.path.join(folder, LOCK_FILE)
    try:
        fd = _acquire(path, folder)
    except OutputInUse:
        raise
    except OSError as e:
        raise OSError(e.errno, f"cannot lock the output folder {folder}: {e.strerror}") from None
    try:
        previous = os.read(fd, 4096).decode("utf-8", "replace").strip()
        if previous:
            logging.warning("Took over the lock of %s from a run that is no longer running (%s)", folder, previous)
        line = (f"pid={os.getpid()} host={socket.gethostname()} "
                f"since={time.strftime('%Y-%m-%dT%H:%M:%S')} command={command}\n").encode("utf-8")
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, line, 0)
            os.fsync(fd)
        except OSError as e:
            raise OSError(e.errno, f"cannot write the lock file {path}: {e.strerror}") from None
        yield
    finally:
        with contextlib.suppress(OSError):
            os.remove(path)  # before the flock is released: no other run can be holding this file then
        os.close(fd)
