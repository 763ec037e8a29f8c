"""The run directory's names and rules: step parsing, complete bundles only, retention that never deletes
the newest state, an index file that is checked rather than trusted, no silent use of older weights."""

import os

import numpy as np
import pytest

from bert_tf import run_directory
from bert_tf.checkpoints import save_checkpoint


def bundle(directory, step, name=run_directory.EXPORT_NAME):
    save_checkpoint({"bert/x": np.full([3], step, np.float32)}, run_directory.checkpoint_prefix(directory, step, name))


def test_step_of():
    assert run_directory.step_of("/a/model.ckpt-12") == 12
    assert run_directory.step_of("training_state/ckpt-3") == 3
    assert run_directory.step_of("/a/best") is None and run_directory.step_of("bert_model.ckpt") is None


def test_a_bundle_without_its_index_is_not_a_checkpoint(tmp_path):
    for step in (1, 2):
        bundle(str(tmp_path), step)
    os.remove(tmp_path / "model.ckpt-2.index")
    assert run_directory.steps(str(tmp_path)) == [1]
    assert run_directory.incomplete_steps(str(tmp_path)) == [2]


def test_retention_keeps_the_newest_up_to_the_saved_step_and_drops_later_ones(tmp_path):
    directory = str(tmp_path)
    for step in range(1, 9):
        bundle(directory, step)
    run_directory.retain(directory, 6, keep=3)  # 7 and 8: left by a run that resumed before them
    assert run_directory.steps(directory) == [4, 5, 6]
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
        with open(os.path.join(directory, run_directory.INDEX_FILE), encoding="utf-8") as f:
            named = [int(line.split("-")[-1].rstrip('"\n')) for line in f if line.startswith("all_model")]
        assert named == run_directory.steps(directory) == list(range(max(1, step - keep + 1), step + 1))


def test_index_file_is_checked_not_trusted(tmp_path):
    directory = str(tmp_path)
    bundle(directory, 2)
    run_directory.write_index(directory, 2)
    assert run_directory.indexed_step(directory) == 2
    (tmp_path / "checkpoint").write_text("\x00 garbage {{{\n")
    assert run_directory.indexed_step(directory) is None
    run_directory.write_index(directory, 5)  # names a bundle that is not there
    assert run_directory.indexed_step(directory) is None


def test_newest_export_refuses_weights_older_than_the_training_state(tmp_path):
    directory = str(tmp_path)
    state_dir = os.path.join(directory, run_directory.STATE_DIR)
    for step in (2, 4):
        bundle(directory, step)
        bundle(state_dir, step, run_directory.STATE_NAME)
    run_directory.write_index(directory, 4)
    assert run_directory.newest_export(directory) == os.path.join(directory, "model.ckpt-4")
    bundle(state_dir, 6, run_directory.STATE_NAME)  # killed after saving the state of step 6, before its export
    with pytest.raises(ValueError, match=r"training state is at step 6 but the newest exported weights are "
                                         r"model\.ckpt-4; .*rerun its command to finish the export"):
        run_directory.newest_export(directory)
    assert run_directory.newest_export(str(tmp_path / "empty")) is None
