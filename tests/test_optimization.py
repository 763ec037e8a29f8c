"""The optimizers and schedule, checked against Google's original TF1 optimizer (bert-tensorflow)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training import optimization
from tools.original_bert import import_original

SHAPES = {"layer/kernel": (5, 3), "layer/bias": (3,), "LayerNorm/gamma": (3,), "output_weights": (3, 2)}


def initial_values():
    rng = np.random.default_rng(7)
    return {name: rng.normal(0, 0.5, shape).astype(np.float32) for name, shape in SHAPES.items()}


def batches(steps):
    rng = np.random.default_rng(8)
    return [(rng.normal(0, 2, (4, 5)).astype(np.float32), rng.normal(0, 1, (4, 2)).astype(np.float32))
            for _ in range(steps)]


class _TfOps:
    """The few ops the loss needs, for both TF1 graphs and eager TF2."""
    tanh, matmul, square = staticmethod(tf.tanh), staticmethod(tf.matmul), staticmethod(tf.square)
    mean = staticmethod(tf.reduce_mean)


def loss_fn(v, x, y, ops):
    hidden = ops.tanh(ops.matmul(x, v["layer/kernel"]) + v["layer/bias"]) * v["LayerNorm/gamma"]
    return 10.0 * ops.mean(ops.square(ops.matmul(hidden, v["output_weights"]) - y))  # norms > 1: clipping acts


def run_original(steps, learning_rate, num_train_steps, num_warmup_steps):
    original = import_original("optimization")
    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as session:
        variables = {name: v1.get_variable(name, initializer=value) for name, value in initial_values().items()}
        x, y = v1.placeholder(tf.float32, (4, 5)), v1.placeholder(tf.float32, (4, 2))
        train_op = original.create_optimizer(loss_fn(variables, x, y, _TfOps),
                                             learning_rate, num_train_steps, num_warmup_steps, use_tpu=False)
        session.run(v1.global_variables_initializer())
        for bx, by in batches(steps):
            session.run(train_op, {x: bx, y: by})
        return session.run(variables)


def run_ours(name, steps, learning_rate, num_train_steps, num_warmup_steps, scale_in_update=False):
    """Our optimizer on the same steps, the gradients clipped by tf.clip_by_global_norm, or with
    scale_in_update by the loop's way: the clipping factor handed to `apply` as gradient_scale."""
    variables = {}
    for name_, value in initial_values().items():
        scope, _, leaf = name_.rpartition("/")
        with keras.name_scope(scope or "top"):
            variables[name_] = keras.Variable(value, name=leaf)
    tvars = list(variables.values())
    optimizer = optimization.create_optimizer(name, learning_rate, num_train_steps, num_warmup_steps)
    for bx, by in batches(steps):
        with tf.GradientTape() as tape:
            loss = loss_fn({k: v.value for k, v in variables.items()}, bx, by, _TfOps)
        grads = tape.gradient(loss, [v.value for v in tvars])
        if scale_in_update:
            optimizer.apply(grads, tvars, gradient_scale=optimization.clip_factor(tf.linalg.global_norm(grads), 1.0))
        else:
            optimizer.apply(tf.clip_by_global_norm(grads, 1.0)[0], tvars)
    return {k: v.numpy() for k, v in variables.items()}, optimizer


@pytest.mark.parametrize("scale_in_update", [False, True], ids=["clipped_gradients", "gradient_scale"])
def test_adam_weight_decay_matches_the_original_optimizer(scale_in_update):
    """Warmup 3 steps then linear decay to 0 at step 10, decay 0.01 except LayerNorm/bias, clip 1.0 (by the
    gradients, or by the factor the update applies: what the training loop does)."""
    expected = run_original(8, 0.05, 10, 3)
    ours, optimizer = run_ours("adam_weight_decay", 8, 0.05, 10, 3, scale_in_update)
    # After 8 steps at lr 0.05 (weights move by up to 0.4), float32 rounding: the original itself is within
    # 3e-7 of a float64 evaluation.
    for name in SHAPES:
        np.testing.assert_allclose(ours[name], expected[name], rtol=1e-6, atol=1e-6, err_msg=name)
    assert np.abs(ours["layer/kernel"] - initial_values()["layer/kernel"]).max() > 1e-2  # it did train
    assert int(optimizer.iterations.numpy()) == 8
    assert sum(v.name.endswith(("_adam_m", "_adam_v")) for v in optimizer.variables) == 2 * len(SHAPES)


def test_adamw_matches_keras_adamw():
    """`adamw` (the fused kernel with bias correction) = keras.optimizers.AdamW with the same schedule and the
    same LayerNorm/bias exclusions, over 8 clipped steps."""
    ours, _ = run_ours("adamw", 8, 0.05, 10, 3)
    variables = {}
    for name, value in initial_values().items():
        scope, _, leaf = name.rpartition("/")
        with keras.name_scope(scope or "top"):
            variables[name] = keras.Variable(value, name=leaf)
    keras_adamw = keras.optimizers.AdamW(optimization.WarmupPolynomialDecay(0.05, 10, 3), weight_decay=0.01,
                                         epsilon=1e-6)
    keras_adamw.exclude_from_weight_decay(var_names=["LayerNorm", "bias"])
    tvars = list(variables.values())
    for bx, by in batches(8):
        with tf.GradientTape() as tape:
            loss = loss_fn({k: v.value for k, v in variables.items()}, bx, by, _TfOps)
        grads, _ = tf.clip_by_global_norm(tape.gradient(loss, [v.value for v in tvars]), 1.0)
        keras_adamw.apply(grads, tvars)
    for name in SHAPES:
        np.testing.assert_allclose(ours[name], variables[name].numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert np.abs(ours["layer/kernel"] - initial_values()["layer/kernel"]).max() > 1e-2


def test_decay_excludes_layer_norm_and_bias():
    """With zero gradients only the weight decay moves a variable: kernels shrink, LayerNorm/bias do not."""
    variables = {}
    for name, value in initial_values().items():
        scope, _, leaf = name.rpartition("/")
        with keras.name_scope(scope or "top"):
            variables[name] = keras.Variable(value, name=leaf)
    optimizer = optimization.AdamWeightDecay(0.1, weight_decay_rate=0.5)
    optimizer.apply([tf.zeros(v.shape) for v in variables.values()], list(variables.values()))
    start = initial_values()
    np.testing.assert_allclose(variables["layer/kernel"].numpy(), start["layer/kernel"] * 0.95, rtol=1e-6)
    np.testing.assert_allclose(variables["output_weights"].numpy(), start["output_weights"] * 0.95, rtol=1e-6)
    np.testing.assert_array_equal(variables["layer/bias"].numpy(), start["layer/bias"])
    np.testing.assert_array_equal(variables["LayerNorm/gamma"].numpy(), start["LayerNorm/gamma"])


def test_schedule_is_linear_warmup_then_polynomial_decay():
    schedule = optimization.WarmupPolynomialDecay(1e-4, num_train_steps=100, num_warmup_steps=10)
    got = [float(schedule(s)) for s in (0, 5, 9, 10, 55, 100, 150)]
    np.testing.assert_allclose(got, [0.0, 5e-5, 9e-5, 9e-5, 4.5e-5, 0.0, 0.0], rtol=1e-6, atol=1e-12)
    square_root = optimization.WarmupPolynomialDecay(1.0, num_train_steps=100, num_warmup_steps=0, power=0.5)
    assert float(square_root(75)) == pytest.approx(0.5)
    restored = optimization.WarmupPolynomialDecay.from_config(schedule.get_config())
    assert float(restored(55)) == pytest.approx(4.5e-5)
    with pytest.raises(ValueError, match="num_warmup_steps=20 and num_train_steps=10"):
        optimization.WarmupPolynomialDecay(1e-4, num_train_steps=10, num_warmup_steps=20)


def test_lamb_step_against_numpy():
    """One LAMB step: bias-corrected Adam direction + decay, times the trust ratio ||w|| / ||update||."""
    w0 = np.arange(1, 7, dtype=np.float32).reshape(2, 3) / 10
    g = np.array([[0.3, -0.1, 0.2], [0.05, 0.4, -0.3]], np.float32)
    with keras.name_scope("dense"):
        kernel, bias = keras.Variable(w0, name="kernel"), keras.Variable(w0[0], name="bias")
    optimizer = optimization.Lamb(0.1, weight_decay_rate=0.01)
    optimizer.apply([tf.constant(g), tf.constant(g[0])], [kernel, bias])
    direction = g / (np.abs(g) + 1e-6) + 0.01 * w0  # step 1: m_hat = g, v_hat = g**2
    ratio = np.linalg.norm(w0) / np.linalg.norm(direction)
    np.testing.assert_allclose(kernel.numpy(), w0 - 0.1 * ratio * direction, rtol=1e-5)
    np.testing.assert_allclose(bias.numpy(), w0[0] - 0.1 * g[0] / (np.abs(g[0]) + 1e-6), atol=1e-6)


def test_factory_options():
    with keras.name_scope("LayerNorm"):
        gamma = keras.Variable(np.ones(3, np.float32), name="gamma")
    kernel = keras.Variable(np.ones((3, 3), np.float32), name="kernel")
    adamw = optimization.create_optimizer("adamw", 0.1, 10, 0, weight_decay_rate=0.5)
    adamw.apply([tf.zeros(3), tf.zeros((3, 3))], [gamma, kernel])
    np.testing.assert_array_equal(gamma.numpy(), np.ones(3))  # excluded from decay
    np.testing.assert_allclose(kernel.numpy(), np.full((3, 3), 0.95), rtol=1e-6)
    scaled = optimization.create_optimizer("lamb", 0.1, 10, 0, loss_scaling=True)
    assert isinstance(scaled, keras.optimizers.LossScaleOptimizer)
    assert isinstance(scaled.inner_optimizer, optimization.Lamb)
    with pytest.raises(ValueError, match="optimizer='sgd' is not one of adam_weight_decay, adamw, lamb"):
        optimization.create_optimizer("sgd", 0.1, 10, 0)
