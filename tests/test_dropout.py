"""BertDropout: the drop rate, the scaling, its gradient, no correlation between masks, determinism from the seed
state, and no-op outside training. On the Keras backend of the process (tests/test_backends.py runs it on JAX):
the TensorFlow backend's hashed kernel and the other backends' keras.random.dropout meet the same bounds."""

import keras
import numpy as np
import pytest
from keras import ops

from bert_tf.modeling.layers.dropout import BertDropout
from tests.helpers.gradients import gradients_of


def numpy(value):
    return ops.convert_to_numpy(ops.cast(value, "float32"))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_drops_the_rate_and_scales_the_rest(dtype):
    layer = BertDropout(0.1, seed=3, dtype=dtype)  # a layer computes in its policy's dtype
    x = ops.ones((301, 777), dtype)  # an odd element count
    y = numpy(layer(x, training=True))
    dropped = float(np.mean(y == 0))
    assert abs(dropped - 0.1) < 0.003, dropped  # 233,877 draws: 5 standard deviations ~ 0.003
    np.testing.assert_allclose(np.unique(y), [0.0, numpy(ops.cast(1 / 0.9, dtype))], rtol=1e-6)
    assert keras.backend.standardize_dtype(layer(x, training=True).dtype) == dtype
    np.testing.assert_array_equal(numpy(layer(x, training=False)), numpy(x))


def test_masks_change_per_call_and_repeat_from_the_seed_state():
    layer = BertDropout(0.5, seed=7)
    x = ops.ones((64, 64))
    state = ops.convert_to_numpy(layer.seed_generator.state)
    first, second = (numpy(layer(x, training=True)) for _ in range(2))
    assert (first != second).any()
    layer.seed_generator.state.assign(state)
    np.testing.assert_array_equal(numpy(layer(x, training=True)), first)
    row = np.mean(first == 0, axis=1)  # no structure across rows: every row near 0.5
    assert row.min() > 0.25 and row.max() < 0.75


class _Scaled(keras.layers.Layer):
    """BertDropout of a trainable input, so that the gradient w.r.t. the input is a weight's gradient."""

    def __init__(self, dropout, shape):
        super().__init__()
        self.dropout = dropout
        self.x = self.add_weight(shape=shape, initializer=keras.initializers.RandomNormal(seed=1), name="x")

    def call(self, training=None):
        return self.dropout(self.x, training=training)


def test_gradient_is_the_scale_where_kept_and_zero_where_dropped():
    layer = _Scaled(BertDropout(0.3, seed=5), (50, 70))
    state = ops.convert_to_numpy(layer.dropout.seed_generator.state)
    _, (gradient,) = gradients_of(layer, lambda: ops.sum(layer(training=True)))
    layer.dropout.seed_generator.state.assign(state)  # the same mask again
    kept = numpy(layer(training=True)) != 0
    gradient = numpy(gradient)
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_allclose(gradient[kept], 1 / 0.7, rtol=1e-6)
    assert not gradient[~kept].any()


def test_masks_are_uncorrelated_between_neighbours_rows_and_calls():
    """The masks of consecutive indices and of consecutive calls must look independent: over 262,144 pairs the
    correlation of two independent masks has a standard deviation of 0.002, so each bound is 5 of them."""
    layer = BertDropout(0.5, seed=11)
    x = ops.ones((512, 512))
    first, second = ((numpy(layer(x, training=True)) != 0).astype(np.float64) for _ in range(2))
    pairs = {"neighbours in a row": (first[:, :-1], first[:, 1:]), "neighbouring rows": (first[:-1], first[1:]),
             "two calls": (first, second)}
    for name, (a, b) in pairs.items():
        correlation = np.corrcoef(a.ravel(), b.ravel())[0, 1]
        assert abs(correlation) < 0.01, (name, correlation)


def test_rate_checks():
    with pytest.raises(ValueError, match=r"dropout rate=1.0 must be in \[0, 1\)"):
        BertDropout(1.0)
    x = ops.ones((4, 4))
    np.testing.assert_array_equal(numpy(BertDropout(0.0)(x, training=True)), numpy(x))
