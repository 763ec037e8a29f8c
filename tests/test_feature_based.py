"""The feature-based approach (Devlin et al. 2019, section 5.3, Table 7): the feature choices, ScalarMix
against NumPy, BertFeatureTagger on cached features equal to the same model on the fly, and run_ner.py
--feature_based: the encoder's variables bit-identical after training, the weighted sum's weights trained,
the usual output files, bad feature layers. The SavedModel export is in test_export_tasks.py."""

import re

import numpy as np
import pytest

from bert_tf import BertConfig
from bert_tf.checkpoints import open_checkpoint
from bert_tf.export import serving_models
from bert_tf.modeling.layers.scalar_mix import ScalarMix
from bert_tf.modeling.tasks.feature_tagger import BertFeatureTagger, resolve_feature_layers
from tests.helpers.finetuning_scripts import results, run, write_files
from tests.helpers.model_inputs import padded_inputs


def test_the_papers_six_feature_choices_and_explicit_layer_lists():
    expected = {"embeddings": ((0,), "concat"), "second_to_last": ((11,), "concat"), "last": ((12,), "concat"),
                "weighted_sum_last_four": ((9, 10, 11, 12), "weighted_sum"),
                "concat_last_four": ((9, 10, 11, 12), "concat"),
                "weighted_sum_all": (tuple(range(13)), "weighted_sum"), "3,7": ((3, 7), "concat")}
    assert {choice: resolve_feature_layers(choice, 12) for choice in expected} == expected
    for choice, message in {"13": "feature layer 13 does not exist: this model has layers 0 (the embeddings) to 12",
                            "-1": "feature layer -1 does not exist", "1,1": "a layer is listed twice",
                            "last_two": "expected one of embeddings, second_to_last"}.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            resolve_feature_layers(choice, 12)
    with pytest.raises(ValueError, match="'concat_last_four': this model has only 2 layers"):
        resolve_feature_layers("concat_last_four", 2)


def test_scalar_mix_is_a_softmax_weighted_sum_times_gamma():
    mix = ScalarMix(3)
    layers = np.random.default_rng(0).normal(size=(2, 5, 3, 4)).astype(np.float32)
    mix.build()
    np.testing.assert_allclose(mix(layers), layers.mean(axis=2), atol=1e-6)  # zeros: an equal average
    mix.layer_weights.assign([0.5, -1.0, 2.0])
    mix.gamma.assign(1.7)
    weights = np.exp([0.5, -1.0, 2.0]) / np.exp([0.5, -1.0, 2.0]).sum()
    np.testing.assert_allclose(mix(layers), 1.7 * np.einsum("k,btkh->bth", weights, layers), atol=1e-5)


@pytest.mark.parametrize("choice, width", [("last", 1), ("concat_last_four", 4), ("weighted_sum_all", 1)])
def test_cached_features_give_the_same_logits_as_running_the_frozen_encoder(choice, width):
    config = BertConfig(vocab_size=99, hidden_size=16, num_hidden_layers=4, num_attention_heads=2,
                        intermediate_size=24, max_position_embeddings=32)
    model = BertFeatureTagger(config, 3, choice, bilstm_size=5, bilstm_layers=1)
    inputs = padded_inputs(config, (4, 9))
    logits = model(inputs)
    cached = model.layer_features(inputs)
    indices, _ = resolve_feature_layers(choice, 4)
    outputs = model.encoder(inputs)
    layers = [outputs["embedding_output"], *outputs["encoder_outputs"]]
    np.testing.assert_array_equal(cached, np.stack([layers[i] for i in indices], axis=2))
    longer = np.pad(cached, [(0, 0), (0, 3), (0, 0), (0, 0)])  # cached at a longer T: cut to the inputs' T
    np.testing.assert_allclose(model({**inputs, "layer_features": longer}), logits, atol=1e-6)
    assert tuple(model.bilstm.checkpoint_variables()["layer_0/forward/kernel"].shape) == (width * 16, 20)
    assert not model.encoder.trainable and all(not v.path.startswith("bert/") for v in model.trainable_variables)
    assert ("bilstm/scalar_mix/layer_weights" in model.checkpoint_variables()) == (choice == "weighted_sum_all")


@pytest.mark.slow
@pytest.mark.subprocess
def test_run_ner_feature_based_trains_the_tagger_on_a_frozen_encoder(tiny_model_dir, tmp_path):
    sentences = "Paris B-loc\nis O\nnice O\n\nI O\nmet O\nAnna B-per\nSmith I-per\n\n"
    data = write_files(tmp_path, {"train.txt": sentences * 3, "dev.txt": sentences, "test.txt": "Hi\nBerlin\n"})
    out = tmp_path / "out"
    flags = {"feature_based": True, "feature_layers": "weighted_sum_all", "bilstm_size": 8, "bilstm_layers": 1}
    done = run("run_ner.py", tiny_model_dir, data_dir=data, output_dir=out, do_train=True, do_eval=True,
               do_predict=True, learning_rate=1e-2, **flags)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Cached the features of 6 sentences: 6x32x3x32 float32" in done.stderr
    assert {"eval_f1", "eval_accuracy", "eval_loss"} <= set(results(out))
    assert (out / "eval_predictions.txt").exists() and (out / "test_predictions.txt").exists()
    pretrained, trained = open_checkpoint(str(tiny_model_dir["init_checkpoint"])), open_checkpoint(str(out))
    encoder = [name for name in pretrained.shapes if name.startswith("bert/")]
    assert len(encoder) > 20
    for name in encoder:
        np.testing.assert_array_equal(trained.read(name), pretrained.read(name), err_msg=name)
    weights = trained.read("bilstm/scalar_mix/layer_weights")
    assert weights.shape == (3,) and np.abs(weights).max() > 1e-4  # trained from zeros
    assert trained.head == {"task_head": "bilstm", "bilstm_size": 8, "bilstm_layers": 1,
                            "feature_layers": "weighted_sum_all"}
    model, _ = serving_models.build_model("ner", BertConfig.from_dict(trained.config), str(out),
                                       label_list=["O", "B-loc", "B-per", "I-per"])
    assert isinstance(model, BertFeatureTagger) and model.layer_indices == (0, 1, 2)

    bad = run("run_ner.py", tiny_model_dir, data_dir=data, output_dir=tmp_path / "bad", do_train=True,
              feature_based=True, feature_layers="5")
    assert bad.returncode == 1
    assert "feature layer 5 does not exist: this model has layers 0 (the embeddings) to 2 (the last)" in bad.stderr
