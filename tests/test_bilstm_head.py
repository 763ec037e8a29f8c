"""--task_head=bilstm (Devlin et al. 2019, Table 5 "+ BiLSTM"): SequenceBiLSTM against a NumPy LSTM, each
fine-tuning model's BiLSTM head against NumPy on the encoder's outputs, the head's checkpoint names and
embedded options (what export_model.py rebuilds it from), and run_ner.py with it: a new head over a linear
one, and the same flags required to evaluate it. The SavedModel export is in test_export_tasks.py."""

import numpy as np
import pytest

from bert_tf import conversion, load_checkpoint, save_checkpoint
from bert_tf.checkpoints import open_checkpoint
from bert_tf.export import serving_models
from bert_tf.modeling.layers.sequence_bilstm import SequenceBiLSTM
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice
from bert_tf.modeling.tasks.span_labeler import PADDING_LOGIT, BertSpanLabeler
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from tests.helpers.finetuning_scripts import results, run, write_files
from tests.helpers.model_inputs import padded_inputs

BILSTM = {"task_head": "bilstm", "bilstm_size": 6, "bilstm_layers": 2}


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_lstm(x, mask, kernel, recurrent_kernel, bias, backwards):
    """One LSTM direction in float64, Keras' gates (input, forget, cell, output): outputs [B, T, U] (0 at
    padding) and the final state [B, U] (carried unchanged over padding)."""
    batch, length, _ = x.shape
    units = recurrent_kernel.shape[0]
    h, c, outputs = np.zeros((batch, units)), np.zeros((batch, units)), np.zeros((batch, length, units))
    for t in (range(length - 1, -1, -1) if backwards else range(length)):
        i, f, g, o = np.split(x[:, t] @ kernel + h @ recurrent_kernel + bias, 4, axis=-1)
        new_c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        new_h = sigmoid(o) * np.tanh(new_c)
        real = mask[:, t, None] == 1
        c, h = np.where(real, new_c, c), np.where(real, new_h, h)
        outputs[:, t] = np.where(real, new_h, 0)
    return outputs, h


def numpy_bilstm(layer, x, mask):
    """SequenceBiLSTM's documented outputs, computed in NumPy with its weights: (sequence, final)."""
    weights = {name: variable.numpy().astype(np.float64) for name, variable in layer.checkpoint_variables().items()}
    x = np.asarray(x, np.float64)
    for i in range(layer.num_layers):
        directions = [numpy_lstm(x, mask, *(weights[f"layer_{i}/{direction}/{name}"] for name in
                                            ("kernel", "recurrent_kernel", "bias")), backwards=direction == "backward")
                      for direction in ("forward", "backward")]
        x = np.concatenate([directions[0][0], directions[1][0]], axis=-1)
    return x, np.concatenate([directions[0][1], directions[1][1]], axis=-1)


def test_sequence_bilstm_is_a_masked_bidirectional_lstm(tiny_config):
    layer = SequenceBiLSTM(5, num_layers=2)
    x = np.random.default_rng(1).normal(size=(4, 9, 7)).astype(np.float32)
    mask = padded_inputs(tiny_config, (4, 9))["input_mask"]
    sequence, final = layer(x, mask)
    expected_sequence, expected_final = numpy_bilstm(layer, x, mask)
    assert sequence.shape == (4, 9, 10) and final.shape == (4, 10)
    np.testing.assert_allclose(sequence, expected_sequence, atol=1e-5)
    np.testing.assert_allclose(final, expected_final, atol=1e-5)
    assert np.all(np.asarray(sequence)[mask == 0] == 0)
    assert sorted(layer.checkpoint_variables()) == sorted(
        f"layer_{i}/{d}/{n}" for i in range(2) for d in ("forward", "backward")
        for n in ("kernel", "recurrent_kernel", "bias"))


def linear_logits(model, features):
    weights = model.checkpoint_variables()
    scope = "cls/squad/bilstm/" if isinstance(model, BertSpanLabeler) else "bilstm/"
    return features @ weights[scope + "output_weights"].numpy().T + weights[scope + "output_bias"].numpy()


@pytest.mark.parametrize("make, shape, level", [
    (lambda c: BertClassifier(c, 3, **BILSTM), (5, 8), "sentence"),
    (lambda c: BertMultipleChoice(c, **BILSTM), (3, 4, 8), "sentence"),
    (lambda c: BertTokenClassifier(c, 4, **BILSTM), (5, 8), "token"),
    (lambda c: BertSpanLabeler(c, **BILSTM), (5, 8), "token"),
], ids=["classifier", "multiple_choice", "token_classifier", "span_labeler"])
def test_each_model_feeds_the_documented_bilstm_outputs_to_its_output_layer(tiny_config, make, shape, level):
    """Sentence-level heads read the final forward and backward states, token-level heads every position."""
    model = make(tiny_config)
    inputs = padded_inputs(tiny_config, shape)
    flat = {name: value.reshape(-1, shape[-1]) for name, value in inputs.items()}
    got = model(inputs)
    sequence = model.encoder(flat)["sequence_output"].numpy()
    bilstm_sequence, bilstm_final = numpy_bilstm(model.bilstm, sequence, flat["input_mask"])
    if level == "sentence":
        expected = linear_logits(model, bilstm_final).reshape(got.shape)
        np.testing.assert_allclose(got, expected, atol=1e-5)
    else:
        expected = linear_logits(model, bilstm_sequence)
        if isinstance(got, dict):  # the span labeler: its padding is out of the softmax and of the n-best
            got = np.stack([got["start_logits"], got["end_logits"]], axis=-1)
            expected[flat["input_mask"] == 0] = PADDING_LOGIT
        np.testing.assert_allclose(got, expected, atol=1e-5)
    assert not model.encoder.pooler.trainable  # the BiLSTM reads the sequence output


def test_a_linear_checkpoint_leaves_the_bilstm_head_missing_and_the_options_travel_in_the_checkpoint(
        tiny_config, tmp_path):
    linear = BertClassifier(tiny_config, 3)
    save_checkpoint(linear, str(tmp_path / "linear" / "model.ckpt-1"), tiny_config)
    bilstm = BertClassifier(tiny_config, 3, **BILSTM)
    report = load_checkpoint(bilstm, str(tmp_path / "linear" / "model.ckpt-1"))
    head = sorted(name for name in bilstm.checkpoint_variables() if not name.startswith("bert/"))
    assert head == sorted(["bilstm/output_weights", "bilstm/output_bias"] + [
        f"bilstm/layer_{i}/{d}/{n}" for i in range(2) for d in ("forward", "backward")
        for n in ("kernel", "recurrent_kernel", "bias")])
    assert report.missing == head and report.head is None
    assert report.ignored["output_weights"] == "not part of this model"
    assert "cls/squad/bilstm/layer_1/backward/kernel" in BertSpanLabeler(tiny_config, **BILSTM).checkpoint_variables()

    prefix = str(tmp_path / "bilstm" / "model.ckpt-2")
    save_checkpoint(bilstm, prefix, tiny_config, bilstm.head_options())
    assert open_checkpoint(prefix).head == BILSTM and linear.head_options() is None
    exported, _ = serving_models.build_model("classifier", tiny_config, prefix, label_list=["a", "b", "c"])
    assert exported.head_options() == BILSTM
    inputs = padded_inputs(tiny_config, (5, 8))
    np.testing.assert_array_equal(exported(inputs), bilstm(inputs))
    with pytest.raises(ValueError, match="has a bilstm task head .* pass model_type=encoder"):
        conversion.convert(prefix, str(tmp_path / "hf"), "huggingface", tiny_config, vocab_file="vocab.txt")
    assert not (tmp_path / "hf").exists()


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended  # the BiLSTM head's SavedModel in make test: tests/test_export_tasks.py
def test_run_ner_trains_a_bilstm_head_over_a_linear_one_and_needs_its_flags_to_evaluate(tiny_model_dir, tmp_path):
    sentences = "Paris B-loc\nis O\nnice O\n\nI O\nmet O\nAnna B-per\nSmith I-per\n\n"
    data = write_files(tmp_path, {"train.txt": sentences * 2, "dev.txt": sentences})
    linear = run("run_ner.py", tiny_model_dir, data_dir=data, output_dir=tmp_path / "linear", do_train=True)
    assert linear.returncode == 0, linear.stderr[-3000:]
    bilstm_flags = {"task_head": "bilstm", "bilstm_size": 8, "bilstm_layers": 1}
    done = run("run_ner.py", {**tiny_model_dir, "init_checkpoint": tmp_path / "linear"}, data_dir=data,
               output_dir=tmp_path / "bilstm", do_train=True, do_eval=True, **bilstm_flags)
    assert done.returncode == 0, done.stderr[-3000:]
    assert ("has a linear head, unused: --task_head=bilstm --bilstm_size=8 --bilstm_layers=1 trains a new head from "
            "random weights") in done.stderr
    assert "missing (kept at initial value): bilstm/layer_0/forward/kernel" in done.stderr
    assert {"eval_f1", "eval_loss"} <= set(results(tmp_path / "bilstm"))
    assert open_checkpoint(str(tmp_path / "bilstm")).head == {"task_head": "bilstm", "bilstm_size": 8,
                                                              "bilstm_layers": 1}
    again = run("run_ner.py", tiny_model_dir, data_dir=data, output_dir=tmp_path / "bilstm", do_eval=True)
    assert again.returncode == 1
    assert ("was fine-tuned with --task_head=bilstm --bilstm_size=8 --bilstm_layers=1; pass the same options to "
            "evaluate or predict with it (this run has --task_head=linear)") in again.stderr
    dead = run("run_ner.py", tiny_model_dir, data_dir=data, output_dir=tmp_path / "dead", do_train=True,
               bilstm_size=8)
    assert dead.returncode == 1 and "--bilstm_size is for --task_head=bilstm, not --task_head=linear" in dead.stderr
