import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertEncoder
from bert_tf.modeling.layers.activations import gelu, gelu_tanh
from bert_tf.modeling.layers.attention import BertSelfAttention
from bert_tf.modeling.layers.transformer import BertTransformerLayer
from tests.helpers.model_inputs import random_inputs

BATCH, SEQ = 13, 7  # random_inputs' defaults


def google_names(num_layers):
    names = ["bert/embeddings/word_embeddings", "bert/embeddings/token_type_embeddings",
             "bert/embeddings/position_embeddings", "bert/embeddings/LayerNorm/gamma",
             "bert/embeddings/LayerNorm/beta", "bert/pooler/dense/kernel", "bert/pooler/dense/bias"]
    for i in range(num_layers):
        layer = f"bert/encoder/layer_{i}/"
        for dense in ("attention/self/query", "attention/self/key", "attention/self/value",
                      "attention/output/dense", "intermediate/dense", "output/dense"):
            names += [layer + dense + "/kernel", layer + dense + "/bias"]
        for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
            names += [layer + norm + "/gamma", layer + norm + "/beta"]
    return sorted(names)


def test_output_shapes_and_dtypes(tiny_config):
    encoder = BertEncoder(tiny_config)
    outputs = encoder(random_inputs(tiny_config), output_attention_probs=True)
    assert outputs["sequence_output"].shape == (BATCH, SEQ, 32)
    assert outputs["pooled_output"].shape == (BATCH, 32)
    assert outputs["embedding_output"].shape == (BATCH, SEQ, 32)
    assert [o.shape for o in outputs["encoder_outputs"]] == [(BATCH, SEQ, 32)] * 2
    assert [p.shape for p in outputs["attention_probs"]] == [(BATCH, 4, SEQ, SEQ)] * 2
    np.testing.assert_array_equal(outputs["encoder_outputs"][-1], outputs["sequence_output"])
    assert "attention_probs" not in encoder(random_inputs(tiny_config))


def test_variables_carry_google_checkpoint_names(tiny_config):
    encoder = BertEncoder(tiny_config)
    names = encoder.checkpoint_variables()
    assert sorted(names) == google_names(2)
    assert tuple(names["bert/encoder/layer_1/intermediate/dense/kernel"].shape) == (32, 37)
    assert tuple(names["bert/encoder/layer_1/output/dense/kernel"].shape) == (37, 32)
    assert tuple(names["bert/embeddings/token_type_embeddings"].shape) == (3, 32)


def test_names_are_the_same_inside_another_model(tiny_config):
    encoder = BertEncoder(tiny_config)
    inputs = {k: keras.Input((None,), dtype="int32", name=k) for k in ("input_ids", "input_mask", "segment_ids")}
    wrapper = keras.Model(inputs, keras.layers.Dense(2, name="head")(encoder(inputs)["pooled_output"]),
                          name="classifier")
    assert wrapper.count_params() == encoder.count_params() + 66
    assert sorted(encoder.checkpoint_variables()) == google_names(2)


def test_attention_masks_padding(tiny_config):
    """Padding positions get zero attention and do not change the outputs at real positions."""
    encoder = BertEncoder(tiny_config)
    ids = np.array([[5, 6, 7, 8]], np.int32)
    short = encoder({"input_ids": ids, "input_mask": np.ones_like(ids)}, output_attention_probs=True)
    padded_ids = np.pad(ids, ((0, 0), (0, 3)), constant_values=0)
    padded = encoder({"input_ids": padded_ids, "input_mask": (np.arange(7) < 4)[None].astype(np.int32)},
                     output_attention_probs=True)
    np.testing.assert_allclose(padded["sequence_output"][:, :4], short["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(padded["pooled_output"], short["pooled_output"], atol=1e-5)
    probs = padded["attention_probs"][0].numpy()
    assert np.abs(probs[..., 4:]).max() < 1e-4
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_skip_padding_gives_the_padded_outputs_at_real_tokens_and_zeros_at_padding(tiny_config, policy):
    """skip_padding=True (the Transformer layers on the real tokens only) in a traced function, as the
    embedder serves: the same outputs at real positions, zeros at padding, the same attention probabilities of
    the real queries; a row without real tokens (a client's all-zero mask) gives zeros, not an error."""
    keras.config.set_dtype_policy(policy)
    try:
        encoder = BertEncoder(tiny_config)
    finally:
        keras.config.set_dtype_policy("float32")
    inputs = random_inputs(tiny_config, batch=13, seq=9)
    inputs["input_mask"][3] = 0
    mask = inputs["input_mask"].astype(bool)
    assert 0 < mask.sum() < mask.size / 1.2  # padding to skip
    padded = encoder(inputs, output_attention_probs=True)
    packed = tf.function(lambda x: encoder(x, output_attention_probs=True, skip_padding=True))(inputs)
    tolerance = 1e-5 if policy == "float32" else 2e-2
    for name in ("sequence_output", "pooled_output"):
        want, got = padded[name].numpy(), packed[name].numpy()
        real = mask if name == "sequence_output" else mask.any(1)
        np.testing.assert_allclose(got[real], want[real], atol=tolerance)
    for want, got in zip(padded["encoder_outputs"], packed["encoder_outputs"]):
        np.testing.assert_allclose(got.numpy()[mask], want.numpy()[mask], atol=tolerance)
        assert not got.numpy()[~mask].any()
    for want, got in zip(padded["attention_probs"], packed["attention_probs"]):  # [B, heads, T, T]: real queries
        np.testing.assert_allclose(np.swapaxes(got.numpy(), 1, 2)[mask], np.swapaxes(want.numpy(), 1, 2)[mask],
                                   atol=tolerance)


def test_segment_ids_and_positions_matter(tiny_config):
    encoder = BertEncoder(tiny_config)
    inputs = random_inputs(tiny_config)
    base = encoder(inputs)["sequence_output"].numpy()
    flipped = dict(inputs, segment_ids=1 - inputs["segment_ids"])
    assert np.abs(encoder(flipped)["sequence_output"].numpy() - base).max() > 1e-3
    defaults = encoder({"input_ids": inputs["input_ids"]})["sequence_output"].numpy()
    explicit = encoder({"input_ids": inputs["input_ids"], "input_mask": np.ones((BATCH, SEQ), np.int32),
                        "segment_ids": np.zeros((BATCH, SEQ), np.int32)})["sequence_output"].numpy()
    np.testing.assert_array_equal(defaults, explicit)


def test_variable_sequence_length_up_to_the_position_table(tiny_config):
    encoder = BertEncoder(tiny_config)
    for seq in (1, 5, 64):
        assert encoder(random_inputs(tiny_config, batch=2, seq=seq))["sequence_output"].shape == (2, seq, 32)
    with pytest.raises(ValueError, match="sequence length 65 exceeds max_position_embeddings=64"):
        encoder(random_inputs(tiny_config, batch=2, seq=65))


def test_dropout_only_in_training(tiny_config):
    encoder = BertEncoder(tiny_config)
    inputs = random_inputs(tiny_config)
    a = encoder(inputs, training=False)["sequence_output"].numpy()
    np.testing.assert_array_equal(a, encoder(inputs, training=False)["sequence_output"].numpy())
    assert np.abs(encoder(inputs, training=True)["sequence_output"].numpy() - a).max() > 1e-3


def test_bad_input_keys(tiny_config):
    with pytest.raises(ValueError, match="expected input_ids and optionally input_mask, segment_ids"):
        BertEncoder(tiny_config)({"ids": np.ones((1, 3), np.int32)})


def test_gelu_is_exact_erf_and_tanh_is_the_approximation():
    x = np.linspace(-4, 4, 101).astype(np.float32)
    erf = np.array([0.5 * v * (1 + __import__("math").erf(v / np.sqrt(2))) for v in x.astype(np.float64)])
    tanh = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(gelu(x), erf, atol=1e-6)
    np.testing.assert_allclose(gelu_tanh(x), tanh, atol=1e-6)
    assert np.abs(erf - tanh).max() > 1e-4  # the two are really different functions


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_attention_scales_the_query_only_where_that_gives_the_same_bits(policy):
    """1/sqrt(head size) is applied to the query when it is a power of two (head size 64, as in BERT-Base), and
    then the layer's outputs are bit-identical to scaling the float32 logits; head size 32 (MiniLM) keeps the
    logits multiply."""
    assert not BertSelfAttention(12, 384).scales_query
    hidden = np.random.RandomState(0).normal(size=(3, 9, 128)).astype(np.float32)
    mask = np.ones((3, 9), np.int32)
    mask[1, 5:] = 0
    keras.mixed_precision.set_global_policy(policy)
    try:
        layers = [BertSelfAttention(2, 128) for _ in range(2)]
    finally:
        keras.mixed_precision.set_global_policy("float32")
    for layer in layers:
        layer.build(hidden.shape)
    layers[1].set_weights(layers[0].get_weights())
    assert layers[0].scales_query and layers[1].scales_query
    layers[1].scales_query = False
    (context, probs), (want_context, want_probs) = (layer(hidden, mask) for layer in layers)
    np.testing.assert_array_equal(np.asarray(context, np.float32), np.asarray(want_context, np.float32))
    np.testing.assert_array_equal(probs.numpy(), want_probs.numpy())
    assert np.abs(probs.numpy() - 1 / 9).max() > 1e-3  # the logits are not all equal: the scale is exercised


def test_mixed_precision_keeps_the_residual_stream_in_float32():
    """With every dense weight zero a block's output is LayerNorm(LayerNorm(hidden)): under mixed_bfloat16 it
    must equal the float32 block's exactly, which it would not if the residual were rounded to bfloat16."""
    hidden = np.random.RandomState(0).normal(size=(2, 5, 16)).astype(np.float32)
    mask = np.ones((2, 5), np.int32)
    outputs = {}
    for policy in ("float32", "mixed_bfloat16"):
        keras.mixed_precision.set_global_policy(policy)
        try:
            block = BertTransformerLayer(16, 4, 32)
            block.build(hidden.shape)
            for variable in block.weights:
                if variable.path.endswith(("kernel", "bias")):
                    variable.assign(np.zeros(variable.shape, np.float32))
            outputs[policy] = block(hidden, mask)[0].numpy()
        finally:
            keras.mixed_precision.set_global_policy("float32")
    assert not np.array_equal(hidden, hidden.astype(tf.bfloat16.as_numpy_dtype).astype(np.float32))
    np.testing.assert_array_equal(outputs["mixed_bfloat16"], outputs["float32"])


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_keeps_softmax_and_layer_norm_in_float32(tiny_config, policy):
    inputs = random_inputs(tiny_config)
    reference = BertEncoder(tiny_config)
    expected = reference(inputs, output_attention_probs=True)
    keras.mixed_precision.set_global_policy(policy)
    try:
        mixed = BertEncoder(tiny_config)
        mixed.build()
        for variable, source in zip(mixed.weights, reference.weights):
            variable.assign(source)
        outputs = mixed(inputs, output_attention_probs=True)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert all(v.dtype == "float32" for v in mixed.weights)
    assert outputs["attention_probs"][0].dtype == tf.float32
    assert outputs["sequence_output"].dtype == tf.float32  # a float32 LayerNorm's output
    assert outputs["pooled_output"].dtype == tf.dtypes.as_dtype(policy.split("_")[1])
    assert np.isfinite(outputs["sequence_output"].numpy()).all()
    np.testing.assert_allclose(outputs["sequence_output"], expected["sequence_output"], atol=0.1)
    np.testing.assert_allclose(outputs["attention_probs"][1], expected["attention_probs"][1], atol=0.02)

