"""One run per output folder: an exclusive lock that a command holds on its --output_dir (or --export_dir)
for its whole life.

    with hold(output_dir, "run_classifier.py"):   # OutputInUse (an OSError) when another live run holds it
        ...                                        # train, evaluate, predict, export

The lock is the file `<folder>/.bert_tf_run.lock`, locked with `fcntl.flock` and holding one line that says
who holds it (`pid=… host=… since=… command=…`). The kernel releases a flock when its process ends in any way
(SIGKILL included), so a lock whose holder is gone is simply taken again; its file then still names the dead
holder, and the new run says in a warning that it took that lock over. The file is removed when the run ends.

The lock path must be a regular file of one link, or absent: a symbolic link, a hard link, a FIFO, a
directory or a device there is refused and left as it is, never opened through (through a link, a run would
overwrite the file that it names). Of what a lock file holds only a holder line is ever quoted; other content
is named by its size.

Two runs on one folder at once would each overwrite the other's eval_results.txt and predictions, and
one run's checkpoint retention would delete the files the other is about to read or resume from.
"""

import contextlib
import errno
import fcntl
import os
import re
import socket
import stat
import time

from absl import logging

LOCK_FILE = ".bert_tf_run.lock"
HOLDER_LIMIT = 1024  # the most of a lock file that is read: a holder line is far shorter
_HOLDER = re.compile(r"pid=[0-9]{1,10} host=\S{1,255} since=\S{1,40} command=[^\n]{0,255}")
# The lock path itself, never what a symbolic link there names; never waiting on a FIFO.
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class OutputInUse(OSError):
    """Another run (named in the message) holds the lock of the output folder."""


def _problem(status):
    """Why a file of `status` (an os.stat_result that did not follow links) cannot be a lock file, as (errno,
    words), e.g. (ELOOP, 'is a symbolic link'); None for a regular file of one link."""
    if stat.S_ISLNK(status.st_mode):
        return errno.ELOOP, "is a symbolic link"
    if stat.S_ISDIR(status.st_mode):
        return errno.EISDIR, "is a directory"
    if not stat.S_ISREG(status.st_mode):
        return errno.EINVAL, "is not a regular file"
    if status.st_nlink > 1:
        return errno.EMLINK, f"has {status.st_nlink} hard links"
    return None


def _refused(path, problem):
    """The OSError of a lock path `path` that is not a regular file of one link (`_problem`)."""
    code, words = problem
    return OSError(code, f"{path} {words}; expected a regular file (remove it if no run is using the folder)")


def _holder(fd):
    """What the open lock file `fd` says of its holder: its holder line (`pid=… host=… since=… command=…`),
    '' when it is empty, 'unrecognised content, N bytes' when it is not one printable holder line."""
    size = os.fstat(fd).st_size
    if not size:
        return ""
    try:
        line = os.pread(fd, HOLDER_LIMIT + 1, 0).decode("utf-8").strip()
    except UnicodeDecodeError:
        line = ""
    if size <= HOLDER_LIMIT and _HOLDER.fullmatch(line) and line.isprintable():
        return line
    return f"unrecognised content, {size} bytes"


def describe_holder(path):
    """What the lock file `path` says of its holder (see `_holder`); 'unknown' when it is empty, unreadable or
    not a regular file of one link (never read through a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
    except OSError:
        return "unknown"
    try:
        return "unknown" if _problem(os.fstat(fd)) else _holder(fd) or "unknown"
    except OSError:
        return "unknown"
    finally:
        os.close(fd)


def _open(path):
    """A descriptor of the lock file `path` (created if missing) open for reading and writing; an OSError
    naming the path and what it is (left untouched) when it is not a regular file of one link."""
    with contextlib.suppress(FileNotFoundError):
        problem = _problem(os.lstat(path))
        if problem:
            raise _refused(path, problem)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _OPEN_FLAGS, 0o644)
    except OSError as e:  # replaced since the lstat: O_NOFOLLOW fails on a link, O_RDWR on a directory
        try:
            problem = _problem(os.lstat(path))
        except OSError:
            problem = None
        raise (_refused(path, problem) if problem else e) from None
    problem = _problem(os.fstat(fd))
    if problem:
        os.close(fd)
        raise _refused(path, problem)
    return fd


def _acquire(path, folder):
    """An open descriptor of `path` holding its exclusive flock; OutputInUse when another process holds it.
    Retries when the file was replaced between open and flock (a run ending removes it)."""
    while True:
        fd = _open(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = _holder(fd) or "unknown"
            except OSError:
                holder = "unknown"
            os.close(fd)
            raise OutputInUse(f"{folder} is in use by another run ({holder}); wait for it to end or choose "
                              "another output folder") from None
        except OSError:
            os.close(fd)
            raise
        try:
            same = os.path.samestat(os.fstat(fd), os.lstat(path))
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
        previous = _holder(fd)
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
            if os.path.samestat(os.lstat(path), os.fstat(fd)):  # the lock file, not what may have replaced it
                os.remove(path)  # before the flock is released: no other run can be holding this file then
        os.close(fd)
