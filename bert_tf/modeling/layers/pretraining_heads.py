"""BERT's pretraining heads (Devlin et al. 2019, section 3.1): masked LM and next sentence prediction.

Variables carry Google's checkpoint names under `cls/`, so Google's pretrained heads load into them.
"""

import keras
from keras import ops

from bert_tf.checkpoint_names import MASKED_LM_SCOPE, NEXT_SENTENCE_SCOPE, OUTPUT_BIAS, OUTPUT_WEIGHTS
from bert_tf.modeling.layers import initializers
from bert_tf.modeling.layers.activations import get_activation
from bert_tf.modeling.layers.dense import BertDense
from bert_tf.modeling.layers.layer_norm import BertLayerNorm


def gather_positions(sequence, positions):
    """sequence [B, T, H], positions int [B, P] (indexes into T) -> [B, P, H] (the original's gather_indexes)."""
    return ops.take_along_axis(sequence, ops.expand_dims(ops.cast(positions, "int32"), -1), axis=1)


@keras.saving.register_keras_serializable(package="bert_tf")
class MaskedLMHead(keras.layers.Layer):
    """Masked LM head, Google scope `cls/predictions`, applied only at the masked positions.

    Weights: `transform/dense/kernel` [H, H] + `bias` [H] (followed by `hidden_act`), `transform/LayerNorm`
    (float32, epsilon `layer_norm_eps`), `output_bias` [V]. The decoder is tied: logits are the transformed
    hidden states times the transposed word-embedding table, plus `output_bias`.

    Call: sequence_output [B, T, H], masked_lm_positions int [B, P], embedding_table [V, H] (the encoder's
    word embeddings) -> logits float32 [B, P, V]. The matmuls run in the compute dtype, the LayerNorm and
    the logits in float32.
    """

    def __init__(self, vocab_size, hidden_size, hidden_act="gelu", initializer_range=0.02,
                 layer_norm_eps=1e-12, **kwargs):
        kwargs.setdefault("name", "predictions")
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.dense = BertDense(
            hidden_size, activation=get_activation(hidden_act), initializer_range=initializer_range, name="dense")
        self.layer_norm = BertLayerNorm(layer_norm_eps)

    def build(self, input_shape=None):
        with keras.name_scope("transform"):
            self.dense.build((None, self.hidden_size))
            self.layer_norm.build((None, self.hidden_size))
        # autocast=False: the bias is read and added in float32 under a mixed-precision policy.
        self.output_bias = self.add_weight(name="output_bias", shape=(self.vocab_size,), initializer="zeros",
                                           autocast=False)
        self.built = True

    def call(self, sequence_output, masked_lm_positions, embedding_table):
        hidden = self.layer_norm(self.dense(gather_positions(sequence_output, masked_lm_positions)))
        table = ops.cast(embedding_table, self.compute_dtype)
        logits = ops.matmul(ops.cast(hidden, self.compute_dtype), ops.transpose(table))
        return ops.cast(logits, "float32") + self.output_bias

    def checkpoint_variables(self):
        """{Google checkpoint name: variable} of this head."""
        scope = MASKED_LM_SCOPE
        return {scope + "transform/dense/kernel": self.dense.kernel, scope + "transform/dense/bias": self.dense.bias,
                scope + "transform/LayerNorm/gamma": self.layer_norm.gamma,
                scope + "transform/LayerNorm/beta": self.layer_norm.beta, scope + "output_bias": self.output_bias}

    def get_config(self):
        return {**super().get_config(), "vocab_size": self.vocab_size, "hidden_size": self.hidden_size,
                "hidden_act": self.hidden_act, "initializer_range": self.initializer_range,
                "layer_norm_eps": self.layer_norm_eps}


@keras.saving.register_keras_serializable(package="bert_tf")
class NextSentenceHead(keras.layers.Layer):
    """Next sentence prediction, Google scope `cls/seq_relationship`: a 2-way linear classifier on the pooled
    output. Label 0 = B is the actual next segment, 1 = B is random.

    Weights: `output_weights` [2, H] (TruncatedNormal), `output_bias` [2].

    Call: pooled_output [B, H] -> logits float32 [B, 2].
    """

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        kwargs.setdefault("name", "seq_relationship")
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range

    def build(self, input_shape=None):
        self.output_weights = self.add_weight(
            name="output_weights", shape=(2, self.hidden_size),
            initializer=initializers.truncated_normal(self.initializer_range))
        self.output_bias = self.add_weight(name="output_bias", shape=(2,), initializer="zeros", autocast=False)
        self.built = True

    def call(self, pooled_output):
        weights = ops.cast(self.output_weights, self.compute_dtype)
        logits = ops.matmul(ops.cast(pooled_output, self.compute_dtype), ops.transpose(weights))
        return ops.cast(logits, "float32") + self.output_bias

    def checkpoint_variables(self):
        """{Google checkpoint name: variable} of this head."""
        return {NEXT_SENTENCE_SCOPE + OUTPUT_WEIGHTS: self.output_weights,
                NEXT_SENTENCE_SCOPE + OUTPUT_BIAS: self.output_bias}

    def get_config(self):
        return {**super().get_config(), "hidden_size": self.hidden_size,
                "initializer_range": self.initializer_range}
