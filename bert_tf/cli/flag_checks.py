"""Checks of flag values that several scripts share, each a ValueError naming the flag, its value and what is
expected. A command-side module that defines no flags (unlike training_flags.py), so that any script can
import it without taking on flags it does not read.
"""

import os

from absl import flags

from bert_tf.data import packing

FLAGS = flags.FLAGS


def check_at_least(minimum, *names, reason=None):
    """ValueError `--name=value must be >= minimum (reason)` for the first integer flag of `names` (defined
    by the calling script) whose value is below `minimum`."""
    for name in names:
        value = FLAGS[name].value
        if value < minimum:
            raise ValueError(f"--{name}={value} must be >= {minimum}" + (f" ({reason})" if reason else ""))


def check_max_seq_length(segments):
    """`packing.check_max_seq_length` of --max_seq_length for examples of `segments` texts."""
    packing.check_max_seq_length(FLAGS.max_seq_length, segments)


def check_input_file(name):
    """ValueError `--name=path: ...` unless the file flag `name` names a readable file."""
    path = FLAGS[name].value
    if os.path.isdir(path):
        raise ValueError(f"--{name}={path}: is a directory; expected a file")
    if not os.path.isfile(path):
        raise ValueError(f"--{name}={path}: no such file")
    if not os.access(path, os.R_OK):
        raise ValueError(f"--{name}={path}: not readable")


def check_output_file(name):
    """ValueError `--name=path: ...` unless the folder that the file flag `name` names a file in exists and is
    writable (a command creates output folders, not the folders of output files, as the original)."""
    path = FLAGS[name].value
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"--{name}={path}: is a directory; expected a file name")
    if not os.path.isdir(folder):
        raise ValueError(f"--{name}={path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"--{name}={path}: the folder {folder} is not writable")


def check_outputs_not_inputs(outputs, inputs):
    """ValueError `--output_file=a.txt is the same file as --input_file=data/a.txt; the output would replace
    the input: choose another --output_file` for the first output path that is one of the input paths, by
    any name (a symlink, a hard link, `./a.txt`, `d/../a.txt`): before a command writes anything, so that
    its output never replaces what it reads.

    outputs, inputs: {flag name: [paths]} (a None path, an optional flag not given, is skipped): a flag's
    value, or what it stands for (the files a glob pattern matches, the shards of a pattern, a file in an
    output folder); a path that is not the flag's value is named with it, `a.txt (of --input_file=*.txt)`.
    Two paths are one file when they lead (symlinks followed) to the same device and inode: the same file
    whatever its spelling or link. A path with no file (an output not written yet, an input that
    the command's own checks report missing) is no input's: there is nothing there to replace."""
    read = {}
    for name, paths in inputs.items():
        for path in filter(None, paths):
            read.setdefault(_identity(path), (name, path))
    read.pop(None, None)  # paths with no file
    for name, paths in outputs.items():
        for path in filter(None, paths):
            replaced = read.get(_identity(path))
            if replaced:
                raise ValueError(f"{_named(name, path)} is the same file as {_named(*replaced)}; the output would "
                                 f"replace the input: choose another --{name}")


def paths_of(*names):
    """{name: [value]} of the file flags `names`, for `check_outputs_not_inputs`."""
    return {name: [FLAGS[name].value] for name in names}


def _identity(path):
    """(device, inode) of the file that `path` leads to (symlinks followed), or None when there is none."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _named(name, path):
    """`--name=path` when `path` is the flag's value, else `path (of --name=value)`."""
    value = FLAGS[name].value if name in FLAGS else None
    path = os.fspath(path)
    return f"--{name}={path}" if value in (None, path) else f"{path} (of --{name}={value})"
