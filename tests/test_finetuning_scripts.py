"""run_classifier.py, run_ner.py and run_swag.py end to end, as separate processes, on a tiny model (the real
uncased vocab, 2 layers of 32) for a few steps: every task family, every output file, bad input."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from bert_tf import BertConfig, load_checkpoint
from bert_tf.data.tasks import multiple_choice
from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice
from bert_tf.tokenization import FullTokenizer
from tests.helpers.configs import script_config, write_config
from tests.helpers.finetuning_scripts import ROOT, load_checkpoint_tensors, results, run, write_files
from tests.helpers.task_data import GLUE, SWAG_HEADER, SWAG_ROWS

pytestmark = pytest.mark.subprocess


@pytest.mark.slow
def test_mnli_train_eval_predict_then_eval_from_the_fine_tuned_checkpoint(tiny_model_dir, tmp_path):
    data = write_files(tmp_path, {k[len("MNLI/"):]: v for k, v in GLUE.items() if k.startswith("MNLI/")})
    out = tmp_path / "out"
    done = run("run_classifier.py", tiny_model_dir, task_name="MNLI", data_dir=data, output_dir=out, do_train=True,
               do_eval=True, do_predict=True, train_batch_size=1, num_train_epochs=2)
    assert done.returncode == 0, done.stderr[-3000:]
    trained = results(out)
    assert set(trained) == {"eval_accuracy", "eval_loss", "eval_mismatched_accuracy", "eval_mismatched_loss",
                            "global_step", "loss"}
    assert trained["global_step"] == 4 and (out / "model.ckpt-4.index").exists()
    probabilities = np.loadtxt(out / "test_results.tsv", ndmin=2)
    assert probabilities.shape == (1, 3) and abs(probabilities.sum() - 1) < 1e-6
    assert (out / "test_mismatched_results.tsv").exists()
    assert (out / "MNLI-mm.tsv").read_text().splitlines()[0] == "index\tprediction"
    again = run("run_classifier.py", tiny_model_dir, task_name="mnli", data_dir=data, output_dir=out, do_eval=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert results(out) == pytest.approx(trained)


@pytest.mark.slow
@pytest.mark.extended
def test_stsb_regression(tiny_model_dir, tmp_path):
    header, row = GLUE["STS-B/train.tsv"].splitlines()[:2]
    rows = [row.replace("\t5.000", f"\t{score:.3f}").replace("A plane", f"Plane {i}")
            for i, score in enumerate([0.0, 1.5, 2.0, 3.2, 4.4, 5.0])]
    data = write_files(tmp_path, {"train.tsv": "\n".join([header] + rows) + "\n",
                                  "dev.tsv": "\n".join([header] + rows[:4]) + "\n",
                                  "test.tsv": GLUE["STS-B/test.tsv"]})
    done = run("run_classifier.py", tiny_model_dir, task_name="STS-B", data_dir=data, output_dir=tmp_path / "out",
               do_train=True, do_eval=True, do_predict=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(results(tmp_path / "out")) == {"eval_loss", "eval_pearson", "eval_spearman", "global_step", "loss"}
    assert not (tmp_path / "out" / "labels.txt").exists()  # regression: no labels
    lines = (tmp_path / "out" / "STS-B.tsv").read_text().splitlines()
    assert len(lines) == 2 and lines[1].startswith("0\t") and float(lines[1].split("\t")[1]) == pytest.approx(
        float((tmp_path / "out" / "test_results.tsv").read_text()), abs=1e-3)


@pytest.mark.slow
@pytest.mark.extended
def test_custom_task_from_own_files(tiny_model_dir, tmp_path):
    rows = ["label\tmessage", "spam\tWIN a free prize now", "ham\tsee you at five", "spam\tclaim your cash",
            "ham\tok thanks", "ham\tcall me later"]
    data = write_files(tmp_path, {"train.tsv": "\n".join(rows) + "\n", "dev.tsv": "\n".join(rows[:4]) + "\n",
                                  "test.tsv": "message\nfree cash\nhello\n"})
    done = run("run_classifier.py", tiny_model_dir, task_name="custom", text_a_column="message", data_dir=data,
               output_dir=tmp_path / "out", do_train=True, do_eval=True, do_predict=True, truncation="head+tail")
    assert done.returncode == 0, done.stderr[-3000:]
    assert {"eval_accuracy", "eval_f1_spam", "eval_f1_ham", "eval_macro_f1"} <= set(results(tmp_path / "out"))
    assert np.loadtxt(tmp_path / "out" / "test_results.tsv").shape == (2, 2)
    assert (tmp_path / "out" / "labels.txt").read_text() == "ham\nspam\n"  # sorted training labels, for export


@pytest.mark.slow
@pytest.mark.extended
def test_best_checkpoint_and_early_stopping(tiny_model_dir, tmp_path):
    rows = ["label\tmessage", "spam\tWIN a free prize now", "ham\tsee you at five", "spam\tclaim your cash",
            "ham\tok thanks", "ham\tcall me later", "spam\tfree cash now", "ham\tsee you"]
    data = write_files(tmp_path, {"train.tsv": "\n".join(rows) + "\n", "dev.tsv": "\n".join(rows[:5]) + "\n"})
    out = tmp_path / "out"
    done = run("run_classifier.py", tiny_model_dir, task_name="custom", text_a_column="message", data_dir=data,
               output_dir=out, do_train=True, num_train_epochs=4, save_checkpoints_steps=2, best_metric="eval_loss",
               early_stopping_patience=2, learning_rate=0.5, seed=1)  # a learning rate that makes the dev loss worse
    assert done.returncode == 0, done.stderr[-3000:]
    evaluations = {int(step): float(loss) for step, loss in
                   re.findall(r"Dev evaluation at step (\d+): eval_loss = ([\d.e+-]+)", done.stderr)}
    best_step = min(evaluations, key=evaluations.get)
    stop = max(evaluations)  # two evaluations after the best one, well before the 14 steps of 4 epochs
    assert stop == best_step + 4 < 14 and f"Early stop at step {stop} of 14" in done.stderr, done.stderr[-3000:]
    best = results(out / "best")
    assert best["global_step"] == best_step and (out / "best" / f"model.ckpt-{best_step}.index").exists()
    assert best["eval_loss"] == pytest.approx(evaluations[best_step], rel=1e-5)
    assert (out / "best" / "labels.txt").read_text() == "ham\nspam\n"
    again = run("run_classifier.py", tiny_model_dir, task_name="custom", text_a_column="message", data_dir=data,
                output_dir=tmp_path / "from_best", do_eval=True, init_checkpoint=out / "best")
    assert again.returncode == 0, again.stderr[-3000:]
    assert results(tmp_path / "from_best")["eval_loss"] == pytest.approx(best["eval_loss"], rel=1e-5)
    assert results(tmp_path / "from_best")["global_step"] == best_step  # the step of best/, not 0
    bad = run("run_classifier.py", tiny_model_dir, task_name="custom", text_a_column="message", data_dir=data,
              output_dir=tmp_path / "bad", do_train=True, best_metric="eval_nothing")
    assert bad.returncode == 1 and "--best_metric=eval_nothing is not a dev result of this task" in bad.stderr


@pytest.mark.slow
def test_ner(tiny_model_dir, tmp_path):
    sentences = ("Paris B-geo-loc\nis O\nnice O\n\nI O\nmet O\nAnna B-person\nSmith I-person\n\n")
    data = write_files(tmp_path, {"train.txt": sentences * 2, "dev.txt": sentences, "test.txt": "Hello\nBerlin\n"})
    done = run("run_ner.py", tiny_model_dir, data_dir=data, output_dir=tmp_path / "out", do_train=True, do_eval=True,
               do_predict=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(results(tmp_path / "out")) == {"eval_precision", "eval_recall", "eval_f1", "eval_accuracy",
                                              "eval_loss", "global_step", "loss"}
    assert (tmp_path / "out" / "eval_predictions.txt").read_text().splitlines()[0].startswith("Paris B-geo-loc ")
    # Batches cut to their longest sentence (no XLA) have no fixed length: no tokens/s and no MFU (it once
    # reported 106.6% from the FLOPs of full-length batches).
    step_lines = re.findall(r"step \d+/\d+ \| loss .*", done.stderr)
    assert step_lines and not any("tokens/s" in line or "MFU" in line for line in step_lines), step_lines
    assert (tmp_path / "out" / "labels.txt").read_text().split() == ["O", "B-geo-loc", "B-person", "I-person"]
    assert [line.split()[0] for line in (tmp_path / "out" / "test_predictions.txt").read_text().split("\n")
            if line] == ["Hello", "Berlin"]


@pytest.mark.slow
def test_swag(tiny_model_dir, tmp_path):
    """The dev results and the test probabilities are those of the fine-tuned weights the run exported, on
    the examples of val.csv and test.csv in order, each choice scored alone."""
    test = SWAG_HEADER.replace(",label", "") + SWAG_ROWS.replace(",0\n", "\n").replace(",2\n", "\n")
    data = write_files(tmp_path, {"train.csv": SWAG_HEADER + SWAG_ROWS * 2, "val.csv": SWAG_HEADER + SWAG_ROWS,
                                  "test.csv": test})
    out = tmp_path / "out"
    done = run("run_swag.py", tiny_model_dir, data_dir=data, output_dir=out, do_train=True, do_eval=True,
               do_predict=True)
    assert done.returncode == 0, done.stderr[-3000:]
    evaluated = results(out)
    assert set(evaluated) == {"eval_accuracy", "eval_loss", "global_step", "loss"}
    probabilities = np.loadtxt(out / "test_results.tsv")
    assert probabilities.shape == (2, 4) and np.allclose(probabilities.sum(1), 1)

    config = BertConfig.from_json_file(tiny_model_dir["bert_config_file"])
    model = BertMultipleChoice(config)
    report = load_checkpoint(model, str(out))  # the newest model.ckpt-N, through the `checkpoint` index
    assert not report.missing and report.path.endswith(f"model.ckpt-{int(evaluated['global_step'])}")
    tokenizer = FullTokenizer(tiny_model_dir["vocab_file"], do_lower_case=True)

    def logits(name, split):
        features = multiple_choice.convert_examples(multiple_choice.read_swag(str(data / name), split), 32,
                                                    tokenizer)
        return model(features, training=False).numpy(), features["label_ids"]

    test_logits, _ = logits("test.csv", "test")
    expected = np.exp(test_logits - test_logits.max(1, keepdims=True))
    np.testing.assert_allclose(probabilities, expected / expected.sum(1, keepdims=True), atol=1e-5)
    dev_logits, labels = logits("val.csv", "dev")
    log_probs = dev_logits - np.log(np.exp(dev_logits).sum(1, keepdims=True))
    assert labels.tolist() == [0, 2]
    assert evaluated["eval_loss"] == pytest.approx(-log_probs[[0, 1], labels].mean(), rel=1e-4)
    assert evaluated["eval_accuracy"] == pytest.approx((dev_logits.argmax(1) == labels).mean())


def test_bad_input(tiny_model_dir, tmp_path):
    done = run("run_classifier.py", tiny_model_dir, task_name="glue", data_dir=tmp_path, output_dir=tmp_path / "out",
               do_train=True)
    assert done.returncode == 1 and "Error: unknown task 'glue'" in done.stderr


def test_a_run_that_fails_before_saving_weights_leaves_no_folder(tiny_model_dir, tmp_path):
    """A run refused after reading its data (here: an --init_checkpoint whose weights fail their checksum,
    found when they are loaded) used to leave labels.txt in the new --output_dir."""
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for path in tiny_model_dir["init_checkpoint"].parent.iterdir():
        data = bytearray(path.read_bytes())
        if ".data-" in path.name:
            data[len(data) // 4] ^= 0xFF
        (damaged / path.name).write_bytes(bytes(data))
    data = write_files(tmp_path / "mnli", {k[len("MNLI/"):]: v for k, v in GLUE.items() if k.startswith("MNLI/")})
    out = tmp_path / "new" / "out"
    done = run("run_classifier.py", tiny_model_dir, task_name="MNLI", data_dir=data, output_dir=out, do_train=True,
               init_checkpoint=damaged / "bert_model.ckpt")
    assert done.returncode == 1 and "Checksum does not match" in done.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
def test_a_changed_best_metric_chooses_best_again_and_an_unknown_one_is_refused_first(tiny_model_dir, tmp_path):
    """best/ used to change only when a new evaluation beat it: a rerun with another --best_metric said it kept
    the best of that metric while best/ held the step the first one chose. A --best_metric the task never
    reports was found at the first dev evaluation, after training, leaving files in a new folder."""
    data = write_files(tmp_path, {k[len("MNLI/"):]: v for k, v in GLUE.items() if k.startswith("MNLI/")})
    out = tmp_path / "out"
    flags = dict(task_name="MNLI", data_dir=data, output_dir=out, do_train=True, train_batch_size=1, seed=1,
                 num_train_epochs=2, save_checkpoints_steps=1, best_metric="eval_accuracy")
    unknown = run("run_classifier.py", tiny_model_dir, **{**flags, "best_metric": "eval_f1"})
    assert unknown.returncode == 1 and "Error: --best_metric=eval_f1 is not a dev result of this task; its dev " \
        "results are eval_accuracy, eval_loss, eval_mismatched_accuracy, eval_mismatched_loss, global_step, loss" \
        in unknown.stderr, unknown.stderr[-3000:]
    assert not out.exists() and "training" not in unknown.stderr
    trained = run("run_classifier.py", tiny_model_dir, **flags)
    assert trained.returncode == 0, trained.stderr[-3000:]
    history = {entry["step"]: entry["results"] for entry in map(json.loads, (out / "dev_evaluations.jsonl").open())}
    by_accuracy = max(sorted(history), key=lambda step: history[step]["eval_accuracy"])  # the first of the best
    by_loss = min(sorted(history), key=lambda step: history[step]["eval_loss"])
    assert by_accuracy != by_loss, history  # the data must make the two metrics choose differently
    assert results(out / "best")["global_step"] == by_accuracy
    rerun = run("run_classifier.py", tiny_model_dir, **{**flags, "best_metric": "eval_loss"})
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"best held step {by_accuracy}, which another --best_metric chose" in rerun.stderr
    assert results(out / "best")["global_step"] == by_loss
    assert (out / "best" / f"model.ckpt-{by_loss}.index").exists()
    assert json.loads((out / "training_settings.json").read_text())["settings"]["best_metric"] == "eval_loss"


@pytest.mark.slow
def test_reruns_that_do_not_fit_the_run_change_nothing_and_say_why(tiny_model_dir, tmp_path):
    """Another --bert_config_file: refused before anything is written (it used to replace bert_config.json
    first, then call the intact state damaged); other settings: a warning naming each, recorded; the
    --init_checkpoint's own folder as --output_dir: refused (it used to re-point that model's index)."""
    data = write_files(tmp_path, {k[len("MNLI/"):]: v for k, v in GLUE.items() if k.startswith("MNLI/")})
    out = tmp_path / "out"
    flags = dict(task_name="MNLI", data_dir=data, output_dir=out, do_train=True, train_batch_size=1)
    trained = run("run_classifier.py", tiny_model_dir, **flags)
    assert trained.returncode == 0, trained.stderr[-3000:]
    before = {path.name: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    other = write_config(tmp_path / "other_config.json", script_config(intermediate_size=40))
    refused = run("run_classifier.py", tiny_model_dir, **{**flags, "bert_config_file": other, "num_train_epochs": 2})
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        f"Error: {out} holds the training state of step 2 of a model with another config (bert_config.json: "
        "intermediate_size 37 (trained) vs 40); it is left unchanged. Rerun with the config it was trained with "
        "to resume it, or choose another --output_dir")
    assert {path.name: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before
    # A saved input position holds batches of the recorded size and order: another --train_batch_size used to
    # record the change, then fail with "TensorFlow InvalidArgumentError: Graph execution error:"; another
    # --group_by_length failed to restore the iterator. On JAX, a TensorFlow-written state was "not this
    # model's" (it used to invite moving the state away, to start from step 0).
    for changed, expected in (
            ({"train_batch_size": 2}, "trained with --train_batch_size=1, which its saved state (model, optimizer, "
                                      "input position, step count) depends on, so a resumed run cannot change it "
                                      "(this run: --train_batch_size=2). Rerun with --train_batch_size=1 to continue "
                                      "it"),
            ({"mixed_precision": "float16"}, "trained with --mixed_precision=float32, which "),
            ({"group_by_length": True}, "trained with --group_by_length=False, which "),
            ({"env": {"KERAS_BACKEND": "jax"}}, "ckpt-2 is a training state written on Keras's tensorflow backend; "
                                                "this run is on jax")):
        refused = run("run_classifier.py", tiny_model_dir, **{**flags, "num_train_epochs": 2, **changed})
        assert refused.returncode == 1, refused.stderr[-3000:]
        last = refused.stderr.strip().splitlines()[-1]
        assert last.startswith("Error: ") and expected in last, last
        assert f"--init_checkpoint={out} and another --output_dir; {out} is left unchanged" in last, last
        assert {path.name: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before
    resumed = run("run_classifier.py", tiny_model_dir, **{**flags, "num_train_epochs": 2, "learning_rate": 1e-4})
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert re.search(r"Resuming \S+ with other settings than it was trained with: --learning_rate 5e-05 -> 0.0001, "
                     r"--num_train_epochs 1.0 -> 2.0 \(recorded in training_settings.json\)", resumed.stderr)
    assert (out / "model.ckpt-4.index").exists() and "Resumed from" in resumed.stderr
    recorded = json.loads((out / "training_settings.json").read_text())
    assert recorded["settings"]["learning_rate"] == 1e-4 and recorded["changes"] == [
        {"step": 2, "setting": "learning_rate", "from": 5e-05, "to": 1e-4},
        {"step": 2, "setting": "num_train_epochs", "from": 1.0, "to": 2.0}]
    model_dir = tiny_model_dir["init_checkpoint"].parent
    into_model = run("run_classifier.py", tiny_model_dir, **{**flags, "output_dir": model_dir})
    assert into_model.returncode == 1
    assert into_model.stderr.strip().splitlines()[-1].startswith(
        f"Error: --output_dir={model_dir} is the folder of --init_checkpoint={tiny_model_dir['init_checkpoint']}: ")
    assert not (model_dir / "checkpoint").exists()


PYTHON_CLASSIFIER = """
import sys
from bert_tf import BertConfig
from bert_tf.training.classifier_run import ClassifierTask, run_classifier
from bert_tf.training.finetuning import FineTuningOptions
from bert_tf.training.finetuning_run import RunOptions

config_file, vocab_file, checkpoint, data_dir, output_dir = sys.argv[1:]
options = RunOptions(output_dir=output_dir, config=BertConfig.from_json_file(config_file), vocab_file=vocab_file,
                     init_checkpoint=checkpoint, max_seq_length=32, do_train=True, do_eval=True, do_predict=True,
                     training=FineTuningOptions(train_batch_size=1, num_train_epochs=2, seed=3))
print("RESULTS", run_classifier(options, ClassifierTask(data_dir=data_dir, task_name="mrpc")))
"""


@pytest.mark.slow
def test_fine_tuning_from_python_gives_the_commands_outputs(tiny_model_dir, tmp_path):
    """`run_classifier(RunOptions(...), ClassifierTask(...))`, what a notebook calls, writes what
    run_classifier.py writes with the same flags: eval_results.txt, test_results.tsv, the leaderboard file,
    labels.txt and the fine-tuned weights."""
    data = write_files(tmp_path, {k[len("MRPC/"):]: v for k, v in GLUE.items() if k.startswith("MRPC/")})
    command, python = tmp_path / "command", tmp_path / "python"
    done = run("run_classifier.py", tiny_model_dir, task_name="MRPC", data_dir=data, output_dir=command,
               do_train=True, do_eval=True, do_predict=True, train_batch_size=1, num_train_epochs=2, seed=3)
    assert done.returncode == 0, done.stderr[-3000:]
    args = [str(tiny_model_dir[name]) for name in ("bert_config_file", "vocab_file", "init_checkpoint")]
    called = subprocess.run([sys.executable, "-c", PYTHON_CLASSIFIER, *args, str(data), str(python)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert called.returncode == 0, called.stderr[-3000:]
    assert "RESULTS {" in called.stdout
    assert results(python) == pytest.approx(results(command), rel=1e-5)
    for name in ("test_results.tsv", "labels.txt", "MRPC.tsv"):
        assert (python / name).read_text() == (command / name).read_text(), name
    weights = [load_checkpoint_tensors(directory) for directory in (command, python)]
    assert sorted(weights[0]) == sorted(weights[1]) and len(weights[0]) > 20
    for name in weights[0]:
        if isinstance(weights[0][name], bytes):  # the embedded config
            assert weights[0][name] == weights[1][name], name
        else:
            np.testing.assert_allclose(weights[0][name], weights[1][name], rtol=1e-5, atol=1e-6, err_msg=name)
