"""Google's TF1 checkpoints and bert_tf's own: name-based TensorFlow checkpoint bundles (`prefix.index` +
`prefix.data-*`) under Google's variable names, read as a CheckpointSource and written from {name: array}.

A bert_tf checkpoint is a Google one plus three marker tensors: the format version, the embedded
bert_config.json and, for a task head other than the linear one, its options (`FORMAT_VERSION_NAME`,
`CONFIG_NAME`, `HEAD_NAME`); Google's optimizer slots and step counters are ignored with a reason.

Reading uses TensorFlow's reader (which checks every tensor's CRC32C) when TensorFlow can be imported, else
the pure-NumPy `tensor_bundle` reader (JAX or PyTorch hosts); writing is `tensor_bundle`'s on every host (the
bytes TensorFlow's SaveV2 writes).
"""

import json
import os
import re

import numpy as np

from bert_tf import checkpoint_paths
from bert_tf.formats import tensor_bundle
from bert_tf.formats.source import CheckpointSource

GOOGLE, NATIVE = "google", "native"
FORMAT_VERSION_NAME = "bert_tf/format_version"
CONFIG_NAME = "bert_tf/bert_config"
HEAD_NAME = "bert_tf/task_head"  # JSON of a task model's `head_options()` when its head is not the linear one
FORMAT_VERSION = 1
# Optimizer state and step counters that Google's checkpoints carry beside the weights.
_OPTIMIZER_SLOT = re.compile(r"(^|/)(adam_m|adam_v|lamb_m|lamb_v|global_step|good_steps|loss_scale|"
                             r"current_loss_scale)$")


# ---------------------------------------------------------------------------------------------- TF bundles

def _tensorflow():
    """The tensorflow module, or None where it cannot be imported (a JAX or PyTorch host)."""
    try:
        import tensorflow as tf
    except ImportError:
        return None
    return tf


def _open_with_tensorflow(tf, prefix):
    """(shapes {name: shape}, read(name) -> array) of the bundle at `prefix`, by TensorFlow's reader."""
    try:
        reader = tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError) as e:
        raise ValueError(f"{prefix}: cannot read TensorFlow checkpoint ({str(e).splitlines()[0]})") from None

    def read(name):
        try:
            return reader.get_tensor(name)
        except (tf.errors.OpError, IndexError, ValueError) as e:  # TF's reader maps some errors to builtins
            reason = (getattr(e, "message", None) or str(e)).strip().splitlines()[0]
            raise ValueError(f"{prefix}: cannot read {name}: {reason} (a damaged or truncated checkpoint)") from None

    return reader.get_variable_to_shape_map(), read


def _open_without_tensorflow(prefix):
    """(shapes {name: shape}, read(name) -> array) of the bundle at `prefix`, by `tensor_bundle` (no CRC32C
    check), with the same messages as `_open_with_tensorflow`."""
    try:
        shapes, _, read_bundled = tensor_bundle.read_bundle(prefix)
    except ValueError as e:
        raise ValueError(f"{prefix}: cannot read TensorFlow checkpoint ({e})") from None

    def read(name):
        try:
            return read_bundled(name)
        except ValueError as e:
            raise ValueError(f"{prefix}: cannot read {name}: {e} (a damaged or truncated checkpoint)") from None

    return shapes, read


def open_bundle(prefix):
    """(shapes {name: shape}, read(name) -> NumPy array) of the TensorFlow checkpoint bundle at `prefix`, read
    by TensorFlow when it can be imported, else by `tensor_bundle`; ValueError naming `prefix` when unreadable."""
    tf = _tensorflow()
    return _open_with_tensorflow(tf, prefix) if tf else _open_without_tensorflow(prefix)


def read_checkpoint(prefix):
    """The Google or bert_tf checkpoint at `prefix` as a CheckpointSource (format GOOGLE or NATIVE); ValueError
    naming `prefix` for an unreadable bundle, a TF2 object-based checkpoint or one without BERT variables
    (`open_bundle`)."""
    shapes, read = open_bundle(prefix)
    if FORMAT_VERSION_NAME in shapes:
        version = int(read(FORMAT_VERSION_NAME))
        if version != FORMAT_VERSION:
            raise ValueError(f"{prefix}: bert_tf checkpoint format version {version}, expected {FORMAT_VERSION}")
        embedded = {name: json.loads(read(name).decode("utf-8")) for name in (CONFIG_NAME, HEAD_NAME)
                    if name in shapes}
        ignored = {FORMAT_VERSION_NAME: "format marker", CONFIG_NAME: "embedded bert_config.json",
                   HEAD_NAME: "embedded task head options"}
        ignored = {name: reason for name, reason in ignored.items() if name in shapes}
        weights = {n: tuple(s) for n, s in shapes.items() if n not in ignored}
        return CheckpointSource(prefix, NATIVE, weights, read, ignored, embedded.get(CONFIG_NAME),
                                head=embedded.get(HEAD_NAME))
    if any(".ATTRIBUTES" in n for n in shapes):
        raise ValueError(f"{prefix}: this is a TF2 object-based checkpoint (names like "
                         f"{next(n for n in shapes if '.ATTRIBUTES' in n)}); expected a Google TF1 BERT "
                         "checkpoint or one written by bert_tf (convert_checkpoint.py / save_checkpoint)")
    if not any(n.startswith("bert/") for n in shapes):
        raise ValueError(f"{prefix}: no BERT variables in this checkpoint (expected names like "
                         f"bert/embeddings/word_embeddings; found {sorted(shapes)[:5]})")
    ignored = {n: "optimizer state" for n in shapes if _OPTIMIZER_SLOT.search(n)}
    weights = {n: tuple(s) for n, s in shapes.items() if n not in ignored}
    return CheckpointSource(prefix, GOOGLE, weights, read, ignored)


def write_checkpoint(prefix, tensors, config_json=None, head=None):
    """Writes {canonical name: array} as a bert_tf checkpoint at `prefix`, with the format marker, the
    embedded bert_config.json text `config_json` and the task head options `head` (a JSON-able dict) when
    given; complete or not at all (`checkpoint_paths.write_bundle`)."""
    tensors = {n: np.asarray(v) for n, v in tensors.items()}
    tensors[FORMAT_VERSION_NAME] = np.asarray(FORMAT_VERSION, np.int64)
    if config_json is not None:
        tensors[CONFIG_NAME] = np.asarray(config_json.encode("utf-8"), dtype=object)
    if head is not None:
        tensors[HEAD_NAME] = np.asarray(json.dumps(head, sort_keys=True).encode("utf-8"), dtype=object)
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    checkpoint_paths.write_bundle(prefix, lambda tmp: tensor_bundle.write_bundle(tmp, tensors))
