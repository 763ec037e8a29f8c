"""CheckpointSource: what every checkpoint reader returns, whatever the format; read_json, their JSON files."""

import json

from bert_tf.checkpoint_paths import checkpoint_folder


class CheckpointSource:
    """Tensors of one checkpoint under canonical names.

    Attributes: `path`, `format` (google | huggingface | keras_hub | native), `shapes` {canonical name: shape},
    `ignored` {original name: reason} for tensors that are deliberately not weights, `config` (a dict of
    Google bert_config.json fields, or None), `labels` (label names in id order: the format's own, e.g. a HF
    id2label, else the labels.txt in its folder; or None), `head` (the task head's options when it is not
    the original linear one, e.g. {"task_head": "bilstm", ...}; else None), `folder` (`checkpoint_folder`
    of the path), `vocab_file` (the vocab.txt that came with it, or None).
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
