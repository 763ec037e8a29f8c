"""BertDropout: the drop rate, the scaling, determinism from the seed state, and no-op outside training."""

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


def test_rate_checks():
    with pytest.raises(ValueError, match=r"dropout rate=1.0 must be in \[0, 1\)"):
        BertDropout(1.0)
    x = tf.ones((4, 4))
    np.testing.assert_array_equal(BertDropout(0.0)(x, training=True).numpy(), x.numpy())
