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

    `fused` (False; `BertEncoder.use_fused_attention`): on Keras's JAX backend, the logits, softmax and context
    in one `jax.nn.dot_product_attention` call, cuDNN's fused kernel on an NVIDIA GPU (XLA's elsewhere), the
    padding given as each example's number of real tokens (input_mask must be ones, then zeros: every feature
    bert_tf makes is). The outputs at real positions are the unfused ones to float rounding (at the padding
    they differ: padded queries attend to nothing). No probabilities come back (None), so there is no dropout
    on them: training with dropout_rate > 0 is a ValueError. Not `keras.ops.dot_product_attention`: it takes no
    sequence lengths, and on a TPU its Splash kernel applies the first example's mask to the whole batch.
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
        self.fused = False

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
        key, value = padded(self.key(hidden)), padded(self.value(hidden))
        if self.fused:
            context = self._fused_context(query, key, value, input_mask, training, pooled_query is None)
            probs = None
        else:
            context, probs = self._context(query, key, value, input_mask, training, pooled_query is None)
        if pooled_query is not None:
            return context[:, 0, :], probs
        return (packed.pack(context) if packed is not None else context), probs

    def _context(self, query, key, value, input_mask, training, all_queries):
        """query [B, Tq, H], key and value [B, T, H] -> (context [B, Tq, H], probabilities float32
        [B, heads, Tq, T]): the original's attention."""
        if self.scales_query:
            query = query * ops.cast(self.scale, query.dtype)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        logits = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))
        logits = ops.cast(logits, "float32")
        if not self.scales_query:
            logits = logits * self.scale
        logits += attention_bias(input_mask, self.causal and all_queries)
        probs = ops.softmax(logits, axis=-1)
        dropped = ops.cast(self.dropout(probs, training=training), self.compute_dtype)
        context = ops.transpose(ops.matmul(dropped, value), (0, 2, 1, 3))
        batch, length = ops.shape(context)[0], ops.shape(context)[1]
        return ops.reshape(context, (batch, length, self.hidden_size)), probs

    def _fused_context(self, query, key, value, input_mask, training, all_queries):
        """query [B, Tq, H], key and value [B, T, H] -> context [B, Tq, H] by `jax.nn.dot_product_attention`
        (see `fused` in the class docstring)."""
        if keras.backend.backend() != "jax":
            raise ValueError(f"fused attention runs on Keras's JAX backend, not {keras.backend.backend()}")
        if training and self.dropout_rate > 0:
            raise ValueError(f"fused attention has no dropout on the attention probabilities; this layer has "
                             f"dropout_rate={self.dropout_rate} (train with attention_probs_dropout_prob=0)")
        import jax

        def heads(x):  # [B, T, H] -> [B, T, heads, head_size]
            return ops.reshape(x, (ops.shape(x)[0], ops.shape(x)[1], self.num_attention_heads, self.head_size))

        lengths = ops.sum(ops.cast(input_mask, "int32"), axis=1)
        query_lengths = lengths if all_queries else ops.ones_like(lengths)
        on_gpu = jax.devices()[0].platform == "gpu"
        context = jax.nn.dot_product_attention(
            heads(query), heads(key), heads(value), scale=self.scale, is_causal=self.causal and all_queries,
            query_seq_lengths=query_lengths, key_value_seq_lengths=lengths,
            implementation="cudnn" if on_gpu else None)
        return ops.reshape(context, (ops.shape(query)[0], ops.shape(query)[1], self.hidden_size))

    def get_config(self):
        return {**super().get_config(), "num_attention_heads": self.num_attention_heads,
                "hidden_size": self.hidden_size, "initializer_range": self.initializer_range,
                "dropout_rate": self.dropout_rate, "causal": self.causal}
