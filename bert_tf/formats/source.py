"""CheckpointSource: what every checkpoint reader returns, whatever the format; read_json, their JSON files;
checkpoint_folder, the folder of a checkpoint path."""

import functools
import json
import os


def checkpoint_folder(path):
    """The folder a checkpoint path stands for: `path` itself when it is a folder (a training output_dir, a
    HuggingFace or KerasHub directory), else the folder of the prefix or file (`dir/model.ckpt-4` -> `dir`),
    where the companions (bert_config.json, vocab.txt, labels.txt) lie."""
    path = os.fspath(path)
    return path if os.path.isdir(path) else os.path.dirname(path)


class CheckpointSource:
    """Tensors of one checkpoint under canonical names.

    Attributes: `path`, `format` (google | huggingface | keras_hub | native), `shapes` {canonical name: shape},
    `ignored` {original name: reason} for tensors that are deliberately not weights, `config` (a dict of
    Google bert_config.json fields, or None), `labels` (label names in id order: the format's own, e.g. a HF
    id2label, else the labels.txt in its folder; or None), `head` (the task head's options when it is not
    the original linear one, e.g. {"task_head": "bilstm", ...}; else None), `folder` (`checkpoint_folder`
    of the path), `vocab_file` (the vocab.txt that came with it, or None), `sentence_transformers` (how a
    sentence-transformers directory it lies in pools, normalizes and truncates, or None; read when first asked).
    `read(name)` returns the NumPy array of a canonical name in Google's layout.
    """

    def __init__(self, path, fmt, shapes, reader, ignored, config=None, labels=None, head=None, vocab_file=None):
        self.path, self.format, self.shapes, self._reader = path, fmt, shapes, reader
        self.ignored, self.config, self.labels, self.head = ignored, config, labels, head
        self.vocab_file = vocab_file

    def read(self, name):
        return self._reader(name)

    @property
    def folder(self):
        return checkpoint_folder(self.path)

    @functools.cached_property
    def sentence_transformers(self):
        """`sentence_transformers.read_settings` of the folder: {"pooling", "normalize", "max_seq_length"},
        or None. Read when first asked, so that a folder whose modules bert_tf cannot compute (ValueError)
        fails only what would embed with them."""
        from bert_tf.formats.sentence_transformers import read_settings  # it reads its JSON with read_json

        return read_settings(self.folder)


def read_json(path, directory_kind):
    """The JSON value in `path`, a file of a `directory_kind` directory (e.g. "KerasHub preset"); ValueError
    naming the file when it is missing or not valid JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ValueError(f"{path}: missing from the {directory_kind}") from None
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a valid JSON file ({e})") from None
