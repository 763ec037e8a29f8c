"""Imports Google's original BERT code (PyPI `bert-tensorflow==1.0.4`, TF1 API) as the oracle of tests and benchmarks.

The package is installed with `pip install --no-deps bert-tensorflow==1.0.4` (see the Makefile). Its
modules do `import tensorflow.compat.v1 as tf` or `import tensorflow as tf` and define absl flags at import
time; `import_original` runs the import with `tf.compat.v1` standing in for `tensorflow`, then moves the
flags the import defined out of the global `absl.flags.FLAGS` into a private, parsed `FlagValues` (with
their defaults), so they neither collide with this project's flags nor need a command line.

    tokenization = import_original("tokenization")
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
"""

import importlib
import sys
import types

import tensorflow as tf
from absl import flags


def import_original(name):
    """Returns the original module `bert.<name>` (e.g. "tokenization"), imported once per process."""
    module_name = f"bert.{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    flags_before = set(flags.FLAGS)
    modules_before = set(sys.modules)
    tensorflow = sys.modules["tensorflow"]
    sys.modules["tensorflow"] = tf.compat.v1
    try:
        module = importlib.import_module(module_name)
    finally:
        sys.modules["tensorflow"] = tensorflow
    private_flags = flags.FlagValues()
    for flag_name in set(flags.FLAGS) - flags_before:
        private_flags[flag_name] = flags.FLAGS[flag_name]
        delattr(flags.FLAGS, flag_name)
    private_flags.mark_as_parsed()
    for new_module in set(sys.modules) - modules_before:
        if new_module.startswith("bert.") and hasattr(sys.modules[new_module], "FLAGS"):
            sys.modules[new_module].FLAGS = private_flags
    return module


def import_original_without_modeling(name):
    """`import_original(name)` for a module whose `modeling` import needs tf.contrib, which TF2 lacks
    (run_classifier, run_squad): an empty stub stands in for `bert.modeling` during the import, so only the
    functions that do not use it (data processing, post-processing) work."""
    if f"bert.{name}" not in sys.modules:
        sys.modules["bert.modeling"] = types.ModuleType("bert.modeling")
        try:
            import_original(name)
        finally:
            del sys.modules["bert.modeling"]
    return sys.modules[f"bert.{name}"]
