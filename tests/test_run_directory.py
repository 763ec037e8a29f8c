"""The run directory's names and rules: step parsing, complete bundles only, retention that never deletes
the newest state, an index file that is checked rather than trusted, no silent use of older weights."""

import json
import os
import re

import numpy as np
import pytest

from bert_tf import checkpoint_paths, run_directory
from bert_tf.checkpoints import save_checkpoint


def bundle(directory, step, name=checkpoint_paths.EXPORT_NAME):
    save_checkpoint({"bert/x": np.full([3], step, np.float32)},
                    checkpoint_paths.checkpoint_prefix(directory, step, name))


def test_step_of():
    assert checkpoint_paths.step_of("/a/model.ckpt-12") == 12
    assert checkpoint_paths.step_of("training_state/ckpt-3") == 3
    assert checkpoint_paths.step_of("/a/best") is None and checkpoint_paths.step_of("bert_model.ckpt") is None


def test_a_bundle_without_its_index_is_not_a_checkpoint(tmp_path):
    for step in (1, 2):
        bundle(str(tmp_path), step)
    os.remove(tmp_path / "model.ckpt-2.index")
    assert checkpoint_paths.steps(str(tmp_path)) == [1]
    assert checkpoint_paths.incomplete_steps(str(tmp_path)) == [2]


def test_retention_keeps_the_newest_up_to_the_saved_step_and_drops_later_ones(tmp_path):
    directory = str(tmp_path)
    for step in range(1, 9):
        bundle(directory, step)
    run_directory.retain(directory, 6, keep=3)  # 7 and 8: left by a run that resumed before them
    assert checkpoint_paths.steps(directory) == [4, 5, 6]
    assert sorted(os.listdir(directory)) == sorted(f"model.ckpt-{s}.{e}" for s in (4, 5, 6)
                                                   for e in ("index", "data-00000-of-00001"))


@pytest.mark.parametrize("keep", [1, 3, run_directory.MAX_CHECKPOINTS_TO_KEEP])
def test_the_index_names_exactly_the_bundles_that_retention_keeps(tmp_path, keep):
    """As the loop saves: the bundle, the index, retention. The index used to name every step before the
    new one, so it listed model.ckpt-1 after retention had deleted it."""
    directory = str(tmp_path)
    for step in range(1, 9):
        bundle(directory, step)
        run_directory.write_index(directory, step, keep=keep)
        run_directory.retain(directory, step, keep=keep)
        with open(os.path.join(directory, checkpoint_paths.INDEX_FILE), encoding="utf-8") as f:
            named = [int(line.split("-")[-1].rstrip('"\n')) for line in f if line.startswith("all_model")]
        assert named == checkpoint_paths.steps(directory) == list(range(max(1, step - keep + 1), step + 1))


def test_index_file_is_checked_not_trusted(tmp_path):
    directory = str(tmp_path)
    bundle(directory, 2)
    run_directory.write_index(directory, 2)
    assert checkpoint_paths.indexed_step(directory) == 2
    (tmp_path / "checkpoint").write_text("\x00 garbage {{{\n")
    assert checkpoint_paths.indexed_step(directory) is None
    run_directory.write_index(directory, 5)  # names a bundle that is not there
    assert checkpoint_paths.indexed_step(directory) is None


def test_newest_export_refuses_weights_older_than_the_training_state(tmp_path):
    directory = str(tmp_path)
    state_dir = os.path.join(directory, checkpoint_paths.STATE_DIR)
    for step in (2, 4):
        bundle(directory, step)
        bundle(state_dir, step, checkpoint_paths.STATE_NAME)
    run_directory.write_index(directory, 4)
    assert checkpoint_paths.newest_export(directory) == os.path.join(directory, "model.ckpt-4")
    bundle(state_dir, 6, checkpoint_paths.STATE_NAME)  # killed after saving the state of step 6, before its export
    with pytest.raises(ValueError, match=r"training state is at step 6 but the newest exported weights are "
                                         r"model\.ckpt-4; .*rerun its command to finish the export"):
        checkpoint_paths.newest_export(directory)
    assert checkpoint_paths.newest_export(str(tmp_path / "empty")) is None


def test_settings_without_a_training_state_are_replaced_not_recorded_as_changes(tmp_path):
    """A run refused (or stopped) before its first save used to leave its settings, and the corrected rerun
    then recorded phantom changes at step 0."""
    run_directory.record_settings(str(tmp_path), {"learning_rate": 1.0, "train_batch_size": 2})
    run_directory.record_settings(str(tmp_path), {"learning_rate": 5e-5, "train_batch_size": 32})
    recorded = json.loads((tmp_path / run_directory.SETTINGS_FILE).read_text())
    assert recorded == {"settings": {"learning_rate": 5e-5, "train_batch_size": 32}, "changes": []}
    (tmp_path / checkpoint_paths.STATE_DIR).mkdir()
    (tmp_path / checkpoint_paths.STATE_DIR / "ckpt-7.index").write_bytes(b"")
    run_directory.record_settings(str(tmp_path), {"learning_rate": 1e-4, "train_batch_size": 32})
    recorded = json.loads((tmp_path / run_directory.SETTINGS_FILE).read_text())
    assert recorded["changes"] == [{"step": 7, "setting": "learning_rate", "from": 5e-5, "to": 1e-4}]


@pytest.mark.parametrize("text", ['{"settings": {"learning_rate": 0.1', '["learning_rate"]',
                                  '{"settings": [1, 2]}', b'\xff\xfe'])
def test_a_damaged_settings_file_is_named_in_one_line(tmp_path, text):
    """A JSON list used to end in an AttributeError; every damage now says which file and what to do."""
    path = tmp_path / run_directory.SETTINGS_FILE
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    (tmp_path / checkpoint_paths.STATE_DIR).mkdir()
    (tmp_path / checkpoint_paths.STATE_DIR / "ckpt-1.index").write_bytes(b"")
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))} is damaged \(.+\); it records the settings "
                                         "this folder's training state was trained with: repair it, or remove it"):
        run_directory.record_settings(str(tmp_path), {"learning_rate": 1.0})


def test_labels_of_a_trained_model_are_not_replaced_by_other_ones(tmp_path):
    """A rerun on data with other labels used to write its labels.txt over the trained model's, then fail to
    resume it (or, with as many labels, resume and evaluate it under the wrong names)."""
    run_directory.write_labels(str(tmp_path), ["neg", "pos"])
    run_directory.write_labels(str(tmp_path), ["bad", "good"])  # no model yet: this run's labels replace them
    bundle(str(tmp_path), 3)
    run_directory.write_labels(str(tmp_path), ["bad", "good"])  # the same labels: fine
    with pytest.raises(ValueError, match=rf"^{re.escape(str(tmp_path))} holds a model trained with the labels bad "
                                         "good \\(labels.txt\\); this run's data has the labels good bad: "):
        run_directory.write_labels(str(tmp_path), ["good", "bad"])
    assert run_directory.read_labels(str(tmp_path)) == ["bad", "good"]


def test_best_chosen_again_among_the_kept_weights_when_the_metric_changes(tmp_path, caplog):
    """best/ held the best eval_loss (step 8); by eval_accuracy the best is step 2, whose weights retention
    removed: best/ takes the best of the kept steps 4-8 (step 5), and the log says both."""
    from absl import logging as absl_logging

    from bert_tf.training.best_checkpoint import BestCheckpoint

    out = str(tmp_path)
    accuracy = {1: 0.5, 2: 0.9, 3: 0.6, 4: 0.7, 5: 0.8, 6: 0.8, 7: 0.6, 8: 0.7}
    history = {step: {"eval_accuracy": accuracy[step], "eval_loss": 1.0 / step, "global_step": step}
               for step in accuracy}
    (tmp_path / run_directory.EVALUATIONS_FILE).write_text(
        "".join(json.dumps({"step": step, "results": history[step]}) + "\n" for step in history))
    for step in range(4, 9):
        bundle(out, step)
    run_directory.keep_best(out, 8, history[8])
    assert BestCheckpoint(out, "eval_loss").best == 1.0 / 8  # the metric that chose best/: nothing to do
    assert checkpoint_paths.indexed_step(os.path.join(out, "best")) == 8
    with caplog.at_level(absl_logging.WARNING):
        best = BestCheckpoint(out, "eval_accuracy")
    assert checkpoint_paths.indexed_step(os.path.join(out, "best")) == 5
    assert run_directory.read_results(os.path.join(out, "best"))["eval_accuracy"] == 0.8
    assert "held step 8, which another best_metric chose (its eval_accuracy is 0.7); by eval_accuracy it holds " \
        "step 5 (0.8)" in caplog.text
    assert "The best eval_accuracy of" in caplog.text and "is step 2's (0.9), whose weights retention has removed" \
        in caplog.text
    assert best.best == 0.9  # early stopping still counts from the best evaluation
