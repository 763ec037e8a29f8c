"""BertDropout: the drop rate, the scaling, its gradient, no correlation between masks, determinism from the seed
state, and no-op outside training."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling.layers.dropout import BertDropout


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_drops_the_rate_and_scales_the_rest(dtype):
    layer = BertDropout(0.1, seed=3, dtype=dtype.name)  # a layer computes in its policy's dtype
    x = tf.ones((301, 777), dtype)  # an odd element count
    y = layer(x, training=True).numpy().astype(np.float32)
    dropped = float(np.mean(y == 0))
    assert abs(dropped - 0.1) < 0.003, dropped  # 233,877 draws: 5 standard deviations ~ 0.003
    np.testing.assert_allclose(np.unique(y), [0.0, np.float32(tf.constant(1 / 0.9, dtype).numpy())], rtol=1e-6)
    assert layer(x, training=True).dtype == dtype
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x.numpy())


def test_masks_change_per_call_and_repeat_from_the_seed_state():
    layer = BertDropout(0.5, seed=7)
    x = tf.ones((64, 64))
    state = layer.seed_generator.state.numpy()
    first, second = (layer(x, training=True).numpy() for _ in range(2))
    assert (first != second).any()
    layer.seed_generator.state.assign(state)
    np.testing.assert_array_equal(layer(x, training=True).numpy(), first)
    row = np.mean(first == 0, axis=1)  # no structure across rows: every row near 0.5
    assert row.min() > 0.25 and row.max() < 0.75


def test_gradient_is_the_scale_where_kept_and_zero_where_dropped():
    layer = BertDropout(0.3, seed=5)
    x = tf.random.normal((50, 70), seed=1)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
    gradient = tape.gradient(y, x, output_gradients=tf.ones_like(y)).numpy()
    kept = y.numpy() != 0
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_allclose(gradient[kept], 1 / 0.7, rtol=1e-6)
    assert not gradient[~kept].any()


def test_masks_are_uncorrelated_between_neighbours_rows_and_calls():
    """The hash of consecutive indices and of consecutive keys must look independent: over 262,144 pairs the
    correlation of two independent masks has a standard deviation of 0.002, so each bound is 5 of them."""
    layer = BertDropout(0.5, seed=11)
    x = tf.ones((512, 512))
    first, second = ((layer(x, training=True).numpy() != 0).astype(np.float64) for _ in range(2))
    pairs = {"neighbours in a row": (first[:, :-1], first[:, 1:]), "neighbouring rows": (first[:-1], first[1:]),
             "two calls": (first, second)}
    for name, (a, b) in pairs.items():
        correlation = np.corrcoef(a.ravel(), b.ravel())[0, 1]
        assert abs(correlation) < 0.01, (name, correlation)


def test_rate_checks():
    with pytest.raises(ValueError, match=r"dropout rate=1.0 must be in \[0, 1\)"):
        BertDropout(1.0)
    x = tf.ones((4, 4))
    np.testing.assert_array_equal(BertDropout(0.0)(x, training=True).numpy(), x.numpy())
