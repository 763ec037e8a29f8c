"""Checks of flag values that several scripts share, each a ValueError naming the flag, its value and what is
expected. A command-side module that defines no flags (unlike training_flags.py), so that any script can
import it without taking on flags it does not read.
"""

import os

from absl import flags

FLAGS = flags.FLAGS


def check_at_least(minimum, *names, reason=None):
    """ValueError `--name=value must be >= minimum (reason)` for the first integer flag of `names` (defined
    by the calling script) whose value is below `minimum`."""
    for name in names:
        value = FLAGS[name].value
        if value < minimum:
            raise ValueError(f"--{name}={value} must be >= {minimum}" + (f" ({reason})" if reason else ""))


def check_max_seq_length(segments):
    """ValueError unless --max_seq_length holds [CLS] and, for each of the `segments` texts of an example (1:
    single texts, 2: pairs), a word piece and its [SEP]: >= 3 for single texts, >= 5 for pairs. A shorter
    length packs examples without any text (truncation keeps max_seq_length - 2 pieces of a single text,
    max_seq_length - 3 of a pair)."""
    what = "the text and [SEP]" if segments == 1 else f"each of the {segments} texts and a [SEP] after each"
    check_at_least(1 + 2 * segments, "max_seq_length", reason=f"room for [CLS], a word piece of {what}")


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
