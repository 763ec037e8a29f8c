"""Every file the project writes: under a temporary name, every write checked, synced, then renamed.

A reader (a later step, a rerun, another process) sees either the previous file or the complete new one,
never a part: data goes to `<path>.incomplete-<pid>`, a short write or a full disk raises an OSError that
names the path, the data is fsync'ed, the temporary file is renamed over `path`, and the directory is
fsync'ed so the rename survives a crash. On any failure the temporary file is removed.

    with atomic_write(path) as f:        # text (or mode="wb")
        f.write(...)
    write_file(path, text_or_bytes)
    publish(temporary_paths, final_paths)  # files written by TensorFlow: fsync, rename, fsync the folder
    swap_directory(staging, final)         # replace a folder (best/, a SavedModel) with no moment without one
    with new_directory(path) as tmp: ...   # fill a new folder (a converted model) that appears complete or not at all
    remove_leftovers(directory)            # temporaries of earlier killed runs (this project's names only)
"""

import contextlib
import ctypes
import errno
import os
import re
import shutil

from absl import logging

TEMPORARY_MARK = ".incomplete"
# Temporary names of this project (`<name>.incomplete-<pid>...`) and of TensorFlow's checkpoint writers
# (`<prefix>_temp/`, `<file>.tempstate<n>`).
_LEFTOVER = re.compile(r"\.incomplete-(?P<pid>\d+)|^(?:model\.)?ckpt-\d+(?:\.incomplete-\d+)?_temp$|\.tempstate\d+$")
_PREVIOUS = ".previous"  # where swap_directory keeps the old folder when the OS cannot exchange two names


def temporary_path(path):
    """The name `path` is written under until it is complete."""
    return f"{path}{TEMPORARY_MARK}-{os.getpid()}"


def disk_error(error, path, action="write"):
    """An OSError naming `path` and the reason of `error` in one line: an OSError's (e.g. 'No space left on
    device'; the OS's words for its errno where a library reports it in several lines, as h5py does) or the
    first line of a TensorFlow OpError's message (its writers raise those). It carries the errno of `error`;
    without one (TensorFlow's errors) its text is the message alone, not "[Errno None] ..."."""
    code = getattr(error, "errno", None)
    lines = (getattr(error, "strerror", None) or getattr(error, "message", None) or str(error)).strip().splitlines()
    reason = os.strerror(code) if len(lines) > 1 and code in errno.errorcode else (lines or ["no reason given"])[0]
    message = f"cannot {action} {path}: {reason}"
    return OSError(code, message) if code is not None else OSError(message)


def fsync_path(path):
    """fsync of a file or a folder (its entries), so what was written survives a crash of the machine."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(file, data, path):
    """Writes all of `data` (bytes) to `file` (an unbuffered binary file), looping over short writes;
    OSError naming `path` when the disk takes nothing more (a full disk)."""
    view = memoryview(data)
    while view:
        try:
            written = file.write(view)
        except OSError as e:
            raise disk_error(e, path) from None
        if not written:
            raise OSError(errno.ENOSPC, f"cannot write {path}: the file system accepted no more bytes")
        view = view[written:]


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8"):
    """A file to write `path` through: opened on `temporary_path(path)`, renamed to `path` when the block
    ends without an exception (after flush and fsync), removed otherwise. mode: "w" (text) or "wb"."""
    path = os.fspath(path)
    tmp = temporary_path(path)
    try:
        file = open(tmp, mode, encoding=None if "b" in mode else encoding)
    except OSError as e:
        raise disk_error(e, path, "create") from None
    try:
        with file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except OSError as e:
        _remove_quietly(tmp)
        if e.filename not in (None, tmp):  # another file the block read (an input): its own error, unchanged
            raise
        raise disk_error(e, path) from None
    except BaseException:
        _remove_quietly(tmp)
        raise
    fsync_path(os.path.dirname(os.path.abspath(path)))


def write_file(path, content):
    """Writes `content` (str: UTF-8 text, or bytes) to `path` atomically."""
    with atomic_write(path, "wb" if isinstance(content, bytes) else "w") as f:
        f.write(content)


def publish(temporary_paths, final_paths):
    """Renames complete files that another writer (TensorFlow) made under temporary names to their final
    names, in the order given (the last one is the one whose presence says all are there): each is fsync'ed
    first, the folders after."""
    try:
        for tmp in temporary_paths:
            fsync_path(tmp)
        for tmp, final in zip(temporary_paths, final_paths):
            os.replace(tmp, final)
        for folder in sorted({os.path.dirname(os.path.abspath(p)) for p in final_paths}):
            fsync_path(folder)
    except OSError as e:
        raise disk_error(e, final_paths[-1]) from None


def fsync_tree(directory):
    """fsync of every file and folder under `directory` (a SavedModel or a copy made by another writer)."""
    for root, _, files in os.walk(directory):
        for name in files:
            fsync_path(os.path.join(root, name))
        fsync_path(root)


def _exchange(a, b):
    """Atomically exchanges the names `a` and `b` (Linux renameat2 RENAME_EXCHANGE); False where the OS or
    the file system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, f"cannot replace {b}: {os.strerror(code)}")


def swap_directory(staging, final):
    """Replaces the folder `final` by the complete folder `staging` (fsync'ed here). With an atomic exchange
    there is no moment without `final`; where the OS has none, the old folder waits as `final.previous`
    until the new one is in place, and `restore_directory` puts it back after a kill in between. A symbolic
    link at `final` is replaced, never followed: the folder it names is left as it is."""
    fsync_tree(staging)
    if os.path.isdir(final) and _exchange(staging, final):
        _remove_tree(staging)
    else:
        previous = final + _PREVIOUS
        if os.path.lexists(final):
            _remove_tree(previous)
            os.replace(final, previous)
        os.replace(staging, final)
        _remove_tree(previous)
    fsync_path(os.path.dirname(os.path.abspath(final)))


def _remove_tree(path):
    """Removes the folder `path`, or only the link when it is a symbolic link (never what it names)."""
    if os.path.islink(path):
        os.remove(path)
    else:
        shutil.rmtree(path, ignore_errors=True)


def check_new_directory(path):
    """OSError unless `path` is free for `new_directory`: absent, or an empty folder."""
    if os.path.exists(path) and not (os.path.isdir(path) and not os.listdir(path)):
        raise OSError(f"{path} exists and is not empty; remove it or write elsewhere")


@contextlib.contextmanager
def new_directory(path):
    """A temporary sibling folder to fill, renamed to `path` (everything fsync'ed) when the block ends without
    an error and removed when it raises. OSError before anything is written when `path` exists and is not an
    empty folder (an empty one is replaced); a failed write raises an OSError naming `path`."""
    path = os.path.normpath(path)  # "out/" names the folder out, whose sibling the temporary one is
    parent = os.path.dirname(os.path.abspath(path))
    check_new_directory(path)
    os.makedirs(parent, exist_ok=True)
    remove_leftovers(parent, os.path.basename(path) + TEMPORARY_MARK)
    tmp = temporary_path(path)
    os.makedirs(tmp)
    try:
        yield tmp
        fsync_tree(tmp)
        if os.path.isdir(path):
            os.rmdir(path)
        os.rename(tmp, path)
        fsync_path(parent)
    except OSError as e:
        raise disk_error(e, path) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def restore_directory(final):
    """After a kill inside `swap_directory`'s fallback: `final.previous` back to `final` if `final` is gone."""
    previous = final + _PREVIOUS
    if os.path.isdir(previous):
        if os.path.isdir(final):
            shutil.rmtree(previous)
        else:
            os.replace(previous, final)
            logging.warning("Restored %s from %s (a replacement was interrupted)", final, previous)


def _alive(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_leftovers(directory, name_start=""):
    """Removes the temporary files and folders that killed or failed writes left in `directory` (not
    recursive): this project's and TensorFlow's temporary names only (and of those, only names that
    start with `name_start`), never one of a process that is still running on this machine. Returns the
    names removed."""
    if not os.path.isdir(directory):
        return []
    removed = []
    for name in sorted(os.listdir(directory)):
        match = _LEFTOVER.search(name)
        if not match or not name.startswith(name_start):
            continue
        pid = next((int(p) for p in match.groupdict().values() if p), None)
        if pid is not None and _alive(pid):
            continue
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            _remove_quietly(path)
        removed.append(name)
    if removed:
        logging.info("Removed %d leftover temporary file(s) of an earlier run in %s: %s", len(removed), directory,
                     ", ".join(removed[:5]) + (", ..." if len(removed) > 5 else ""))
    return removed


def _remove_quietly(path):
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def check_writable(directory):
    """Creates `directory` if needed and writes (then removes) a probe file there: an OSError now
    (`disk_error`), rather than at the first checkpoint, if it cannot be written."""
    os.makedirs(directory, exist_ok=True)
    probe = temporary_path(os.path.join(directory, ".write_test"))
    try:
        with open(probe, "wb") as f:
            f.write(b"ok")
    except OSError as e:
        raise disk_error(e, directory) from None
    finally:
        if os.path.exists(probe):
            os.remove(probe)
