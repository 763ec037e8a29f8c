"""Multi-head self-attention (Vaswani et al. 2017, section 3.2) with BERT's masking and Google's scopes."""

import math

import keras
from keras import ops

from bert_tf.modeling.layers.dense import BertDense
from bert_tf.modeling.layers.dropout import BertDropout

# The original adds -10000 to the logits of masked keys; with float32 logits this is exact under any policy.
MASK_LOGIT = -10000.0


def attention_bias(input_mask, causal=False):
    """input_mask int [B, T] (1 = real token) -> float32 additive bias (0 or -10000) of the attention logits:
    [B, 1, 1, T] masking padding keys, or with `causal` [B, 1, T, T] also masking every key to the right of
    its query. exp(-10000 + logit) is exactly 0 in float32, so a masked key changes nothing, to the bit."""
    visible = ops.cast(input_mask, "float32")[:, None, None, :]
    if causal:
        positions = ops.arange(ops.shape(input_mask)[1])
        visible = visible * ops.cast(positions[None, :] <= positions[:, None], "float32")
    return (1.0 - visible) * MASK_LOGIT


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSelfAttention(keras.layers.Layer):
    """Scaled dot-product attention over all heads; Google scope `attention/self`.

    Weights: `query|key|value/kernel` [H, H] and `/bias` [H]. Logits are scaled by 1/sqrt(head size) (applied
    to the query instead where that is exact: `scales_query`), biased by `attention_bias(input_mask, causal)`
    (built here from the integer mask: a float bias passed into a layer would be autocast to the compute
    dtype), and the softmax is computed in float32.

    Call: hidden float [B, T, H], input_mask int [B, T] (1 = real token) ->
    (context [B, T, H] in the compute dtype, probabilities float32 [B, heads, T, T]). With `packed` (a
    `PackedTokens` of input_mask), hidden and context are the real tokens only, [N, H]: the projections
    run on them and attention on the padded layout. With `pooled_query` [B, H] (the pooled token of each
    example: its first, or in a causal model its last real token; either may see every real key), only that
    token attends: the keys and values are every token's, the context is [B, H] and the probabilities
    [B, heads, 1, T] (what the pooled output needs of a last layer, `BertEncoder`'s `pooled_only`).
    """

    def __init__(self, num_attention_heads, hidden_size, initializer_range=0.02, dropout_rate=0.1, causal=False,
                 **kwargs):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads:
            raise ValueError(f"hidden_size={hidden_size} is not a multiple of "
                             f"num_attention_heads={num_attention_heads}")
        self.num_attention_heads = num_attention_heads
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate
        self.causal = causal
        self.head_size = hidden_size // num_attention_heads
        self.scale = 1.0 / math.sqrt(self.head_size)
        # When the scale is a power of two (head size 4, 16, 64, 256: BERT-Base and -Large have 64), scaling the
        # query [., H] instead of the float32 logits [B, heads, T, T] gives the same bits in float32 and
        # bfloat16 (a power-of-two factor commutes with rounding) for T/heads-fold fewer multiplies: 3% of an
        # inference at sequence 512, 1% at 128 (bench/bench_optimisations.py: `attention_scale`). Other head
        # sizes (MiniLM's 32) keep the float32 multiply.
        self.scales_query = math.frexp(self.scale)[0] == 0.5
        self.query = BertDense(hidden_size, initializer_range=initializer_range, name="query")
        self.key = BertDense(hidden_size, initializer_range=initializer_range, name="key")
        self.value = BertDense(hidden_size, initializer_range=initializer_range, name="value")
        self.dropout = BertDropout(dropout_rate)

    def build(self, input_shape):
        for dense in (self.query, self.key, self.value):
            dense.build(input_shape)
        self.built = True

    def _split_heads(self, x):
        """[B, T, H] -> [B, heads, T, head_size]."""
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        x = ops.reshape(x, (batch, length, self.num_attention_heads, self.head_size))
        return ops.transpose(x, (0, 2, 1, 3))

    def call(self, hidden, input_mask, training=None, packed=None, pooled_query=None):
        padded = packed.unpack if packed is not None else (lambda x: x)
        if pooled_query is None:
            query = padded(self.query(hidden))
        else:  # [B, H] -> [B, 1, H]: one query per example
            query = ops.expand_dims(self.query(pooled_query), 1)
        if self.scales_query:
            query = query * ops.cast(self.scale, query.dtype)
        query = self._split_heads(query)
        key = self._split_heads(padded(self.key(hidden)))
        value = self._split_heads(padded(self.value(hidden)))
        logits = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))
        logits = ops.cast(logits, "float32")
        if not self.scales_query:
            logits = logits * self.scale
        logits += attention_bias(input_mask, self.causal and pooled_query is None)
        probs = ops.softmax(logits, axis=-1)
        dropped = ops.cast(self.dropout(probs, training=training), self.compute_dtype)
        context = ops.transpose(ops.matmul(dropped, value), (0, 2, 1, 3))
        batch, length = ops.shape(context)[0], ops.shape(context)[1]
        context = ops.reshape(context, (batch, length, self.hidden_size))
        if pooled_query is not None:
            return context[:, 0, :], probs
        return (packed.pack(context) if packed is not None else context), probs

    def get_config(self):
        return {**super().get_config(), "num_attention_heads": self.num_attention_heads,
                "hidden_size": self.hidden_size, "initializer_range": self.initializer_range,
                "dropout_rate": self.dropout_rate, "causal": self.causal}
