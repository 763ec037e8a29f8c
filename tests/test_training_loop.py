"""The custom training loop: distribution, accumulation, mixed precision, checkpoints, resume, NaN stop.

Multi-device runs are subprocesses (tests/helpers/train_worker.py): logical CPU devices and multi-worker collectives
must be configured before TensorFlow starts.
"""

import glob
import json
import os
import signal
import socket
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertEncoder
from bert_tf.checkpoints import load_checkpoint
from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from bert_tf.training import flops, loop, trainers
from tests.helpers import pretraining_records
from tests.helpers.training import dataset_fn, make_trainer, pretraining_config, summary_losses

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(args, env=None, **popen):
    command = [sys.executable, "-m", "tests.helpers.train_worker"] + [f"--{k}" if v is True else f"--{k}={v}"
                                                              for k, v in args.items()]
    return subprocess.Popen(command, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **popen)


def finish(process, timeout=240):
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, output[-3000:]
    return output


@pytest.mark.slow
@pytest.mark.subprocess
def test_mirrored_and_multi_worker_match_one_device(training_records, tmp_path):
    """20 XLA steps, global batch 8: one device, mirrored over 2 logical CPUs, 2 local worker processes."""
    common = {"records": training_records, "steps": 20, "batch_size": 8, "use_xla": True}
    ports = [free_port(), free_port()]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    runs = {
        "one_device": [worker({**common, "model_dir": tmp_path / "one"})],
        "mirrored": [worker({**common, "model_dir": tmp_path / "mirrored", "strategy": "mirrored",
                             "logical_cpus": 2})],
        "multi_worker": [worker({**common, "model_dir": tmp_path / "multi", "strategy": "multi_worker_mirrored"},
                                env={"TF_CONFIG": json.dumps({"cluster": cluster,
                                                              "task": {"type": "worker", "index": i}})})
                         for i in range(2)],
    }
    outputs = {name: [finish(p) for p in processes] for name, processes in runs.items()}
    assert "2 replica(s) in sync, worker 1 of 2" in outputs["multi_worker"][1]
    assert "2 replica(s) in sync" in outputs["mirrored"][0]
    expected = summary_losses(tmp_path / "one")
    assert sorted(expected) == list(range(1, 21))
    for name, directory in (("mirrored", "mirrored"), ("multi_worker", "multi")):
        got = summary_losses(tmp_path / directory)
        assert sorted(got) == sorted(expected), name
        np.testing.assert_allclose([got[s] for s in sorted(got)], [expected[s] for s in sorted(expected)],
                                   atol=1e-4, err_msg=name)
    assert expected[20] < expected[1] - 0.5  # it learns
    assert sorted(os.listdir(tmp_path / "multi" / "training_state")) == [
        "checkpoint", "ckpt-20.data-00000-of-00001", "ckpt-20.index", "data_worker_0", "data_worker_1"]


@pytest.mark.slow
@pytest.mark.extended
def test_gradient_accumulation_matches_a_large_batch(training_records, tmp_path):
    """Batch 32 in 4 micro-batches of 8 == batch 32 at once, after 5 steps (dropout off)."""
    weights = []
    for accumulation in (1, 4):
        trainer = make_trainer(32, 5, accumulation)
        trainer.train(dataset_fn(training_records), str(tmp_path / f"acc{accumulation}"), 5, 5, 5)
        weights.append({n: v.numpy() for n, v in trainer.model.checkpoint_variables().items()})
    for name in weights[0]:
        np.testing.assert_allclose(weights[1][name], weights[0][name], atol=1e-5, err_msg=name)
    losses = [summary_losses(tmp_path / f"acc{a}")[5] for a in (1, 4)]
    assert losses[0] == pytest.approx(losses[1], abs=1e-5)


@pytest.mark.slow
@pytest.mark.subprocess
def test_kill_and_resume_matches_an_uninterrupted_run(training_records, tmp_path):
    """SIGKILL mid-run, rerun the same command: it resumes (model, optimizer, RNG, data position) and ends
    with the same weights as a run that was never interrupted (deterministic ops, dropout on, shuffled)."""
    args = {"records": training_records, "steps": 120, "batch_size": 8, "dropout": 0.1, "shuffle": True,
            "steps_per_loop": 5, "save_every": 10}
    finish(worker({**args, "model_dir": tmp_path / "straight", "weights_out": tmp_path / "straight.npz"}))
    resumed = {**args, "model_dir": tmp_path / "resumed", "weights_out": tmp_path / "resumed.npz"}
    process = worker(resumed)
    for line in process.stdout:
        if "step 40/120" in line:
            process.send_signal(signal.SIGKILL)
            break
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    state = tf.train.latest_checkpoint(str(tmp_path / "resumed" / "training_state"))
    assert state is not None and not state.endswith("ckpt-120")
    output = finish(worker(resumed))
    assert "Resumed from" in output and "step 120/120" in output
    straight, again = np.load(tmp_path / "straight.npz"), np.load(tmp_path / "resumed.npz")
    for name in straight:
        np.testing.assert_array_equal(again[name], straight[name], err_msg=name)
    losses, expected = summary_losses(tmp_path / "resumed"), summary_losses(tmp_path / "straight")
    assert losses[120] == expected[120]


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(training_records, tmp_path):
    trainer = make_trainer(8, 10, learning_rate=1e30)
    with pytest.raises(loop.NonFiniteLossError, match=r"loss is nan in steps 2-2; training stopped\. The last good "
                                                      r"checkpoint is kept: .*ckpt-1"):
        trainer.train(dataset_fn(training_records), str(tmp_path), 10, 1, 1)
    assert tf.train.latest_checkpoint(str(tmp_path / "training_state")).endswith("ckpt-1")
    assert not glob.glob(str(tmp_path / "training_state" / "ckpt-2*"))


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_trains(training_records, tmp_path, policy):
    keras.mixed_precision.set_global_policy(policy)
    try:
        trainer = make_trainer(16, 12, learning_rate=3e-3)
        trainer.train(dataset_fn(training_records), str(tmp_path), 12, 4, 12)
        losses = summary_losses(tmp_path)
        if policy == "mixed_float16":
            assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer)
            assert float(trainer.optimizer.dynamic_scale.numpy()) > 0
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert all(np.isfinite(v) for v in losses.values())
    assert losses[12] < losses[4]
    assert trainer.model.encoder.weights[0].dtype == "float32"


def log_softmax(logits):
    logits = logits - logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def reference_metrics(model, batches):
    """The original's eval metrics computed in NumPy from the model's logits."""
    mlm_loss, mlm_hits, mlm_weight, nsp_loss, nsp_hits, nsp_count, batch_losses = 0, 0, 0, 0, 0, 0, []
    for batch in batches:
        outputs = {k: v.numpy() for k, v in model(batch, training=False).items()}
        ids, weights = batch["masked_lm_ids"].numpy(), batch["masked_lm_weights"].numpy()
        log_probs = log_softmax(outputs["masked_lm_logits"])
        losses = -np.take_along_axis(log_probs, ids[..., None], -1)[..., 0]
        labels = batch["next_sentence_labels"].numpy()[:, 0]
        nsp = -np.take_along_axis(log_softmax(outputs["next_sentence_logits"]), labels[:, None], -1)[:, 0]
        mlm_loss, mlm_weight = mlm_loss + (losses * weights).sum(), mlm_weight + weights.sum()
        mlm_hits += ((log_probs.argmax(-1) == ids) * weights).sum()
        nsp_loss, nsp_count = nsp_loss + nsp.sum(), nsp_count + len(nsp)
        nsp_hits += (outputs["next_sentence_logits"].argmax(-1) == labels).sum()
        batch_losses.append((losses * weights).sum() / weights.sum() + nsp.mean())
    return {"masked_lm_loss": mlm_loss / mlm_weight, "masked_lm_accuracy": mlm_hits / mlm_weight,
            "next_sentence_loss": nsp_loss / nsp_count, "next_sentence_accuracy": nsp_hits / nsp_count,
            "loss": np.mean(batch_losses)}


@pytest.mark.slow
def test_weights_export_loads_anywhere_and_evaluate_matches_numpy(training_records, tmp_path):
    """model.ckpt-N has Google's names (encoder and heads load it through the `checkpoint` index file);
    Trainer.evaluate computes the original's eval metrics."""
    trainer = make_trainer(16, 6)
    trainer.train(dataset_fn(training_records), str(tmp_path), 6, 3, 3)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-6")
    encoder = BertEncoder(pretraining_config())
    assert len(load_checkpoint(encoder, str(tmp_path)).mapped) == len(encoder.weights)
    pretrainer = BertPretrainer(pretraining_config())
    report = load_checkpoint(pretrainer, str(tmp_path / "model.ckpt-3"))
    assert not report.missing and "cls/predictions/output_bias" in report.mapped
    eval_data = pretraining_records.read_records(training_records, 16, repeat=False).take(5)
    ours = trainer.evaluate(eval_data, 5, model_dir=str(tmp_path))
    expected = reference_metrics(trainer.model, eval_data)
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value, abs=1e-5), key
    assert ours["global_step"] == 6
    assert glob.glob(str(tmp_path / "eval" / "events*"))


def test_bad_batch_and_clipping_configuration():
    trainer = make_trainer(8, 1)
    with pytest.raises(ValueError, match="train batch size 30 is not a multiple of 1 replica"):
        trainers.create_trainer(trainer.devices.strategy, trainer.model, trainer.optimizer, 30,
                                num_accumulation_steps=4)
    clipped = keras.optimizers.Adam(global_clipnorm=1.0)
    with pytest.raises(ValueError, match="clip gradients with create_trainer"):
        trainers.create_trainer(trainer.devices.strategy, trainer.model, clipped, 8)


def test_training_flops_count_the_encoder_and_the_masked_lm_head():
    config = BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                        intermediate_size=3072)
    encoder_params = 12 * (4 * 768 * 768 + 2 * 768 * 3072)  # Transformer matmul weights, biases left out
    expected = 6 * encoder_params * 128 + 12 * 12 * 768 * 128 * 128 + 6 * 20 * (768 * 768 + 768 * 30522)
    assert flops.training_flops_per_example(config, 128, 20) == expected
