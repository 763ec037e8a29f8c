"""sentence-transformers model directories: how they pool, normalize and truncate (`modules.json`,
`1_Pooling/config.json`, `sentence_bert_config.json`). Their weights are a HuggingFace BERT directory, read by
`formats/huggingface.py`.

    settings = read_settings("all-MiniLM-L6-v2/")  # {"pooling": "mean", "normalize": True, "max_seq_length": 256}
"""

import json
import os

from bert_tf.formats.source import read_json

MODULES_FILE, SETTINGS_FILE = "modules.json", "sentence_bert_config.json"
DIRECTORY = "sentence-transformers directory"
_MODULE = "sentence_transformers.models."
# Pooling/config.json's switch of each SentencePooling mode.
_POOLING_FLAGS = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens",
                  "max": "pooling_mode_max_tokens", "mean_sqrt_len": "pooling_mode_mean_sqrt_len_tokens"}


def read_settings(path):
    """{"pooling", "normalize", "max_seq_length" (None when not set)} of the sentence-transformers model
    directory `path`, or None when `path` is not one (no modules.json). ValueError naming the file for
    modules this port cannot compute (a Dense layer, several pooling modes at once, weighted-mean or
    last-token pooling)."""
    modules_file = os.path.join(path, MODULES_FILE) if os.path.isdir(path) else None
    if not modules_file or not os.path.isfile(modules_file):
        return None
    modules = read_json(modules_file, DIRECTORY)
    kinds = {module.get("type", "").removeprefix(_MODULE): module for module in modules}
    unknown = sorted(set(kinds) - {"Transformer", "Pooling", "Normalize"})
    if unknown or "Pooling" not in kinds:
        raise ValueError(f"{modules_file}: modules {', '.join(unknown) or '(no Pooling)'}: bert_tf computes "
                         "Transformer + Pooling (+ Normalize) models")
    pooling_file = os.path.join(path, kinds["Pooling"].get("path", ""), "config.json")
    pooling = read_json(pooling_file, DIRECTORY)
    modes = [mode for mode, flag in _POOLING_FLAGS.items() if pooling.get(flag)]
    others = [key for key, value in pooling.items() if key.startswith("pooling_mode_") and value
              and key not in _POOLING_FLAGS.values()]
    if len(modes) != 1 or others:
        raise ValueError(f"{pooling_file}: pooling {', '.join(modes + others) or 'none'}: expected exactly one of "
                         f"{', '.join(_POOLING_FLAGS.values())}")
    settings_file = os.path.join(path, SETTINGS_FILE)
    settings = read_json(settings_file, DIRECTORY) if os.path.isfile(settings_file) else {}
    return {"pooling": modes[0], "normalize": "Normalize" in kinds, "max_seq_length": settings.get("max_seq_length")}


DEFAULTS = {"pooling": "mean", "normalize": False, "max_seq_length": 128}  # a plain BERT checkpoint's


def embedder_options(source, pooling=None, normalize=None, max_seq_length=None):
    """{"pooling", "normalize", "max_seq_length"} of an embedder of `source`, a folder (e.g. a run directory)
    or an opened CheckpointSource (its `folder`): the values given, else the sentence-transformers settings of
    that folder (`read_settings`, read only here, so that a folder whose modules bert_tf cannot compute fails
    only what would embed with them), else DEFAULTS. A given value that the settings contradict wins, with a
    warning naming both."""
    from absl import logging

    given = {"pooling": pooling, "normalize": normalize, "max_seq_length": max_seq_length}
    if isinstance(source, (str, os.PathLike)):
        settings, path = read_settings(source) or {}, source
    else:  # an opened CheckpointSource
        settings, path = read_settings(source.folder) or {}, source.path
    options = {}
    for name, value in given.items():
        configured = settings.get(name)
        if value is not None and configured is not None and value != configured:
            logging.warning("%s=%s contradicts the sentence-transformers configuration of %s, which has %s %s; "
                            "%s=%s wins", name, value, path, name, configured, name, value)
        options[name] = next(v for v in (value, configured, DEFAULTS[name]) if v is not None)
    return options


def write_settings(directory, pooling, normalize, max_seq_length):
    """Writes modules.json, 1_Pooling/config.json and sentence_bert_config.json into `directory` (a
    fine-tuning output dir), so that `read_settings` (and sentence-transformers' own reader) gives them back."""
    from bert_tf import atomic_io

    modules = [{"idx": 0, "name": "0", "path": "", "type": _MODULE + "Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": _MODULE + "Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": _MODULE + "Normalize"})
    os.makedirs(os.path.join(directory, "1_Pooling"), exist_ok=True)
    files = {MODULES_FILE: modules, SETTINGS_FILE: {"max_seq_length": max_seq_length, "do_lower_case": False},
             os.path.join("1_Pooling", "config.json"): {flag: mode == pooling for mode, flag in _POOLING_FLAGS.items()}}
    for name, value in files.items():
        atomic_io.write_file(os.path.join(directory, name), json.dumps(value, indent=2) + "\n")
