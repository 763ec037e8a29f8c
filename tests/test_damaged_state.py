"""Resume with a damaged newest training state: it is named in a warning and the previous intact state is
used (never a silent start from step 0), the older states are kept, and the run ends with the weights of
a run that was never damaged. With no intact state left, a clear error."""

import logging
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoint_paths
from tests.helpers.tiers import first_in_make_test
from tests.helpers.training import dataset_fn, make_trainer

STEPS = 6  # states at 2, 4, 6


@pytest.fixture(scope="module")
def trained(training_records, tmp_path_factory):
    """A model_dir trained for 6 steps, a state every 2, and its final weights."""
    model_dir = str(tmp_path_factory.mktemp("trained"))
    trainer = make_trainer(8, STEPS)
    trainer.train(dataset_fn(training_records), model_dir, STEPS, 2, 2)
    return model_dir, {n: v.numpy() for n, v in trainer.model.checkpoint_variables().items()}


def state(model_dir, step, suffix=".index"):
    return os.path.join(model_dir, checkpoint_paths.STATE_DIR, f"ckpt-{step}{suffix}")


def truncate(path):
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def flip(path):
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))


DAMAGE = {
    "missing_index": lambda d: os.remove(state(d, 6)),
    "truncated_index": lambda d: truncate(state(d, 6)),
    "flipped_index": lambda d: flip(state(d, 6)),
    "truncated_data": lambda d: truncate(state(d, 6, ".data-00000-of-00001")),
    "flipped_data": lambda d: flip(state(d, 6, ".data-00000-of-00001")),
    "missing_data_position": lambda d: os.remove(os.path.join(d, checkpoint_paths.STATE_DIR, "data_worker_0",
                                                              "ckpt-6.index")),
}


def resume(training_records, model_dir, caplog):
    trainer = make_trainer(8, STEPS)
    with caplog.at_level(logging.INFO, logger="absl"):
        trainer.train(dataset_fn(training_records), model_dir, STEPS, 2, 2)
    return trainer, [r.getMessage() for r in caplog.records]


@pytest.mark.parametrize("damage", first_in_make_test(DAMAGE, 2))
def test_damaged_newest_state_resumes_from_the_previous_one(trained, training_records, tmp_path, caplog, damage):
    original, final_weights = trained
    model_dir = str(tmp_path / "out")
    shutil.copytree(original, model_dir)
    DAMAGE[damage](model_dir)
    trainer, messages = resume(training_records, model_dir, caplog)
    warnings = [m for m in messages if m.startswith("Damaged training state")]
    assert len(warnings) == 1 and state(model_dir, 6, "") in warnings[0], messages
    assert any(m == f"Resumed from {state(model_dir, 4, '')} at step 4" for m in messages), messages
    assert trainer.step == STEPS
    for step in (2, 4, 6):  # the older states kept; the damaged one replaced by an intact one
        assert os.path.exists(state(model_dir, step)), step
    tf.train.load_checkpoint(state(model_dir, 6, ""))
    assert tf.train.latest_checkpoint(model_dir).endswith("model.ckpt-6")
    for name, value in trainer.model.checkpoint_variables().items():
        np.testing.assert_allclose(value.numpy(), final_weights[name], rtol=1e-6, atol=1e-7, err_msg=name)


def test_garbage_checkpoint_file_is_not_trusted(trained, training_records, tmp_path, caplog):
    """The state's `checkpoint` index file is not what resume reads: garbage there changes nothing."""
    original, final_weights = trained
    model_dir = str(tmp_path / "out")
    shutil.copytree(original, model_dir)
    with open(os.path.join(model_dir, checkpoint_paths.STATE_DIR, "checkpoint"), "w") as f:
        f.write("\x00garbage {{{ not a proto\n")
    trainer, messages = resume(training_records, model_dir, caplog)
    assert f"Resumed from {state(model_dir, 6, '')} at step 6" in messages
    assert not any(m.startswith("Damaged") for m in messages)
    for name, value in trainer.model.checkpoint_variables().items():
        np.testing.assert_array_equal(value.numpy(), final_weights[name], err_msg=name)


def test_no_intact_state_is_an_error_and_deletes_nothing(trained, training_records, tmp_path):
    original, _ = trained
    model_dir = str(tmp_path / "out")
    shutil.copytree(original, model_dir)
    for step in (2, 4, 6):
        truncate(state(model_dir, step, ".data-00000-of-00001"))
    before = sorted(os.listdir(os.path.join(model_dir, checkpoint_paths.STATE_DIR)))
    with pytest.raises(ValueError, match=r"training_state holds no training state this run can resume from: .*"
                                         r"ckpt-6: .*ckpt-4: .*ckpt-2: .*if it is damaged, move it away"):
        make_trainer(8, STEPS).train(dataset_fn(training_records), model_dir, STEPS, 2, 2)
    assert sorted(os.listdir(os.path.join(model_dir, checkpoint_paths.STATE_DIR))) == before
