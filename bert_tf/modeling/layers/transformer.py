"""One post-LN Transformer encoder block as in BERT, with Google's checkpoint scopes."""

import keras
from keras import ops

from bert_tf.modeling.layers.activations import get_activation
from bert_tf.modeling.layers.attention import BertSelfAttention
from bert_tf.modeling.layers.dense import BertDense
from bert_tf.modeling.layers.dropout import BertDropout
from bert_tf.modeling.layers.layer_norm import BertLayerNorm


@keras.saving.register_keras_serializable(package="bert_tf")
class BertResidualOutput(keras.layers.Layer):
    """Dense, dropout, then LayerNorm(dense_output + residual) in float32 (post-LN).

    Google scopes `attention/output` and `output`: weights `dense/kernel` [in, H], `dense/bias` [H],
    `LayerNorm/gamma|beta` [H].

    Call: hidden [B, T, in] (compute dtype), residual [B, T, H] -> float32 [B, T, H]. No autocast: a float32
    residual is added as it is, not rounded to the compute dtype first (`dense` casts `hidden` itself).
    """

    def __init__(self, hidden_size, initializer_range=0.02, dropout_rate=0.1, layer_norm_eps=1e-12, **kwargs):
        super().__init__(autocast=False, **kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate
        self.layer_norm_eps = layer_norm_eps
        self.dense = BertDense(hidden_size, initializer_range=initializer_range, name="dense")
        self.dropout = BertDropout(dropout_rate)
        self.layer_norm = BertLayerNorm(layer_norm_eps)

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.layer_norm.build(tuple(input_shape[:-1]) + (self.hidden_size,))
        self.built = True

    def call(self, hidden, residual, training=None):
        output = self.dropout(self.dense(hidden), training=training)
        return self.layer_norm(ops.cast(output, "float32") + ops.cast(residual, "float32"))

    def get_config(self):
        return {**super().get_config(), "hidden_size": self.hidden_size,
                "initializer_range": self.initializer_range, "dropout_rate": self.dropout_rate,
                "layer_norm_eps": self.layer_norm_eps}


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTransformerLayer(keras.layers.Layer):
    """Self-attention + feed-forward block, each followed by add & LayerNorm (Vaswani et al. 2017, 3.1).

    Google scope `bert/encoder/layer_N/` with `attention/self/{query,key,value}`, `attention/output/...`,
    `intermediate/dense` [H, I] and `output/...` ([I, H] dense + LayerNorm).

    Call: hidden [B, T, H], input_mask int [B, T] -> (float32 [B, T, H], probs float32 [B, heads, T, T]);
    with `packed` (a `PackedTokens` of input_mask), hidden and the output are the real tokens only, [N, H];
    with `pooled_query` [B, H] (this layer's input at each example's pooled token), the output is that token's
    only, [B, H] (probs [B, heads, 1, T]): every token's keys and values, the rest at one token per example.

    No autocast: under a mixed-precision policy the residual stream stays float32 from one LayerNorm to the
    next, as in torch autocast, and only the matmuls' inputs are cast to the compute dtype (once per block, by
    `self_attention` and `intermediate`), rather than rounding it to bfloat16 and casting it back at each add.
    """

    def __init__(self, hidden_size, num_attention_heads, intermediate_size, hidden_act="gelu",
                 initializer_range=0.02, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                 layer_norm_eps=1e-12, causal_attention=False, **kwargs):
        super().__init__(autocast=False, **kwargs)
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.layer_norm_eps = layer_norm_eps
        self.causal_attention = causal_attention
        self.self_attention = BertSelfAttention(
            num_attention_heads=num_attention_heads, hidden_size=hidden_size, initializer_range=initializer_range,
            dropout_rate=attention_probs_dropout_prob, causal=causal_attention, name="self")
        self.attention_output = BertResidualOutput(
            hidden_size=hidden_size, initializer_range=initializer_range, dropout_rate=hidden_dropout_prob,
            layer_norm_eps=layer_norm_eps, name="output")
        self.intermediate = BertDense(
            intermediate_size, activation=get_activation(hidden_act), initializer_range=initializer_range,
            name="dense")
        self.output_block = BertResidualOutput(
            hidden_size=hidden_size, initializer_range=initializer_range, dropout_rate=hidden_dropout_prob,
            layer_norm_eps=layer_norm_eps, name="output")

    def build(self, input_shape):
        with keras.name_scope("attention"):
            self.self_attention.build(input_shape)
            self.attention_output.build(input_shape)
        with keras.name_scope("intermediate"):
            self.intermediate.build(input_shape)
        self.output_block.build(tuple(input_shape[:-1]) + (self.intermediate_size,))
        self.built = True

    def call(self, hidden, input_mask, training=None, packed=None, pooled_query=None):
        context, probs = self.self_attention(hidden, input_mask, training=training, packed=packed,
                                             pooled_query=pooled_query)
        residual = hidden if pooled_query is None else pooled_query
        attended = self.attention_output(context, residual, training=training)
        return self.output_block(self.intermediate(attended), attended, training=training), probs

    def get_config(self):
        return {**super().get_config(), "hidden_size": self.hidden_size,
                "num_attention_heads": self.num_attention_heads, "intermediate_size": self.intermediate_size,
                "hidden_act": self.hidden_act, "initializer_range": self.initializer_range,
                "hidden_dropout_prob": self.hidden_dropout_prob,
                "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
                "layer_norm_eps": self.layer_norm_eps, "causal_attention": self.causal_attention}
