"""A/B timings of the building blocks behind bert_tf's speed choices, one process, BERT-Base shapes.

    python bench/bench_optimisations.py [--batch_size=8] [--seq_length=128] [--repeats=30]

  dense      the feed-forward block [B, T, 768] -> 3072 (GELU) -> 768: keras.layers.Dense (Tensordot: MatMul,
             Reshape, BiasAdd; not fusable) vs bert_tf's BertDense (2-D MatMul + BiasAdd + GELU: one oneDNN
             fused kernel), float32 and mixed_bfloat16;
  qkv        the attention projections: three BertDense vs one fused [768, 2304] matmul whose kernel is the
             concatenation of the three Google-named kernels, then split;
  optimizer  one AdamW update of the BERT-Base encoder's variables (109.5M): keras.optimizers.AdamW
             (op by op) vs bert_tf's AdamW / AdamWeightDecay (the fused ResourceApplyAdam kernel).

Medians of `--repeats` timed calls after 3 untimed ones; each block is a tf.function. Appends a table to
bench/RESULTS.md.
"""

import argparse
import datetime
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def median_ms(fn, repeats):
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def dense_block(kind, x, policy):
    """A callable running the feed-forward block with keras Dense or BertDense under `policy`."""
    import keras
    import tensorflow as tf
    from bert_tf.modeling.activations import gelu
    from bert_tf.modeling.dense import BertDense
    keras.mixed_precision.set_global_policy(policy)
    if kind == "keras.layers.Dense":
        layers = [keras.layers.Dense(3072, activation=gelu), keras.layers.Dense(768)]
    else:
        layers = [BertDense(3072, activation=gelu), BertDense(768)]
    forward = tf.function(lambda x: layers[1](layers[0](x)))
    keras.mixed_precision.set_global_policy("float32")
    return lambda: forward(x).numpy()


def qkv_block(fused, x):
    import keras
    import tensorflow as tf
    from bert_tf.modeling.dense import BertDense
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    layers = [BertDense(768) for _ in range(3)]
    for layer in layers:
        layer.build(x.shape)
    keras.mixed_precision.set_global_policy("float32")

    @tf.function
    def forward(x):
        hidden = tf.reshape(tf.cast(x, tf.bfloat16), (-1, 768))
        if not fused:
            return [layer(hidden) for layer in layers]
        kernel = tf.cast(tf.concat([layer.kernel.value for layer in layers], axis=1), tf.bfloat16)
        bias = tf.cast(tf.concat([layer.bias.value for layer in layers], axis=0), tf.bfloat16)
        return tf.split(tf.nn.bias_add(tf.matmul(hidden, kernel), bias), 3, axis=1)
    return lambda: [t.numpy() for t in forward(x)]


def optimizer_block(kind):
    import keras
    import tensorflow as tf
    from bert_tf.config import BertConfig
    from bert_tf.modeling.encoder import BertEncoder
    from bert_tf.training import optimization
    encoder = BertEncoder(BertConfig.from_json_file(os.path.join(ROOT, "configs", "bert_base_uncased.json")))
    encoder.build()
    variables = encoder.trainable_variables
    grads = [tf.random.normal(v.shape, stddev=1e-3) for v in variables]
    if kind == "keras.optimizers.AdamW":
        optimizer = keras.optimizers.AdamW(1e-4, weight_decay=0.01, epsilon=1e-6)
        optimizer.exclude_from_weight_decay(var_names=["LayerNorm", "bias"])
    else:
        optimizer = optimization.create_optimizer(kind, 1e-4, 10_000, 100)
    optimizer.build(variables)
    apply = tf.function(lambda: optimizer.apply(grads, variables))
    count = sum(int(np.prod(v.shape)) for v in variables)
    return (lambda: apply()), count


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    import tensorflow as tf
    from bench.bench_export import append_results
    x = tf.random.normal((args.batch_size, args.seq_length, 768))
    rows = []
    for policy in ("float32", "mixed_bfloat16"):
        times = {kind: median_ms(dense_block(kind, x, policy), args.repeats)
                 for kind in ("keras.layers.Dense", "BertDense")}
        rows.append(("dense", f"feed-forward 768-3072-768, {policy}", times))
    times = {name: median_ms(qkv_block(fused, x), args.repeats)
             for name, fused in (("3 x BertDense", False), ("fused concat kernel", True))}
    rows.append(("qkv", "query/key/value projections, mixed_bfloat16", times))
    times = {}
    for kind in ("keras.optimizers.AdamW", "adamw", "adam_weight_decay"):
        fn, count = optimizer_block(kind)
        times[kind] = median_ms(fn, max(5, args.repeats // 3))
    rows.append(("optimizer", f"one update of {count / 1e6:.1f}M float32 parameters", times))

    lines = ["", f"## bench_optimisations.py — {datetime.date.today().isoformat()}", "",
             f"`{' '.join(['python bench/bench_optimisations.py', *sys.argv[1:]])}`", "",
             f"Batch {args.batch_size} x seq {args.seq_length}, BERT-Base shapes, {os.cpu_count()} CPU cores "
             f"(load average {os.getloadavg()[0]:.1f} at the end), TF {tf.__version__}; medians of "
             f"{args.repeats} calls (optimizer: {max(5, args.repeats // 3)}).", "",
             "| block | what | A | B | speed-up of the last |", "|---|---|---|---|---:|"]
    for block, what, times in rows:
        names = list(times)
        cells = [f"{name}: {times[name]:.2f} ms" for name in names]
        if len(cells) > 2:
            cells = [cells[0], "; ".join(cells[1:])]
        lines.append(f"| {block} | {what} | {cells[0]} | {cells[1]} | {times[names[0]] / times[names[-1]]:.2f}x |")
    text = "\n".join(lines + [""])
    append_results(text)
    print(text)


if __name__ == "__main__":
    main()
