"""Which files a checkpoint path means: the folder of a path (`checkpoint_folder`), the TF bundle a path names
(`prefix_of`: a prefix, a model folder holding bert_model.ckpt or model.ckpt, a training output_dir's newest
complete `model.ckpt-N`), the names and steps of the bundles `model.ckpt-N` (exported weights) and `ckpt-N`
(training state), and the rule that a bundle exists once its `.index` is in place (`write_bundle`).

    prefix_of("out/")                              # "out/model.ckpt-500": the newest export of an output_dir
    checkpoint_prefix("out", 500)                  # "out/model.ckpt-500"
    step_of("out/training_state/ckpt-500")         # 500
    steps("out")                                   # [400, 500]: its complete (indexed) model.ckpt-N
    state_steps("out")                             # the same of out/training_state/ckpt-N

Below both the codecs (bert_tf/formats/) and the run folder's contract (bert_tf/run_directory.py, docs/DESIGN.md
section 3.1): it imports only the standard library and `atomic_io`, never TensorFlow (a JAX host has none).
"""

import codecs
import glob
import os
import re
import shutil
import sys

from bert_tf import atomic_io

STATE_DIR = "training_state"
EXPORT_NAME = "model.ckpt"
STATE_NAME = "ckpt"
INDEX_FILE = "checkpoint"
_STEP = re.compile(r"(?:^|/)(?:model\.)?ckpt-(\d+)$")
_MODEL_CHECKPOINT_PATH = re.compile(rb'^\s*model_checkpoint_path:\s*("(?:[^"\\\n]|\\.)*")\s*$', re.MULTILINE)


def checkpoint_folder(path):
    """The folder a checkpoint path stands for: `path` itself when it is a folder (a training output_dir, a
    HuggingFace or KerasHub directory), else the folder of the prefix or file (`dir/model.ckpt-4` -> `dir`),
    where the companions (bert_config.json, vocab.txt, labels.txt) lie."""
    path = os.fspath(path)
    return path if os.path.isdir(path) else os.path.dirname(path)


def checkpoint_prefix(directory, step, name=EXPORT_NAME):
    """`directory/<name>-<step>`: name EXPORT_NAME (exported weights) or STATE_NAME (training state)."""
    return os.path.join(directory, f"{name}-{step}")


def step_of(prefix):
    """The step N of a checkpoint prefix `.../model.ckpt-N` or `.../ckpt-N`, or None."""
    match = _STEP.search(os.fspath(prefix))
    return int(match.group(1)) if match else None


def steps(directory, name=EXPORT_NAME):
    """Sorted steps N with a `<name>-N.index` in `directory` (complete bundles)."""
    found = (step_of(path[: -len(".index")]) for path in glob.glob(os.path.join(glob.escape(directory),
                                                                                 f"{name}-*.index")))
    return sorted(step for step in found if step is not None)


def state_steps(directory):
    """Sorted steps N of the complete training states `STATE_DIR/ckpt-N` of the training output_dir `directory`."""
    return steps(os.path.join(directory, STATE_DIR), STATE_NAME)


def incomplete_steps(directory, name=EXPORT_NAME):
    """Sorted steps with `<name>-N.data-*` files but no index (a bundle that lost its index)."""
    found = set()
    for path in glob.glob(os.path.join(glob.escape(directory), f"{name}-*.data-*")):
        step = step_of(path.split(".data-")[0])
        if step is not None and not os.path.exists(checkpoint_prefix(directory, step, name) + ".index"):
            found.add(step)
    return sorted(found)


def write_bundle(prefix, write):
    """Writes a TF checkpoint bundle at `prefix` so that `prefix.index` appears only once every file is
    complete and synced: `write(temporary_prefix)` writes it (`formats/tensor_bundle.py`, or TensorFlow's
    tf.train.Checkpoint), then the data files and last the index are renamed. OSError naming `prefix` (and the
    writer's reason) on failure, with the temporary files removed."""
    tmp = atomic_io.temporary_path(prefix)
    try:
        write(tmp)
        data = sorted(glob.glob(glob.escape(tmp) + ".data-*"))
        atomic_io.publish(data + [tmp + ".index"], [prefix + p[len(tmp):] for p in data] + [prefix + ".index"])
    except Exception as e:
        tf = sys.modules.get("tensorflow")  # imported when TensorFlow's writer ran; its errors are OpErrors
        if tf is not None and isinstance(e, tf.errors.OpError):
            raise atomic_io.disk_error(e, prefix) from None
        raise
    finally:
        for leftover in glob.glob(glob.escape(tmp) + "*"):
            if os.path.isdir(leftover):
                shutil.rmtree(leftover)
            else:
                os.remove(leftover)


def indexed_path(directory):
    """The `model_checkpoint_path` of `directory`'s `checkpoint` index file (TF1's CheckpointState in protobuf
    text format, as `run_directory.write_index` and TensorFlow write it), or None when the file is missing or
    unreadable or names none. Read without TensorFlow."""
    try:
        with open(os.path.join(directory, INDEX_FILE), "rb") as f:
            text = f.read()
    except OSError:
        return None
    match = _MODEL_CHECKPOINT_PATH.search(text)
    if not match:
        return None
    try:  # the text format's C escapes (\", \\, octal bytes); other bytes are UTF-8 as they are
        return codecs.escape_decode(match.group(1)[1:-1])[0].decode("utf-8")
    except (ValueError, UnicodeError):
        return None


def indexed_step(directory):
    """The step the `checkpoint` index file names when that bundle is complete, else None."""
    path = indexed_path(directory)
    if not path or not os.path.exists(os.path.join(directory, os.path.basename(path)) + ".index"):
        return None
    return step_of(path)


def newest_export(directory):
    """The prefix of the newest complete model.ckpt-N that `directory`'s `checkpoint` index names, or None.

    ValueError when the directory's training state is further along (a training run was killed, or is
    running, between saving its state and exporting those weights): reading the older weights would
    silently evaluate or export the wrong step; rerunning the training command finishes the export."""
    step = indexed_step(directory)
    states = state_steps(directory)
    if states and (step is None or states[-1] > step):
        raise ValueError(f"{directory}: the training state is at step {states[-1]} but the newest exported weights "
                         f"are {'none' if step is None else f'{EXPORT_NAME}-{step}'}; the training run was "
                         "interrupted (or is still running): rerun its command to finish the export")
    return None if step is None else checkpoint_prefix(directory, step)


def prefix_of(path):
    """The checkpoint prefix of `path` (a prefix, or a directory holding one), or None."""
    if os.path.isfile(path + ".index"):
        return path
    if path.endswith(".index") and os.path.isfile(path):
        return path[: -len(".index")]
    if os.path.isdir(path):
        for name in ("bert_model.ckpt", "model.ckpt"):
            if os.path.isfile(os.path.join(path, name + ".index")):
                return os.path.join(path, name)
        latest = newest_export(path)
        if latest:
            return latest
        indexes = sorted(glob.glob(os.path.join(path, "*.index")))
        if len(indexes) == 1:
            return indexes[0][: -len(".index")]
    return None
