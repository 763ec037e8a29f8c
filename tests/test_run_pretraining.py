"""run_pretraining.py end to end (subprocesses): the original's records and flags, eval_results.txt, resume,
two-phase training, dynamic masking, MLM-only, and clear errors for bad input before any training step."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.pretraining.masking import num_to_predict
from bert_tf.tokenization import load_vocab
from tests.helpers import pretraining_records
from tests.helpers.configs import script_config, write_config
from tests.helpers.pretraining_script import PREDICTIONS, ROOT, SEQ, base_args, run

pytestmark = pytest.mark.subprocess


def read_eval_results(output_dir):
    with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as f:
        return dict(line.strip().split(" = ") for line in f)


@pytest.mark.slow
def test_original_records_train_evaluate_and_resume(pretraining_data, tmp_path):
    """Records of Google's create_pretraining_data.py train unchanged; eval_results.txt in the original
    format; a rerun with more steps resumes from the last checkpoint."""
    output_dir = str(tmp_path / "out")
    output = run(base_args(pretraining_data, output_dir))
    assert re.search(r"step 6/6 \| loss [\d.]+ \| masked_lm_accuracy [\d.]+ .*examples/s \| \d+ tokens/s \| MFU",
                     output)
    assert output.count("Eval at step") == 3  # before training, at the checkpoint of step 3, at the end
    results = read_eval_results(output_dir)
    assert sorted(results) == ["global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
                               "masked_lm_perplexity", "next_sentence_accuracy", "next_sentence_loss"]
    assert results["global_step"] == "6" and 0 < float(results["masked_lm_loss"]) < 11
    assert tf.train.latest_checkpoint(output_dir).endswith("model.ckpt-6")
    assert os.path.isfile(os.path.join(output_dir, "bert_config.json"))
    with open(os.path.join(output_dir, "bert_config.json"), "rb") as f:
        config_bytes = f.read()
    other = write_config(tmp_path / "other.json", script_config(hidden_size=64, num_attention_heads=4))
    error = run(base_args(pretraining_data, output_dir, bert_config_file=other, num_train_steps=9), expect_error=True)
    assert error == (f"Error: {output_dir} holds the training state of step 6 of a model with another config "
                     "(bert_config.json: hidden_size 32 (trained) vs 64); it is left unchanged. Rerun with the config "
                     "it was trained with to resume it, or choose another --output_dir")
    with open(os.path.join(output_dir, "bert_config.json"), "rb") as f:
        assert f.read() == config_bytes  # it used to be replaced before the refusal
    output = run(base_args(pretraining_data, output_dir, num_train_steps=9, do_eval=False))
    assert "Resumed from" in output and "at step 6" in output and "step 9/9" in output
    assert "other settings than it was trained with: --num_train_steps 6 -> 9" in output


@pytest.mark.slow
@pytest.mark.extended
def test_two_phase_training_mlm_only_and_eval_only(pretraining_data, tmp_path):
    """Phase 2 at a longer sequence length starts from phase 1's output_dir (every weight carries over); the
    MLM-only variant has no NSP metrics; do_eval alone evaluates the latest checkpoint."""
    phase1 = str(tmp_path / "phase1")
    run(base_args(pretraining_data, phase1, do_eval=False, pretraining_objective="mlm"))
    long_records = pretraining_records.write_records(tmp_path / "long.tfrecord", 64, max_seq_length=64,
                                                     max_predictions=10)
    phase2 = str(tmp_path / "phase2")
    output = run(base_args(pretraining_data, phase2, input_file=long_records, init_checkpoint=phase1,
                           max_seq_length=64, max_predictions_per_seq=10, num_train_steps=3,
                           pretraining_objective="mlm"))
    assert re.search(r"Loaded native checkpoint .*phase1/model.ckpt-6: 44 mapped, 2 ignored, 0 missing", output)
    assert sorted(read_eval_results(phase2)) == ["global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
                                                 "masked_lm_perplexity"]
    eval_dir = str(tmp_path / "eval_only")
    output = run(base_args(pretraining_data, eval_dir, do_train=False, init_checkpoint=phase1))
    assert "step 1/" not in output and read_eval_results(eval_dir)["global_step"] == "0"


# run_pretraining.main with the flags after the first two arguments; the Trainer's first STEPS batches of
# training data (what the script's dataset_fn gives it) are saved to OUT.npz before it trains on them.
CAPTURE_RUNNER = """
import sys
import numpy as np
from absl import flags
from bert_tf.cli import run_pretraining
from bert_tf.training import loop

out, steps = sys.argv[1], int(sys.argv[2])
train = loop.Trainer.train

def capturing_train(self, dataset_fn, *args, **kwargs):
    dataset = dataset_fn(self.input_context(), self.per_worker_batch_size).take(steps)
    batches = list(dataset.as_numpy_iterator())
    np.savez(out, **{name: np.concatenate([b[name] for b in batches]) for name in batches[0]})
    return train(self, dataset_fn, *args, **kwargs)

loop.Trainer.train = capturing_train
flags.FLAGS(["run_pretraining.py"] + sys.argv[3:])
run_pretraining.main([])
"""


@pytest.mark.slow
@pytest.mark.extended
def test_dynamic_masking_with_our_create_pretraining_data(pretraining_data, tmp_path):
    """Unmasked records of create_pretraining_data.py --dynamic_masking, masked by run_pretraining.py
    --dynamic_masking (--masked_lm_prob=0.2, up to 10 predictions) as it trains: per sequence the original's
    count of predictions, never [CLS], [SEP] or padding, labels the record's ids, 80/10/10 [MASK]/random/kept,
    and other positions at every draw of the same record."""
    records = str(tmp_path / "unmasked.tfrecord")
    run({"input_file": pretraining_data["text"], "output_file": records, "vocab_file": pretraining_data["vocab"],
         "max_seq_length": SEQ, "max_predictions_per_seq": PREDICTIONS, "dupe_factor": 1, "dynamic_masking": True,
         "num_workers": 1}, script="create_pretraining_data.py")
    spec = {name: tf.io.FixedLenFeature([SEQ], tf.int64) for name in ("input_ids", "input_mask", "segment_ids")}
    unmasked = tf.io.parse_example([r.numpy() for r in tf.data.TFRecordDataset(records)], spec)
    originals = {ids.astype(np.int32).tobytes() for ids in unmasked["input_ids"].numpy()}
    batch_size, steps = 8, 3 * len(originals) // 8  # three epochs of training batches
    output_dir, capture = str(tmp_path / "out"), str(tmp_path / "batches.npz")
    args = base_args(pretraining_data, output_dir, input_file=records, dynamic_masking=True, masked_lm_prob=0.2,
                     max_predictions_per_seq=10, vocab_file=pretraining_data["vocab"], num_train_steps=3,
                     train_batch_size=batch_size)
    result = subprocess.run([sys.executable, "-c", CAPTURE_RUNNER, capture, str(steps)]
                            + [f"--{k}={v}" for k, v in args.items()], cwd=ROOT, capture_output=True, text=True,
                            timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    results = read_eval_results(output_dir)
    assert results["global_step"] == "3" and 0 < float(results["masked_lm_loss"]) < 11

    vocab = load_vocab(pretraining_data["vocab"])
    cls_id, sep_id, mask_id = vocab["[CLS]"], vocab["[SEP]"], vocab["[MASK]"]
    with np.load(capture) as batches:
        ids, lengths = batches["input_ids"], batches["input_mask"].sum(1)
        positions, labels, weights = (batches[k] for k in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"))
    assert len(ids) == steps * batch_size and positions.shape[1] == 10
    counts = (weights > 0).sum(1)
    np.testing.assert_array_equal(counts, [num_to_predict(n, 0.2, 10) for n in lengths])
    assert abs(counts.sum() / lengths.sum() - 0.2) < 0.02  # about masked_lm_prob of the tokens
    draws, by_mask, by_random, kept = {}, 0, 0, 0
    for row in range(len(ids)):
        k = counts[row]
        chosen = positions[row][:k]
        assert (np.diff(chosen) > 0).all() and (chosen > 0).all() and (chosen < lengths[row]).all()
        assert not positions[row][k:].any() and not labels[row][k:].any() and not weights[row][k:].any()
        original = ids[row].copy()
        original[chosen] = labels[row][:k]
        assert original.tobytes() in originals, row  # only the chosen positions changed; labels: their ids
        assert not np.isin(labels[row][:k], [cls_id, sep_id]).any()
        by_mask += (ids[row][chosen] == mask_id).sum()
        kept += (ids[row][chosen] == labels[row][:k]).sum()
        by_random += ((ids[row][chosen] != mask_id) & (ids[row][chosen] != labels[row][:k])).sum()
        draws.setdefault(original.tobytes(), []).append(tuple(chosen))
    total = counts.sum()
    for count, rate in ((by_mask, 0.8), (by_random, 0.1), (kept, 0.1)):
        assert abs(count / total - rate) < 4 * (rate * (1 - rate) / total) ** 0.5, (count, total, rate)
    repeated = [d for d in draws.values() if len(d) > 1]
    assert len(repeated) > 0.5 * len(originals)  # three epochs: most records drawn more than once
    assert np.mean([len(set(d)) == len(d) for d in repeated]) > 0.9  # a new mask at every draw


# Runs run_pretraining.main on several command lines in one process (one TensorFlow start-up instead of one
# per case) and prints `Error: <message>` for each, as scripting.run does.
CASES_RUNNER = """
import json, sys
from absl import flags
from bert_tf.cli import run_pretraining, scripting
for argv in json.loads(sys.argv[1]):
    flags.FLAGS.unparse_flags()
    flags.FLAGS(["run_pretraining.py"] + argv)
    try:
        run_pretraining.main([])
        print("NO ERROR")
    except (ValueError, OSError) as e:
        print("Error:", scripting.error_line(e))  # the command's line: parameters named as its flags
"""


def test_bad_input_fails_before_training(pretraining_data, tmp_path):
    vocab99 = tmp_path / "vocab.txt"
    vocab99.write_text("".join(f"t{i}\n" for i in range(99)))
    config99 = write_config(tmp_path / "config99.json", script_config(vocab_size=99))
    file = tmp_path / "file"
    file.write_text("not a directory")
    cases = [
        ({"max_seq_length": 64}, r"records have input_ids of length 32 but --max_seq_length=64; pass the value"),
        ({"max_predictions_per_seq": 20}, r"masked_lm_positions of length 5 but --max_predictions_per_seq=20"),
        ({"vocab_file": str(vocab99)}, r"has 99 tokens but the config says vocab_size=30522"),
        ({"bert_config_file": str(config99)}, r"token id \d+ but the config's vocab_size=99; the records were made"),
        ({"input_file": "/nonexistent/*.tfrecord"}, r"input file pattern '/nonexistent/\*.tfrecord' matches no file"),
        ({"output_dir": str(file / "out")}, r"\[Errno 20\] Not a directory"),
        ({"do_train": False, "do_eval": False}, r"At least one of `do_train` or `do_eval` must be True"),
        ({"dynamic_masking": True}, r"--dynamic_masking needs --vocab_file"),
        ({"dynamic_masking": True, "vocab_file": pretraining_data["vocab"]},
         r"records are already masked; drop --dynamic"),
        ({"max_seq_length": 600}, r"max_seq_length=600 must be between 2 and the config's max_position_emb"),
    ]
    base = base_args(pretraining_data, str(tmp_path / "out"))
    argvs = [[f"--{k}={v}" for k, v in {**base, **overrides}.items()] for overrides, _ in cases]
    result = subprocess.run([sys.executable, "-c", CASES_RUNNER, json.dumps(argvs)], cwd=ROOT,
                            capture_output=True, text=True, timeout=240)
    errors = [line for line in result.stdout.splitlines() if line.startswith(("Error:", "NO ERROR"))]
    assert len(errors) == len(cases), result.stdout + result.stderr[-3000:]
    for (overrides, message), error in zip(cases, errors):
        assert re.search(message, error), (overrides, error)
    assert not os.path.exists(tmp_path / "out" / "training_state")  # nothing trained


def test_script_error_is_one_line(pretraining_data, tmp_path):
    error = run(base_args(pretraining_data, str(tmp_path / "out"), max_seq_length=64), expect_error=True)
    assert "records have input_ids of length 32 but --max_seq_length=64" in error


PYTHON_RUN = """
import sys
from bert_tf import BertConfig
from bert_tf.training.pretraining import PretrainingOptions, pretrain

records, output_dir, config_file = sys.argv[1:]
options = PretrainingOptions(input_file=records, output_dir=output_dir, config=BertConfig.from_json_file(config_file),
                             max_seq_length={seq}, max_predictions_per_seq={predictions}, do_eval=True,
                             train_batch_size=8, eval_batch_size=8, learning_rate=1e-3, num_train_steps=4,
                             num_warmup_steps=2, save_checkpoints_steps=2, iterations_per_loop=2, max_eval_steps=2,
                             seed=7, deterministic=True)
print("RESULTS", pretrain(options))
"""


@pytest.mark.slow
@pytest.mark.extended  # the family's first case in make test: tests/test_finetuning_scripts.py's
def test_pretraining_from_python_gives_the_commands_outputs(pretraining_data, tmp_path):
    """`pretrain(PretrainingOptions(...))`, what a notebook calls, writes what run_pretraining.py writes with
    the same flags: the same final weights bit for bit (deterministic ops, one seed) and the same results."""
    command_dir, python_dir = str(tmp_path / "command"), str(tmp_path / "python")
    run(base_args(pretraining_data, command_dir, num_train_steps=4, save_checkpoints_steps=2, iterations_per_loop=2,
                  max_eval_steps=2, seed=7, deterministic=True))
    script = PYTHON_RUN.format(seq=SEQ, predictions=PREDICTIONS)
    done = subprocess.run([sys.executable, "-c", script, pretraining_data["records"], python_dir,
                           pretraining_data["config"]], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RESULTS {" in done.stdout
    assert read_eval_results(python_dir) == read_eval_results(command_dir)
    command, python = (tf.train.load_checkpoint(os.path.join(d, "model.ckpt-4")) for d in (command_dir, python_dir))
    names = sorted(command.get_variable_to_shape_map())
    assert names == sorted(python.get_variable_to_shape_map()) and len(names) > 20
    for name in names:
        np.testing.assert_array_equal(command.get_tensor(name), python.get_tensor(name), err_msg=name)
