"""The names in a training output_dir, the formats of its small files, and the rules that keep it consistent
under kills.

    model.ckpt-N.{index,data-*}   weights under Google's names (what --init_checkpoint=output_dir loads)
    bert_config.json              the model's config (Google's format), so output_dir is a model directory
    checkpoint                    TF1's index file: names the newest complete model.ckpt-N
    training_state/ckpt-N.*       model, optimizer, step, dropout RNG (for resuming)
    training_state/data_worker_W/ckpt-N.*   the input position of worker W at step N
    eval_results.txt              `key = value` lines (the original's format)
    test_results.tsv              one line of tab-separated class probabilities (or the score) per test example
    labels.txt                    a classifier's or tagger's label names, in label-id order
    best/                         fine-tuning with --best_metric: model.ckpt-N of the best dev evaluation, its
                                  `checkpoint` index, eval_results.txt and labels.txt (`keep_best`)
    dev_evaluations.jsonl         fine-tuning with --best_metric: every dev evaluation, {"step", "results"}
    training_settings.json        the training run's settings (learning rate, batch size, ...) and the changes
                                  that resumed reruns made to them (`record_settings`)

A checkpoint bundle exists once its `.index` is in place: it is written under a temporary prefix and its
files renamed, the index last (`checkpoint_paths.write_bundle`; that module, below this one and formats/, also
names the bundles, lists their steps and finds the newest export: `newest_export`). Retention keeps the newest
`MAX_CHECKPOINTS_TO_KEEP` steps up to the one just saved, so the newest intact state is never deleted.

The contract is described in docs/DESIGN.md, section 3.1.
"""

import glob
import json
import os
import shutil

from absl import logging

from bert_tf import atomic_io, checkpoint_paths
from bert_tf.formats import tensor_bundle

CONFIG_FILE = "bert_config.json"
BEST_DIR = "best"
EVALUATIONS_FILE = "dev_evaluations.jsonl"
MAX_CHECKPOINTS_TO_KEEP = 5


def write_index(directory, step, name=checkpoint_paths.EXPORT_NAME, keep=MAX_CHECKPOINTS_TO_KEEP):
    """The `checkpoint` index file, as TF1 wrote it, naming `<name>-<step>` and the earlier steps that
    `retain(directory, step, name, keep)` keeps (so the index never names a removed bundle):
    tf.train.latest_checkpoint(directory) finds it."""
    earlier = [s for s in checkpoint_paths.steps(directory, name) if s < step]
    kept = [f"{name}-{s}" for s in earlier[max(0, len(earlier) - keep + 1):] if keep > 1] + [f"{name}-{step}"]
    lines = [f'model_checkpoint_path: "{kept[-1]}"'] + [f'all_model_checkpoint_paths: "{k}"' for k in kept]
    atomic_io.write_file(os.path.join(directory, checkpoint_paths.INDEX_FILE), "\n".join(lines) + "\n")


def remove_bundle(directory, step, name=checkpoint_paths.EXPORT_NAME):
    for path in glob.glob(glob.escape(checkpoint_paths.checkpoint_prefix(directory, step, name)) + ".*"):
        os.remove(path)


def retain(directory, step, name=checkpoint_paths.EXPORT_NAME, keep=MAX_CHECKPOINTS_TO_KEEP):
    """After saving `<name>-<step>`: removes the bundles older than the newest `keep` up to `step`, and
    every bundle after `step` (left by a damaged run that this one replaced: resuming chose an older one)."""
    existing = sorted(set(checkpoint_paths.steps(directory, name))
                      | set(checkpoint_paths.incomplete_steps(directory, name)))
    up_to = [s for s in existing if s <= step]
    for old in up_to[:-keep] + [s for s in existing if s > step]:
        remove_bundle(directory, old, name)


RESULTS_FILE = "eval_results.txt"


def write_results(directory, results, name=RESULTS_FILE):
    """`key = value` lines, sorted by key (the original's eval_results.txt), written atomically."""
    atomic_io.write_file(os.path.join(directory, name), "".join(f"{k} = {results[k]}\n" for k in sorted(results)))


def report_results(directory, results, name=RESULTS_FILE):
    """Logs `results` ({key: value}) and writes them to `directory/name` (`write_results`)."""
    logging.info("***** Eval results *****")
    for key in sorted(results):
        logging.info("  %s = %s", key, results[key])
    write_results(directory, results, name)


def read_results(directory, name=RESULTS_FILE):
    """{key: float} of the numeric `key = value` lines of `write_results`' file."""
    results = {}
    with open(os.path.join(directory, name), encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition(" = ")
            try:
                results[key.strip()] = float(value)
            except ValueError:
                pass
    return results


TEST_RESULTS_FILE = "test_results.tsv"


def write_test_results(directory, rows, name=TEST_RESULTS_FILE):
    """The original's test_results.tsv: per example (rows: float [N, C]) its C values, tab-separated."""
    atomic_io.write_file(os.path.join(directory, name),
                         "".join("\t".join(str(value) for value in row) + "\n" for row in rows))


def write_config(directory, config):
    """`directory/bert_config.json`: the BertConfig `config` in Google's format (written atomically)."""
    config.to_json_file(os.path.join(directory, CONFIG_FILE))


SETTINGS_FILE = "training_settings.json"


def state_backend(prefix):
    """The Keras backend whose training loop wrote the training state bundle at `prefix`: "tensorflow"
    (`tf_steps.TfSteps`' tf.train.Checkpoint, whose bundle holds its object graph), "jax" (`jax_step.JaxSteps`'
    named arrays, model/0 ...), or None when it is neither or unreadable. Read without TensorFlow."""
    try:
        names = tensor_bundle.read_bundle(prefix)[0]
    except ValueError:
        return None  # damaged: resuming names it (loop.Trainer._restore)
    if "_CHECKPOINTABLE_OBJECT_GRAPH" in names:
        return "tensorflow"
    return "jax" if "model/0" in names else None


def check_resumable(directory, config, settings, fixed=(), backend=None):
    """Before a training run writes anything in `directory`: can it resume the training state there?

    When `directory` holds a training state (it would resume from its newest step), ValueError, with nothing
    in `directory` changed (the state stays usable by the command that made it), if
      - `config` (a BertConfig) differs from the bert_config.json that state was trained with (naming every
        differing field);
      - the state was written by another Keras backend's loop than `backend` (default: this process's), whose
        states are not interchangeable (`state_backend`);
      - one of the settings named in `fixed` differs from the value recorded with the state (e.g.
        train_batch_size: the saved input position and the step count are in batches of the recorded size;
        mixed_precision: float16 adds a loss scale to the optimizer state).
    Returns the other `settings` ({name: value}, e.g. learning_rate) that differ from those recorded with the
    state (`record_settings`), as {name: (recorded, new)}; {} when there is no state or no record."""
    states = checkpoint_paths.state_steps(directory)
    if not states:
        return {}
    newest = checkpoint_paths.checkpoint_prefix(os.path.join(directory, checkpoint_paths.STATE_DIR), states[-1],
                                                checkpoint_paths.STATE_NAME)
    config_path = os.path.join(directory, CONFIG_FILE)
    if os.path.exists(config_path):
        trained, wanted = type(config).from_json_file(config_path).to_dict(), config.to_dict()
        differences = [f"{field} {trained.get(field)} (trained) vs {wanted.get(field)}"
                       for field in sorted(set(trained) | set(wanted)) if trained.get(field) != wanted.get(field)]
        if differences:
            raise ValueError(f"{directory} holds the training state of step {states[-1]} of a model with another "
                             f"config ({CONFIG_FILE}: {', '.join(differences)}); it is left unchanged. Rerun with "
                             "the config it was trained with to resume it, or choose another output_dir")
    if backend is None:
        import keras  # here: reading a run directory needs no Keras

        backend = keras.backend.backend()
    written_by = state_backend(newest)
    if written_by is not None and written_by != backend:
        raise ValueError(f"{newest} is a training state written on Keras's {written_by} backend; this run is on "
                         f"{backend}, whose training states differ (the model.ckpt-N weights are the same on "
                         f"every backend, the optimizer and input state are not). Resume it with "
                         f"KERAS_BACKEND={written_by}, or start a new run from its weights on {backend} with "
                         f"init_checkpoint={directory} and another output_dir; {directory} is left unchanged")
    changed = _changed(_read_settings(directory).get("settings", {}), settings)
    for name in fixed:
        if name in changed:
            recorded, new = changed[name]
            raise ValueError(f"{directory} holds the training state of step {states[-1]}, trained with "
                             f"{name}={recorded}, which its saved state (model, optimizer, input position, step "
                             f"count) depends on, so a resumed run cannot change it (this run: {name}={new}). "
                             "Rerun with "
                             f"{name}={recorded} to continue it, or start a new run from its weights with "
                             f"init_checkpoint={directory} and another output_dir; {directory} is left unchanged")
    return changed


def check_training_start(directory, init_checkpoint, config, settings, fixed=()):
    """Before a training run writes anything in `directory`: ValueError when `directory` is the folder of
    `init_checkpoint` (a path, an opened CheckpointSource or None; training would write its checkpoints and
    `checkpoint` index over the model it starts from) or holds a training state this run cannot resume
    (`check_resumable`: another config, another backend's, or another value of a `fixed` setting; the state
    is left unchanged); a warning naming each other setting of `settings` ({name: value}) that differs from
    the value that state was trained with."""
    if init_checkpoint is not None:
        path = getattr(init_checkpoint, "path", init_checkpoint)
        if os.path.realpath(checkpoint_paths.checkpoint_folder(path)) == os.path.realpath(directory):
            raise ValueError(f"output_dir={directory} is the folder of init_checkpoint={path}: training would "
                             "write its checkpoints and `checkpoint` index over the model it starts from; choose "
                             "another output_dir")
    changed = check_resumable(directory, config, settings, fixed)
    if changed:
        logging.warning("Resuming %s with other settings than it was trained with: %s (recorded in %s)", directory,
                        ", ".join(f"{name} {old} -> {new}" for name, (old, new) in changed.items()), SETTINGS_FILE)


def record_settings(directory, settings):
    """Writes `settings` ({name: JSON value}: the run's learning rate, batch size, ...) to
    `directory/training_settings.json`, keeping a list of the changes made by reruns that resumed with other
    values ({"step", "setting", "from", "to"}: from the newest training state's step on). Without a training
    state nothing was trained with the recorded settings (a run refused or stopped before its first save): they
    are replaced, no change recorded."""
    states = checkpoint_paths.state_steps(directory)
    previous = _read_settings(directory) if states else {}
    changes = list(previous.get("changes", []))
    for name, (recorded, new) in _changed(previous.get("settings", {}), settings).items():
        changes.append({"step": states[-1], "setting": name, "from": recorded, "to": new})
    atomic_io.write_file(os.path.join(directory, SETTINGS_FILE),
                         json.dumps({"settings": settings, "changes": changes}, indent=2, sort_keys=True) + "\n")


def _read_settings(directory):
    path = os.path.join(directory, SETTINGS_FILE)
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            recorded = json.load(f)
        if not isinstance(recorded, dict) or not isinstance(recorded.get("settings", {}), dict) or \
                not isinstance(recorded.get("changes", []), list):
            raise ValueError('expected an object {"settings": {...}, "changes": [...]}')
    except (ValueError, UnicodeDecodeError) as e:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"{path} is damaged ({e}); it records the settings this folder's training state was "
                         "trained with: repair it, or remove it and the next run records its own") from None
    return recorded


def _changed(recorded, settings):
    """{name: (recorded value, new value)} of the `settings` whose recorded value differs."""
    return {name: (recorded[name], value) for name, value in settings.items()
            if name in recorded and recorded[name] != value}


LABELS_FILE = "labels.txt"


# The files a run writes before it has produced anything (weights, results, predictions): a failed run removes
# an output folder it created that holds only these (`scripting.run`).
SETUP_FILES = (LABELS_FILE, CONFIG_FILE, SETTINGS_FILE)


def write_labels(output_dir, labels):
    """Writes `output_dir/labels.txt`: the label names in label-id order, one per line (what export_model.py
    needs to serve label strings), atomically. ValueError, with nothing written, when output_dir holds a model
    (weights or a training state) trained with other labels: its label ids mean those, and a resumed,
    evaluated or exported model would report them under this run's names."""
    for label in labels:
        if not label or "\n" in label or label != label.strip():
            raise ValueError(f"label {label!r}: labels must be non-empty, one line, without surrounding spaces")
    trained = read_labels(output_dir)
    if trained is not None and trained != list(labels) and (
            checkpoint_paths.steps(output_dir) or checkpoint_paths.state_steps(output_dir)):
        raise ValueError(f"{output_dir} holds a model trained with the labels {' '.join(trained)} ({LABELS_FILE}); "
                         f"this run's data has the labels {' '.join(labels)}: run it with the data that model was "
                         "trained on, or choose another output_dir")
    atomic_io.write_file(os.path.join(output_dir, LABELS_FILE), "".join(label + "\n" for label in labels))


def read_labels(output_dir):
    """The labels `write_labels` wrote in `output_dir`, or None when it has no labels.txt."""
    path = os.path.join(output_dir, LABELS_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def keep_best(output_dir, step, results):
    """Replaces `output_dir/best/` in one step by the weights of `step` (output_dir's model.ckpt-<step>, just
    saved by training), their `checkpoint` index, `results` as eval_results.txt and output_dir's labels.txt,
    so that `--init_checkpoint=output_dir/best` and export_model.py read them; best/ is never missing."""
    staging = atomic_io.temporary_path(os.path.join(output_dir, BEST_DIR))
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    for path in glob.glob(glob.escape(checkpoint_paths.checkpoint_prefix(output_dir, step)) + ".*"):
        shutil.copy2(path, staging)
    if os.path.exists(os.path.join(output_dir, LABELS_FILE)):
        shutil.copy2(os.path.join(output_dir, LABELS_FILE), staging)
    write_index(staging, step)
    write_results(staging, results)
    atomic_io.swap_directory(staging, os.path.join(output_dir, BEST_DIR))
