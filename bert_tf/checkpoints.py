"""Opening, checking, loading and saving BERT weights of any format: Google TF1 checkpoints, HuggingFace
safetensors, KerasHub presets, this project's own (their codecs are bert_tf/formats/, one layer below).

Every format is read as a map from *canonical names* (Google's variable names, e.g.
`bert/encoder/layer_0/attention/self/query/kernel`, `cls/predictions/output_bias`) to NumPy arrays in
Google's layouts (Dense kernels [in, out]). Models expose the same names through `checkpoint_variables()`,
so loading is one dictionary join. Pickled PyTorch files are refused: they are never unpickled.
"""

import dataclasses
import glob
import os
import re

from absl import logging

from bert_tf import checkpoint_paths, run_directory
from bert_tf.config import BertConfig
from bert_tf.formats import google, keras_hub
from bert_tf.formats.huggingface import read_huggingface, safetensors_files
from bert_tf.formats.source import CheckpointSource, read_json

_PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle")


# --------------------------------------------------------------------------------------------- detection

def open_checkpoint(path):
    """Detects the format of `path` and returns a CheckpointSource; ValueError when it is none of them.

    Accepted: a Google TF1 checkpoint prefix or directory (`bert_model.ckpt`), a checkpoint written by
    `save_checkpoint`, a HuggingFace BERT directory or `model.safetensors` file, a KerasHub BertBackbone preset
    directory.
    """
    path = os.fspath(path)
    if path.endswith(_PICKLE_SUFFIXES) or (
            os.path.isdir(path) and os.path.isfile(os.path.join(path, "pytorch_model.bin"))
            and safetensors_files(path) is None):
        raise ValueError(f"{path}: pickled PyTorch weights are refused (unpickling runs arbitrary code); "
                         "convert them to model.safetensors (e.g. `safetensors.torch.save_file`) and pass that")
    if keras_hub.is_preset(path):
        return _with_companions(keras_hub.read_preset(path))
    files = safetensors_files(path)
    if files:
        return _with_companions(read_huggingface(files, path))
    prefix = checkpoint_paths.prefix_of(path)
    if prefix:
        return _with_companions(google.read_checkpoint(prefix))
    if not os.path.exists(path) and not glob.glob(path + ".*"):
        raise ValueError(f"{path}: checkpoint not found")
    raise ValueError(f"{path}: not a BERT checkpoint; expected a Google TF1 checkpoint prefix "
                     "(bert_model.ckpt), a bert_tf checkpoint, a HuggingFace directory / model.safetensors, or a "
                     "KerasHub preset directory")


def _with_companions(source):
    """`source` with what lies in its folder: the bert_config.json beside a Google checkpoint (Google's
    layout), the labels.txt a fine-tuning run (or a converter) wrote when the format has no labels of its own,
    and the vocab.txt (a KerasHub preset's vocabulary file)."""
    config_file = os.path.join(source.folder, run_directory.CONFIG_FILE)
    if source.config is None and os.path.isfile(config_file):
        source.config = read_json(config_file, f"{source.format} checkpoint's folder")
    if source.labels is None:
        source.labels = run_directory.read_labels(source.folder)
    source.vocab_file = next((os.path.join(source.folder, name) for name in ("vocab.txt", keras_hub.VOCABULARY_FILE)
                              if os.path.isfile(os.path.join(source.folder, name))), None)
    return source


def opened(checkpoint):
    """`checkpoint` when it is an opened CheckpointSource, else `open_checkpoint(checkpoint)`: the functions
    that read a checkpoint take either, so a command opens its checkpoint once."""
    return checkpoint if isinstance(checkpoint, CheckpointSource) else open_checkpoint(checkpoint)


# ------------------------------------------------------------------------------------------------ loading

_LAYER = re.compile(r"^bert/encoder/layer_(\d+)/")


def checkpoint_dimensions(source):
    """The config fields that the tensor shapes of `source` (a CheckpointSource) fix, for those it has:
    vocab_size, hidden_size, max_position_embeddings, type_vocab_size, num_hidden_layers, intermediate_size."""
    shapes, found = source.shapes, {}
    for name, fields in (("bert/embeddings/word_embeddings", ("vocab_size", "hidden_size")),
                         ("bert/embeddings/position_embeddings", ("max_position_embeddings", None)),
                         ("bert/embeddings/token_type_embeddings", ("type_vocab_size", None)),
                         ("bert/encoder/layer_0/intermediate/dense/kernel", (None, "intermediate_size"))):
        if name in shapes and len(shapes[name]) == 2:
            found.update({field: int(size) for field, size in zip(fields, shapes[name]) if field})
    layers = {int(match.group(1)) for match in map(_LAYER.match, shapes) if match}
    if layers:
        found["num_hidden_layers"] = max(layers) + 1
    return found


def check_fits(config, path, config_name="the config"):
    """Before any model is built: ValueError naming the first (up to 3) fields of `config` (a BertConfig,
    called `config_name` in the message) that the checkpoint at `path` (or opened `source`) contradicts, or a
    checkpoint that cannot be opened (`open_checkpoint`'s errors). Reads only the checkpoint's index / header."""
    source = opened(path)
    found = checkpoint_dimensions(source)
    differences = [f"{field} {value} (checkpoint) vs {getattr(config, field)}" for field, value in found.items()
                   if getattr(config, field) != value]
    if differences:
        more = f" and {len(differences) - 3} more" if len(differences) > 3 else ""
        raise ValueError(f"{source.path} does not fit {config_name}: " + ", ".join(differences[:3]) + more)


def config_of(checkpoint, config_file=None):
    """The BertConfig of `config_file` (a bert_config.json or HuggingFace config.json) if given, else the one
    `checkpoint` (a path or an opened CheckpointSource) carries: embedded in a bert_tf checkpoint, or the
    config file beside it. ValueError when it has none."""
    if config_file:
        return BertConfig.from_json_file(config_file)
    source = opened(checkpoint)
    if source.config is None:
        raise ValueError(f"{source.path} ({source.format} checkpoint) carries no config: give its config file "
                         "(bert_config_file)")
    return BertConfig.from_dict(source.config, source=source.path)


@dataclasses.dataclass
class LoadReport:
    """What `load_checkpoint` did: canonical names `mapped` into the model, checkpoint tensors `ignored`
    (name -> reason), model variables `missing` from the checkpoint (left at their initial values), the
    checkpoint's embedded task `head` options (None: none, or the linear head)."""

    path: str
    format: str
    mapped: list
    ignored: dict
    missing: list
    head: dict = None

    def __str__(self):
        lines = [f"Loaded {self.format} checkpoint {self.path}: {len(self.mapped)} mapped, "
                 f"{len(self.ignored)} ignored, {len(self.missing)} missing"]
        reasons = {}
        for name, reason in self.ignored.items():
            reasons.setdefault(reason, []).append(name)
        for reason, names in sorted(reasons.items()):
            lines.append(f"  ignored ({reason}): {len(names)}, e.g. {sorted(names)[0]}")
        for name in self.missing:
            lines.append(f"  missing (kept at initial value): {name}")
        return "\n".join(lines)


def _optional(name):
    """Variables a checkpoint may lack: the pooler (absent from MLM-only models) and the task heads."""
    return not name.startswith("bert/") or name.startswith("bert/pooler/")


def load_checkpoint(model, path):
    """Loads any accepted checkpoint (a path, or one opened by `open_checkpoint`) into `model` (a BertEncoder
    or a model with `checkpoint_variables()`).

    Every checkpoint tensor is mapped into a model variable or ignored with a reason: optimizer state;
    tensors outside `bert/` that this model has no variable for (e.g. pretraining heads when loading into
    an encoder). Raises ValueError listing (a) checkpoint tensors under `bert/` that the model lacks,
    (b) shape mismatches, (c) encoder variables absent from the checkpoint (except the pooler, which is
    reported as missing). Returns a LoadReport and logs it.
    """
    source = opened(path)
    targets = model.checkpoint_variables()
    ignored = dict(source.ignored)
    leftovers, mismatched, mapped = [], [], []
    for name, shape in sorted(source.shapes.items()):
        if name not in targets:
            if name.startswith("bert/"):
                leftovers.append(f"{name} {list(shape)}")
            else:
                ignored[name] = "not part of this model"
            continue
        expected = tuple(targets[name].shape)
        if tuple(shape) != expected:
            mismatched.append(f"{name}: checkpoint {list(shape)}, model {list(expected)}")
        mapped.append(name)
    missing = sorted(n for n in targets if n not in source.shapes)
    required_missing = [n for n in missing if not _optional(n)]
    problems = []
    if mismatched:
        problems.append(f"{len(mismatched)} shape mismatch(es): " + "; ".join(mismatched[:3]))
    if leftovers:
        problems.append(f"{len(leftovers)} checkpoint tensor(s) with no model variable: "
                        + ", ".join(leftovers[:3]))
    if required_missing:
        problems.append(f"{len(required_missing)} model variable(s) missing from the checkpoint: "
                        + ", ".join(required_missing[:3]))
    if problems:
        raise ValueError(f"{source.path} ({source.format} checkpoint) does not fit this model "
                         "(is it for a different size or config?): " + " | ".join(problems))
    for name in mapped:
        targets[name].assign(source.read(name).astype(targets[name].dtype))
    report = LoadReport(source.path, source.format, mapped, ignored, missing, source.head)
    logging.info("%s", report)
    return report


# ------------------------------------------------------------------------------------------------ writing

def save_checkpoint(weights, prefix, config=None, head=None):
    """Writes a bert_tf checkpoint at `prefix` (`prefix.index` + `prefix.data-*`).

    `weights`: a model with `checkpoint_variables()` or a {canonical name: array} dict. `config`, a
    BertConfig, is embedded so the checkpoint describes itself; so is `head`, a task model's `head_options()`
    (a JSON-able dict, e.g. {"task_head": "bilstm", "bilstm_size": 768, "bilstm_layers": 2}), when given.
    The variable names are Google's, so the original TF1 code can read the `bert/` and `cls/` variables too.
    """
    if hasattr(weights, "checkpoint_variables"):
        weights = {n: v.numpy() for n, v in weights.checkpoint_variables().items()}
    google.write_checkpoint(prefix, weights, None if config is None else config.to_json_string(), head)
