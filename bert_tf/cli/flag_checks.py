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
