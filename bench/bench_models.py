"""Encoder inference and the pretraining step, side by side: bert_tf vs KerasHub vs Model Garden vs HuggingFace
PyTorch BERT, and bert_tf vs KerasHub on Keras's JAX backend.

    python bench/bench_models.py [--config=base] [--batch_sizes=1,8,32] [--seq_lengths=128,512]
        [--train_seq_lengths=128] [--dtypes=float32,bfloat16] [--xla=on,off] [--tasks=inference,train]
        [--libraries=bert_tf,keras_hub,model_garden,torch,bert_tf_jax,keras_hub_jax]
        [--rounds=5] [--steps=3] [--warmup=2] [--torch_threads=0] [--baseline=REV] [--note="smoke run"]

Same model shapes (a bert_tf config json: `--config=base` is bert_tf/configs/bert_base_uncased.json, or a path),
random weights, random ids (no padding, segments half 0 / half 1). Paths:

  inference  forward pass of the encoder (sequence + pooled output), no dropout:
             bert_tf `BertEncoder` | KerasHub `BertBackbone` | Model Garden `BertEncoderV2` (tf_keras, exact
             GELU) | HF `BertModel` (torch.inference_mode)
  train      one pretraining step, masked LM + next sentence prediction, AdamW update:
             bert_tf `BertPretrainer` through the real `bert_tf.training.loop.Trainer` step (MLM head at the
             gathered positions) | KerasHub `BertBackbone` + `keras_hub.layers.MaskedLMHead` (what
             `BertMaskedLM` builds, tied to the token embedding, at the gathered positions) + a Dense(2) NSP
             head on the pooled output, a GradientTape step | Model Garden `BertPretrainerV2` (its MLM head at
             the gathered positions, a `ClassificationHead` for NSP) with tf_keras' AdamW, the same step |
             HF `BertForPreTraining` with `labels` and
             `next_sentence_label` (its MLM head runs on all T positions: that is HF's design) + torch AdamW
  finetune   one fine-tuning step of a 2-class BertClassifier (the pooled output's Dense), AdamW: bert_tf's loops
             only (the Trainer on TF, jax_step.TrainStep on JAX): the TF and JAX backends side by side

bert_tf_jax and keras_hub_jax: the same two libraries with KERAS_BACKEND=jax, always XLA-compiled (jax.jit):
inference the same forward pass (`batched_inference.JaxForward`: the weights as arguments of one jitted function);
training as each library trains on JAX: bert_tf's `BertPretrainer` through the JAX loop's own update
(`jax_step.TrainStep`, what run_pretraining.py runs there) with AdamW, KerasHub's backbone + the same heads
compiled with sparse cross-entropy (the MLM weights as sample weights), as `BertMaskedLM` compiles, one call of
its jit-compiled Keras train function (`train_on_batch`) with keras AdamW; both clip the gradients to global
norm 1.0 as the TF paths do. Each JAX call waits for its results on the device.

float32 and bfloat16: the TF paths with the Keras (tf_keras for Model Garden) `mixed_bfloat16` policy, torch with
`torch.autocast("cpu", torch.bfloat16)`, the JAX paths with Keras's `mixed_bfloat16`. `--xla=on,off`:
jit_compile of the TF paths (torch runs eager).

`--baseline=REV` measures bert_tf (and bert_tf_jax, when listed) at the git revision REV beside the working tree,
in the same rounds (a git worktree in a temporary folder, its own bench_models.py as the worker, on this Python):
a change's speed before and after in one run.

Every measurement is a fresh subprocess with one library (TF and torch in one process fight over threads),
whose result comes back as JSON (bench/harness.py's worker processes): it builds the model, runs `--warmup`
calls (not timed; XLA compiles there), then `--steps` timed calls, and reports their median. `--rounds`
interleaved rounds (every case once per round, so drifting load on a shared machine hits all alike); the table
gives the median over the rounds of examples/s and tokens/s, and MFU = examples/s x model FLOPs per example /
the matmul peak of that dtype, measured by `bert_tf.training.flops.measure_peak_flops` (the best of the peaks
measured in fresh processes at the start and the end of the run). Model FLOPs
(`flops.training_flops_per_example`): training at ceil(0.15 T) masked positions for every library (HF's extra
MLM work on the other positions does not count); inference: a third of the encoder's training FLOPs. The
table and the command go to bench/RESULTS.md (appended under a file lock).

bert_tf runs in this Python (on either backend). The peers run in venvs under ~/.cache built once per machine (file
lock), never in this Python (tools/peer_venvs.py's `bench_models_python` and `model_garden_python`): KerasHub and
HF in one with pinned torch (the CPU wheel), transformers, tensorflow and keras at this process's versions, and
keras-hub; Model Garden in its own with tensorflow at this version, tf-keras, gin-config and scipy, and
`tf-models-nightly` installed with --no-deps (its declared dependencies ask for tf-nightly); KerasHub on JAX in
`keras_hub_jax_python`'s (KerasHub's pins and jax[cpu]).
"""

import argparse
import functools
import json
import math
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # bench.harness, in this Python and in the peers' venvs (stdlib-only imports)

from bench import harness  # noqa: E402  (after the path)

CONFIG_NAMES = {"tiny", "mini", "small", "medium", "base", "large"}  # bert_tf/configs/ (workers run in peer venvs)
LIBRARIES = ("bert_tf", "keras_hub", "model_garden", "torch", "bert_tf_jax", "keras_hub_jax")
NAMES = {"bert_tf": "bert_tf", "keras_hub": "KerasHub", "model_garden": "Model Garden", "torch": "HF torch",
         "bert_tf_jax": "bert_tf JAX", "keras_hub_jax": "KerasHub JAX"}
BASELINE_OF = {"bert_tf_baseline": "bert_tf", "bert_tf_jax_baseline": "bert_tf_jax"}  # --baseline: at another revision
JAX_LIBRARIES = {"bert_tf_jax", "bert_tf_jax_baseline", "keras_hub_jax"}  # KERAS_BACKEND=jax: always XLA (jax.jit)
OWN = {"bert_tf", "bert_tf_jax", *BASELINE_OF}  # bert_tf itself, not a peer
FINETUNE_LIBRARIES = OWN  # the finetune task: bert_tf's own loops on TF and on JAX


# ------------------------------------------------------------------------------- worker (one per process)

def random_inputs(batch_size, seq_length, num_predictions, vocab_size):
    """Deterministic int32 numpy features: ids, mask (all ones), segments (half 0 / half 1), masked positions
    (sorted, distinct, not [CLS]), their ids and weights, NSP labels."""
    import numpy as np
    rng = np.random.default_rng(0)
    segment_ids = np.zeros((batch_size, seq_length), np.int32)
    segment_ids[:, seq_length // 2:] = 1
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq_length), num_predictions, replace=False)
                                  for _ in range(batch_size)]), axis=1).astype(np.int32)
    return {
        "input_ids": rng.integers(1000, vocab_size, (batch_size, seq_length), dtype=np.int32),
        "input_mask": np.ones((batch_size, seq_length), np.int32),
        "segment_ids": segment_ids,
        "masked_lm_positions": positions,
        "masked_lm_ids": rng.integers(1000, vocab_size, (batch_size, num_predictions), dtype=np.int32),
        "masked_lm_weights": np.ones((batch_size, num_predictions), np.float32),
        "next_sentence_labels": rng.integers(0, 2, (batch_size, 1), dtype=np.int32),
        "label_ids": rng.integers(0, 2, (batch_size,), dtype=np.int32),  # the finetune task's classes
    }


def set_policy(case):
    import keras
    keras.mixed_precision.set_global_policy("mixed_bfloat16" if case["dtype"] == "bfloat16" else "float32")


def training_model(case, config):
    """bert_tf's model of a training task: BertPretrainer (train) or a 2-class BertClassifier (finetune)."""
    from bert_tf.modeling.tasks.classifier import BertClassifier
    from bert_tf.modeling.tasks.pretrainer import BertPretrainer
    return BertPretrainer(config) if case["task"] == "train" else BertClassifier(config, 2)


def bert_tf_step(case, config, features):
    """A function running one inference call or one training step of bert_tf."""
    import tensorflow as tf

    from bert_tf.feature_schema import INPUT_NAMES
    from bert_tf.modeling.encoder import BertEncoder
    from bert_tf.training import distribute, optimization, trainers
    set_policy(case)
    if case["task"] == "inference":
        model = BertEncoder(config)
        inputs = {k: tf.constant(features[k]) for k in INPUT_NAMES}
        forward = tf.function(lambda x: (lambda o: (o["sequence_output"], o["pooled_output"]))(
            model(x, training=False)), jit_compile=case["xla"])
        return lambda: [t.numpy() for t in forward(inputs)]
    strategy = distribute.create_strategy("one_device")  # as run_pretraining.py on a CPU-only machine
    with strategy.scope():
        model = training_model(case, config)
        model.build()
        optimizer = optimization.create_optimizer("adamw", 1e-4, 10_000, 100)
    trainer = trainers.create_trainer(strategy, model, optimizer, case["batch_size"], use_xla=case["xla"])
    iterator = iter(tf.data.Dataset.from_tensors({k: tf.constant(v) for k, v in features.items()}).repeat())
    return lambda: trainer.run_steps(iterator, 1)


def tape_step(loss_fn, variables, apply_gradients, xla):
    """The peers' TF training step as bert_tf's Trainer runs its own: the loss and its gradients w.r.t.
    `variables` in one tf.function (jit_compile=xla), then, outside it, the gradients clipped to global norm
    1.0 and `apply_gradients(grads)`. Returns a callable running one step (-> the loss as numpy)."""
    import tensorflow as tf

    @tf.function(jit_compile=xla)
    def gradients():
        with tf.GradientTape() as tape:
            loss = loss_fn()
        return loss, tape.gradient(loss, variables)

    @tf.function
    def step():
        loss, grads = gradients()
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        apply_gradients(grads)
        return loss

    return lambda: step().numpy()


def keras_hub_backbone(config):
    """KerasHub's BertBackbone of the bert_tf config dict `config`."""
    import keras_hub
    return keras_hub.models.BertBackbone(
        vocabulary_size=config["vocab_size"], num_layers=config["num_hidden_layers"],
        num_heads=config["num_attention_heads"], hidden_dim=config["hidden_size"],
        intermediate_dim=config["intermediate_size"], dropout=config["hidden_dropout_prob"],
        max_sequence_length=config["max_position_embeddings"], num_segments=config["type_vocab_size"])


def keras_hub_heads(config, backbone):
    """The pretraining heads KerasHub's BertMaskedLM builds (a MaskedLMHead tied to the token embedding, applied
    at the gathered positions) and a Dense(2) next-sentence head on the pooled output."""
    import keras
    import keras_hub
    init = keras.initializers.TruncatedNormal(stddev=config["initializer_range"])
    mlm_head = keras_hub.layers.MaskedLMHead(
        vocabulary_size=config["vocab_size"], token_embedding=backbone.token_embedding,
        intermediate_activation="gelu", kernel_initializer=init, name="mlm_head")
    return mlm_head, keras.layers.Dense(2, kernel_initializer=init, name="nsp_head")


def keras_hub_step(case, config, features):
    """KerasHub's BertBackbone (inference) or backbone + MaskedLMHead + NSP Dense (training step)."""
    import keras
    import tensorflow as tf
    set_policy(case)
    backbone = keras_hub_backbone(config)
    inputs = {"token_ids": tf.constant(features["input_ids"]), "segment_ids": tf.constant(features["segment_ids"]),
              "padding_mask": tf.constant(features["input_mask"])}
    if case["task"] == "inference":
        forward = tf.function(lambda x: (lambda o: (o["sequence_output"], o["pooled_output"]))(
            backbone(x, training=False)), jit_compile=case["xla"])
        return lambda: [t.numpy() for t in forward(inputs)]
    mlm_head, nsp_head = keras_hub_heads(config, backbone)
    positions = tf.constant(features["masked_lm_positions"])
    mlm_ids, nsp_labels = tf.constant(features["masked_lm_ids"]), tf.constant(features["next_sentence_labels"])
    mlm_weights = tf.constant(features["masked_lm_weights"])

    def loss_fn():
        outputs = backbone(inputs, training=True)
        mlm_logits = tf.cast(mlm_head(outputs["sequence_output"], mask_positions=positions), tf.float32)
        nsp_logits = tf.cast(nsp_head(outputs["pooled_output"]), tf.float32)
        mlm_loss = keras.losses.sparse_categorical_crossentropy(mlm_ids, mlm_logits, from_logits=True)
        nsp_loss = keras.losses.sparse_categorical_crossentropy(nsp_labels[:, 0], nsp_logits, from_logits=True)
        return tf.reduce_sum(mlm_loss * mlm_weights) / tf.reduce_sum(mlm_weights) + tf.reduce_mean(nsp_loss)

    loss_fn()  # builds the heads
    variables = backbone.trainable_variables + mlm_head.trainable_variables + nsp_head.trainable_variables
    optimizer = keras.optimizers.AdamW(1e-4, weight_decay=0.01, epsilon=1e-6)
    optimizer.build(variables)

    return tape_step(loss_fn, variables, lambda grads: optimizer.apply(grads, variables), case["xla"])


def bert_tf_jax_step(case, config, features):
    """bert_tf on Keras's JAX backend: BertEncoder's forward pass (inference: `batched_inference.JaxForward`, what
    prediction runs on JAX) or one update of the JAX loop's own step (`jax_step.TrainStep`, what
    run_pretraining.py runs there) with the AdamW of run_pretraining.py, gradients clipped to global norm 1.0;
    `case["fused_attention"]` (bench/gpu_jobs.py): the encoder's attention fused (`use_fused_attention`). Each
    call waits for its result on the device."""
    import jax

    from bert_tf.feature_schema import INPUT_NAMES
    from bert_tf.modeling.encoder import BertEncoder
    from bert_tf.training import optimization
    from bert_tf.training.jax_step import TrainStep
    set_policy(case)
    if case["task"] == "inference":
        return jax_forward(BertEncoder(config), {k: features[k] for k in INPUT_NAMES})
    model = training_model(case, config)
    model.encoder.use_fused_attention(case.get("fused_attention", False))
    step = TrainStep(model, optimization.create_optimizer("adamw", 1e-4, 10_000, 100))
    batch, state = jax.device_put(features), {"values": step.values()}

    def call():
        state["values"], sums = step(state["values"], batch)
        return jax.block_until_ready(sums)
    return call


def jax_forward(model, inputs):
    """A callable running `model`'s forward pass (no dropout) on `inputs` on the JAX device
    (`batched_inference.JaxForward`: the weights as arguments of one jax.jit function), waiting for its outputs."""
    import jax

    from bert_tf.batched_inference import JaxForward
    inputs = jax.device_put(inputs)
    model(inputs)  # builds
    forward = JaxForward(lambda batch: model(batch, training=False), model.variables)
    return lambda: jax.block_until_ready(forward.outputs(inputs))


def keras_hub_jax_step(case, config, features):
    """KerasHub on Keras's JAX backend: BertBackbone's forward pass (inference) or one step of the Keras train
    function of backbone + `keras_hub_heads` (as BertMaskedLM compiles: sparse cross-entropy from logits, the
    MLM weights as sample weights; + the NSP loss) with keras AdamW clipped to global norm 1.0."""
    import keras
    set_policy(case)
    backbone = keras_hub_backbone(config)
    inputs = {"token_ids": features["input_ids"], "segment_ids": features["segment_ids"],
              "padding_mask": features["input_mask"]}
    if case["task"] == "inference":
        return jax_forward(backbone, inputs)
    mlm_head, nsp_head = keras_hub_heads(config, backbone)
    positions = keras.Input((features["masked_lm_positions"].shape[1],), dtype="int32", name="mask_positions")
    outputs = backbone(backbone.input)
    model = keras.Model({**backbone.input, "mask_positions": positions},
                        {"mlm": mlm_head(outputs["sequence_output"], mask_positions=positions),
                         "nsp": nsp_head(outputs["pooled_output"])})
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(keras.optimizers.AdamW(1e-4, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0),
                  loss={"mlm": loss, "nsp": loss})
    x = {**inputs, "mask_positions": features["masked_lm_positions"]}
    y = {"mlm": features["masked_lm_ids"], "nsp": features["next_sentence_labels"][:, 0]}
    weights = {"mlm": features["masked_lm_weights"], "nsp": None}
    return lambda: model.train_on_batch(x, y, sample_weight=weights, return_dict=True)["loss"]


def model_garden_step(case, config, features):
    """Model Garden's BertEncoderV2 (inference) or BertPretrainerV2 (MLM at the gathered positions + NSP
    ClassificationHead) with tf_keras' AdamW (training step), on tf_keras (Keras 2)."""
    import tensorflow as tf
    import tf_keras
    from official.nlp.modeling import layers, models, networks
    tf_keras.mixed_precision.set_global_policy("mixed_bfloat16" if case["dtype"] == "bfloat16" else "float32")
    init = tf_keras.initializers.TruncatedNormal(stddev=config["initializer_range"])

    def gelu(x):  # exact: Model Garden's default is the tanh approximation
        return tf_keras.activations.gelu(x, approximate=False)

    encoder = networks.BertEncoderV2(
        vocab_size=config["vocab_size"], hidden_size=config["hidden_size"], num_layers=config["num_hidden_layers"],
        num_attention_heads=config["num_attention_heads"], max_sequence_length=config["max_position_embeddings"],
        type_vocab_size=config["type_vocab_size"], inner_dim=config["intermediate_size"], inner_activation=gelu,
        output_dropout=config["hidden_dropout_prob"], attention_dropout=config["attention_probs_dropout_prob"],
        initializer=init)
    inputs = {"input_word_ids": tf.constant(features["input_ids"]), "input_mask": tf.constant(features["input_mask"]),
              "input_type_ids": tf.constant(features["segment_ids"])}
    if case["task"] == "inference":
        forward = tf.function(lambda x: (lambda o: (o["sequence_output"], o["pooled_output"]))(
            encoder(x, training=False)), jit_compile=case["xla"])
        return lambda: [t.numpy() for t in forward(inputs)]
    pretrainer = models.BertPretrainerV2(
        encoder_network=encoder, mlm_activation=gelu, mlm_initializer=init,
        classification_heads=[layers.ClassificationHead(inner_dim=config["hidden_size"], num_classes=2,
                                                         initializer=init, name="next_sentence")])
    inputs["masked_lm_positions"] = tf.constant(features["masked_lm_positions"])
    mlm_ids, nsp_labels = tf.constant(features["masked_lm_ids"]), tf.constant(features["next_sentence_labels"])
    mlm_weights = tf.constant(features["masked_lm_weights"])

    def loss_fn():
        outputs = pretrainer(inputs, training=True)
        mlm_loss = tf_keras.losses.sparse_categorical_crossentropy(
            mlm_ids, tf.cast(outputs["mlm_logits"], tf.float32), from_logits=True)
        nsp_loss = tf_keras.losses.sparse_categorical_crossentropy(
            nsp_labels[:, 0], tf.cast(outputs["next_sentence"], tf.float32), from_logits=True)
        return tf.reduce_sum(mlm_loss * mlm_weights) / tf.reduce_sum(mlm_weights) + tf.reduce_mean(nsp_loss)

    loss_fn()  # builds the heads
    variables = pretrainer.trainable_variables
    optimizer = tf_keras.optimizers.AdamW(1e-4, weight_decay=0.01, epsilon=1e-6)
    optimizer.build(variables)

    return tape_step(loss_fn, variables, lambda grads: optimizer.apply_gradients(zip(grads, variables)),
                     case["xla"])


def torch_step(case, config, features):
    """HF transformers' BertModel (inference) or BertForPreTraining + AdamW (training step), CPU, eager."""
    import contextlib

    import torch
    import transformers
    hf_config = transformers.BertConfig(
        vocab_size=config["vocab_size"], hidden_size=config["hidden_size"],
        num_hidden_layers=config["num_hidden_layers"], num_attention_heads=config["num_attention_heads"],
        intermediate_size=config["intermediate_size"], hidden_act=config["hidden_act"],
        hidden_dropout_prob=config["hidden_dropout_prob"],
        attention_probs_dropout_prob=config["attention_probs_dropout_prob"],
        max_position_embeddings=config["max_position_embeddings"], type_vocab_size=config["type_vocab_size"],
        initializer_range=config["initializer_range"], layer_norm_eps=config.get("layer_norm_eps", 1e-12))
    torch.manual_seed(0)
    if case["torch_threads"]:
        torch.set_num_threads(case["torch_threads"])
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if case["dtype"] == "bfloat16"
                else contextlib.nullcontext())
    inputs = {"input_ids": torch.from_numpy(features["input_ids"]).long(),
              "attention_mask": torch.from_numpy(features["input_mask"]).long(),
              "token_type_ids": torch.from_numpy(features["segment_ids"]).long()}
    if case["task"] == "inference":
        model = transformers.BertModel(hf_config).eval()

        def forward():
            with torch.inference_mode(), autocast:
                outputs = model(**inputs)
                return outputs.last_hidden_state.float().numpy(), outputs.pooler_output.float().numpy()
        return forward
    model = transformers.BertForPreTraining(hf_config).train()
    labels = torch.full(inputs["input_ids"].shape, -100, dtype=torch.long)
    positions = torch.from_numpy(features["masked_lm_positions"]).long()
    labels.scatter_(1, positions, torch.from_numpy(features["masked_lm_ids"]).long())
    nsp_labels = torch.from_numpy(features["next_sentence_labels"][:, 0]).long()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-6)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = model(**inputs, labels=labels, next_sentence_label=nsp_labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return float(loss)
    return step


def library_versions(library):
    if library in JAX_LIBRARIES:
        import jax
        import keras
        versions = f"JAX {jax.__version__}, Keras {keras.__version__}"
        if library == "keras_hub_jax":
            import keras_hub
            versions += f", keras-hub {keras_hub.__version__}"
        return versions
    if library == "torch":
        import torch
        import transformers
        return f"torch {torch.__version__}, transformers {transformers.__version__}"
    import tensorflow as tf
    if library == "model_garden":
        import tf_keras

        from tools.peer_venvs import MODEL_GARDEN
        return f"TF {tf.__version__}, tf-keras {tf_keras.__version__}, {MODEL_GARDEN[0]}"
    import keras
    versions = f"TF {tf.__version__}, Keras {keras.__version__}"
    if library == "keras_hub":
        import keras_hub
        versions += f", keras-hub {keras_hub.__version__}"
    return versions


def run_worker(case):
    """Measures one case in this process; returns {"times": [s per call], "versions": ...}."""
    import numpy as np
    config = case["config"]
    features = random_inputs(case["batch_size"], case["seq_length"], case["num_predictions"], config["vocab_size"])
    if case["library"] == "bert_tf":
        from bert_tf.config import BertConfig
        call = bert_tf_step(case, BertConfig.from_dict(config), features)
    else:
        steps = {"keras_hub": keras_hub_step, "model_garden": model_garden_step, "torch": torch_step,
                 "bert_tf_jax": bert_tf_jax_step, "keras_hub_jax": keras_hub_jax_step}
        call = steps[case["library"]](case, config, features)
    times = harness.timed_calls(call, case["warmup"], case["steps"])
    return {"time": float(np.median(times)), "times": times, "versions": library_versions(case["library"])}


# ---------------------------------------------------------------------------------- parent (orchestrator)

def run_case(case, python, timeout, baseline_root=None):
    """Runs one case in a fresh process of `python` on its Keras backend; returns its JSON result or
    {"error": ...}. The baseline's cases run the worker of the baseline's tree (`baseline_root`), with that tree
    first on the path."""
    backend = {"KERAS_BACKEND": "jax" if case["library"] in JAX_LIBRARIES else "tensorflow"}
    if case["library"] in BASELINE_OF:
        worker = os.path.join(baseline_root, "bench", "bench_models.py")
        return harness.run_worker(worker, {**case, "library": BASELINE_OF[case["library"]]}, python, timeout,
                                  env={**backend, "PYTHONPATH": baseline_root})
    return harness.run_worker(__file__, case, python, timeout, with_root=case["library"] in ("bert_tf", "bert_tf_jax"),
                              env=backend)


def load_config(name):
    path = os.path.join(ROOT, "bert_tf", "configs", f"bert_{name}_uncased.json") if name in CONFIG_NAMES else name
    with open(path, encoding="utf-8") as f:
        return json.load(f), path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="base", help=f"one of {sorted(CONFIG_NAMES)} or a config json path")
    parser.add_argument("--batch_sizes", default="1,8,32")
    parser.add_argument("--seq_lengths", default="128,512", help="Inference sequence lengths.")
    parser.add_argument("--train_seq_lengths", default="128", help="Training-step (train, finetune) sequence lengths.")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--xla", default="on,off", help="XLA settings of the TF paths: on, off or on,off.")
    parser.add_argument("--tasks", default="inference,train", help="inference, train (the pretraining step) and "
                        "finetune (a 2-class BertClassifier's step, bert_tf and bert_tf_jax only)")
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    parser.add_argument("--rounds", type=int, default=5, help="Interleaved rounds (medians over them).")
    parser.add_argument("--steps", type=int, default=3, help="Timed calls per process (their median is a run).")
    parser.add_argument("--warmup", type=int, default=2, help="Untimed calls per process before timing.")
    parser.add_argument("--torch_threads", type=int, default=0,
                        help="torch.set_num_threads in the torch processes (0: torch's default, one per core). On a "
                        "loaded 2-core machine 2 OpenMP threads can be 10-30x slower than 1.")
    parser.add_argument("--baseline", default=None, help="A git revision of bert_tf to measure beside the working "
                        "tree, in the same rounds (e.g. the commit before a change).")
    parser.add_argument("--note", default="", help="Added to the section heading in RESULTS.md.")
    parser.add_argument("--timeout", type=int, default=1800, help="Seconds per measuring process.")
    args = harness.parse_args(parser, run_worker)

    import platform

    import numpy as np

    from bench.results import append_results
    from bert_tf.config import BertConfig
    from bert_tf.training import flops as model_flops
    from tools import peer_venvs

    config, config_path = load_config(args.config)
    bert_config = BertConfig.from_dict(config)
    split = harness.comma_list
    dtypes, libraries, tasks = split(args.dtypes), split(args.libraries), split(args.tasks)
    xla_settings = [{"on": True, "off": False}[x] for x in split(args.xla)]
    baseline_root = None
    if args.baseline:
        import subprocess
        import tempfile

        baselines = {own: baseline for baseline, own in BASELINE_OF.items() if own in libraries}
        if not baselines:
            parser.error(f"--baseline measures {' and '.join(BASELINE_OF.values())}: list one in --libraries")
        baseline_root = os.path.join(tempfile.mkdtemp(prefix="bert_tf_baseline_"), "tree")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", baseline_root, args.baseline], check=True,
                       capture_output=True)
        for baseline, own in BASELINE_OF.items():
            NAMES[baseline] = f"{NAMES[own]} {args.baseline}"
        libraries = [name for library in libraries for name in (library, baselines.get(library)) if name]
    cases = []
    for task in tasks:
        for seq_length in map(int, split(args.seq_lengths if task == "inference" else args.train_seq_lengths)):
            for batch_size in map(int, split(args.batch_sizes)):
                for dtype in dtypes:
                    for library in libraries:
                        if task == "finetune" and library not in FINETUNE_LIBRARIES:
                            continue
                        fixed = {"torch": [False], **{name: [True] for name in JAX_LIBRARIES}}
                        for xla in fixed.get(library, xla_settings):
                            cases.append({"task": task, "library": library, "batch_size": batch_size,
                                          "seq_length": seq_length, "dtype": dtype, "xla": xla,
                                          "num_predictions": math.ceil(0.15 * seq_length), "config": config,
                                          "warmup": args.warmup, "steps": args.steps,
                                          "torch_threads": args.torch_threads})
    pythons = {**{library: sys.executable for library in OWN}, "peak": sys.executable}
    if {"keras_hub", "torch"} & set(libraries):
        begin = time.perf_counter()
        pythons["keras_hub"] = pythons["torch"] = peer_venvs.bench_models_python()
        print(f"peer venv: {pythons['torch']} ({time.perf_counter() - begin:.0f} s)", flush=True)
    if "keras_hub_jax" in libraries:
        begin = time.perf_counter()
        pythons["keras_hub_jax"] = peer_venvs.keras_hub_jax_python()
        print(f"KerasHub JAX venv: {pythons['keras_hub_jax']} ({time.perf_counter() - begin:.0f} s)", flush=True)
    if "model_garden" in libraries:
        begin = time.perf_counter()
        pythons["model_garden"] = peer_venvs.model_garden_python()
        print(f"Model Garden venv: {pythons['model_garden']} ({time.perf_counter() - begin:.0f} s)", flush=True)

    load_start, begin = os.getloadavg(), time.perf_counter()
    first_peaks = harness.matmul_peaks(dtypes, args.timeout)
    jobs = {i: (f"{case['library']} {case['task']}", case["library"],
                functools.partial(run_case, case, pythons[case["library"]], args.timeout, baseline_root))
            for i, case in enumerate(cases)}
    try:
        measured, errors, versions = harness.interleaved_rounds(jobs, args.rounds, begin,
                                                                {"bert_tf": library_versions("bert_tf")})
    finally:
        if baseline_root:
            import subprocess

            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", baseline_root], capture_output=True)
    results = {i: [result["time"] for result in found] for i, found in measured.items()}
    last_peaks = harness.matmul_peaks(dtypes, args.timeout)
    peak = {d: max(first_peaks[d], last_peaks[d]) for d in dtypes}
    elapsed = time.perf_counter() - begin

    table = ["| task | library | batch | seq | dtype | XLA | median ms | examples/s | tokens/s | MFU | runs |",
             "|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|"]
    best_settings = {}  # (task, batch, seq) -> {library: (examples/s, setting)}
    for i, case in enumerate(cases):
        b, t = case["batch_size"], case["seq_length"]
        xla = "-" if case["library"] == "torch" else ("on" if case["xla"] else "off")
        head = f"| {case['task']} | {NAMES[case['library']]} | {b} | {t} | {case['dtype']} | {xla} |"
        if i in errors:
            table.append(f"{head} failed: {errors[i].replace('|', '/')} | | | | |")
            continue
        median = float(np.median(results[i]))
        if case["task"] != "inference":  # the classifier's head: no masked LM FLOPs
            predictions = case["num_predictions"] if case["task"] == "train" else 0
            flops = model_flops.training_flops_per_example(bert_config, t, predictions)
        else:
            flops = model_flops.training_flops_per_example(bert_config, t, 0) / 3  # the encoder's forward pass
        mfu = b / median * flops / peak[case["dtype"]] if peak[case["dtype"]] else float("nan")
        table.append(f"{head} {median * 1e3:.1f} | {b / median:.2f} | {b * t / median:,.0f} | {mfu:.1%} | "
                     f"{len(results[i])} |")
        setting = f"{case['dtype']}" + ("" if case["library"] == "torch" else f", XLA {xla}")
        best = best_settings.setdefault((case["task"], b, t), {})
        if b / median > best.get(case["library"], (0.0, ""))[0]:
            best[case["library"]] = (b / median, setting)
    ratios = {"bert_tf / best peer": ("bert_tf", [lib for lib in libraries if lib not in OWN]),
              "bert_tf JAX / KerasHub JAX": ("bert_tf_jax", ["keras_hub_jax"])}
    ratios = {title: (ours, peers) for title, (ours, peers) in ratios.items()
              if ours in libraries and set(peers) & set(libraries)}
    table += ["", "Each library in its best setting (precision x XLA) of this run, examples/s:", "",
              "| task | batch | seq | " + " | ".join([NAMES[lib] for lib in libraries] + list(ratios)) + " |",
              "|---|---:|---:|" + "---|" * len(libraries) + "---:|" * len(ratios)]
    case_keys = {(c["task"], c["batch_size"], c["seq_length"], c["library"]) for c in cases}  # "-": not a case
    for (task, b, t), best in best_settings.items():
        cells = [f"{best[lib][0]:.2f} ({best[lib][1]})" if lib in best
                 else "failed" if (task, b, t, lib) in case_keys else "-" for lib in libraries]
        for ours, peers in ratios.values():
            peer = max([best[lib][0] for lib in peers if lib in best], default=None)
            cells.append(f"{best[ours][0] / peer:.2f}x" if ours in best and peer else "-")
        table.append(f"| {task} | {b} | {t} | " + " | ".join(cells) + " |")
    peak_text = ", ".join(f"{d} {peak[d] / 1e12:.3f} TFLOP/s" for d in dtypes)
    text = "\n".join([
        "", harness.heading("bench_models.py", args.note), "",
        f"`{harness.command_line('bench_models.py')}`", "",
        f"Config {os.path.relpath(config_path, ROOT)} (L={bert_config.num_hidden_layers}, "
        f"H={bert_config.hidden_size}, A={bert_config.num_attention_heads}), random weights and ids; "
        f"{platform.machine()}, {os.cpu_count()} CPU cores (shared; load average {load_start[0]:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at end), Python {platform.python_version()}; "
        + "; ".join(f"{NAMES[k]}: {v}" for k, v in versions.items() if v) + ". "
        f"Each run a fresh process: {args.warmup} untimed + {args.steps} timed calls (median); {args.rounds} "
        f"interleaved rounds, medians over them ({elapsed:.0f} s in all); torch threads: "
        f"{args.torch_threads or 'default'}. Matmul peak "
        f"(`flops.measure_peak_flops`, best of start and end): {peak_text}.", "",
        *table, ""])
    append_results(text)
    print(text)


if __name__ == "__main__":
    main()
