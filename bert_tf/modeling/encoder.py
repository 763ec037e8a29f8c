"""BertEncoder: embeddings, a stack of Transformer layers and the pooler, as one Keras model."""

import keras
from keras import ops

from bert_tf import model_types
from bert_tf.checkpoint_names import ENCODER_SCOPE
from bert_tf.config import BertConfig
from bert_tf.feature_schema import (
    ENCODER_OUTPUTS,
    INPUT_IDS,
    INPUT_MASK,
    INPUT_NAMES,
    POOLED_OUTPUT,
    SEGMENT_IDS,
    SEQUENCE_OUTPUT,
)
from bert_tf.modeling.layers.dense import BertDense
from bert_tf.modeling.layers.embeddings import BertEmbeddings
from bert_tf.modeling.layers.packed_tokens import PackedTokens, packing_possible
from bert_tf.modeling.layers.transformer import BertTransformerLayer


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEncoder(keras.Model):
    """The BERT encoder (Devlin et al. 2019, section 3): variables named as in Google's checkpoints.

    Inputs: a dict with `input_ids` int32 [B, T] and optionally `input_mask` (1 = real token, default all
    ones) and `segment_ids` (0/1, default zeros), same shape, T <= max_position_embeddings; or `input_ids`
    alone as a tensor.

    Outputs, a dict:
      `sequence_output` float32 [B, T, H]: the last layer's output;
      `pooled_output` [B, H]: Dense(H, tanh) of the first token ([CLS]) of `sequence_output`; with
      `config.causal_attention`, of the last real token (the only position that sees the whole input);
      `encoder_outputs`: list of L float32 [B, T, H], every layer's output (the last is `sequence_output`);
      `embedding_output` [B, T, H] in the compute dtype: LayerNorm(word + segment + position embeddings),
      after dropout;
      `attention_probs` (only when called with `output_attention_probs=True`): list of L float32
      [B, heads, T, T] attention probabilities.
    Under a mixed-precision policy matmuls run in the compute dtype; LayerNorm and softmax run in float32.

    `skip_padding=True` runs the position-wise parts of the Transformer layers (every Dense, LayerNorm,
    dropout and residual add) and the embeddings' LayerNorm and dropout on the real tokens only, attention
    padded and masked as before (`PackedTokens`: a batch of texts of different lengths costs the compute of
    its real tokens, not of B * T); the outputs at real positions are those of the padded computation to float
    rounding, and so are the gradients; `sequence_output`, `encoder_outputs` and `embedding_output` are zero
    at the padding. Not under XLA (the packed
    shape depends on input_mask's values). `skip_padding=None` (the default): the attribute `skip_padding`,
    itself None by default: on in training where packing is possible (`packing_possible`: not under XLA /
    jax.jit), off otherwise (inference batches are grouped by length already, `bert_tf.batched_inference`).
    Set `encoder.skip_padding = False` to train on the padded batches (or True to pack in inference too).
    `use_fused_attention()`: attention by one fused kernel on JAX (cuDNN's on a GPU; `BertSelfAttention`).

    `pooled_only=True` (what sentence-level heads call: `BertTaskModel.sentence_features`): the outputs are
    `pooled_output` alone (and `attention_probs` when asked, the last layer's [B, heads, 1, T]), and the last
    layer computes only what it needs: keys and values at every token, its query, attention output,
    feed-forward and LayerNorms at the pooled token alone (B rows instead of B * T: a sixth of a 6-layer
    encoder's position-wise FLOPs, a twelfth of BERT-Base's). The pooled output is the same to float rounding;
    in training the last layer's dropout masks are drawn over the smaller tensors.
    """

    def __init__(self, config, **kwargs):
        kwargs.setdefault("name", "bert")
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.skip_padding = None
        self.embeddings = BertEmbeddings(
            vocab_size=config.vocab_size, hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings, type_vocab_size=config.type_vocab_size,
            initializer_range=config.initializer_range, dropout_rate=config.hidden_dropout_prob,
            layer_norm_eps=config.layer_norm_eps, name="embeddings")
        self.transformer_layers = [
            BertTransformerLayer(
                hidden_size=config.hidden_size, num_attention_heads=config.num_attention_heads,
                intermediate_size=config.intermediate_size, hidden_act=config.hidden_act,
                initializer_range=config.initializer_range, hidden_dropout_prob=config.hidden_dropout_prob,
                attention_probs_dropout_prob=config.attention_probs_dropout_prob,
                layer_norm_eps=config.layer_norm_eps, causal_attention=config.causal_attention, name=f"layer_{i}")
            for i in range(config.num_hidden_layers)]
        self.pooler = BertDense(config.hidden_size, activation="tanh",
                                initializer_range=config.initializer_range, name="dense")

    def build(self, input_shape=None):
        hidden_shape = (None, None, self.config.hidden_size)
        self.embeddings.build()
        with keras.name_scope("encoder"):
            for layer in self.transformer_layers:
                layer.build(hidden_shape)
        with keras.name_scope("pooler"):
            self.pooler.build((None, self.config.hidden_size))
        self.built = True

    def call(self, inputs, training=None, output_attention_probs=False, skip_padding=None, pooled_only=False):
        if not isinstance(inputs, dict):
            inputs = {INPUT_IDS: inputs}
        unknown = set(inputs) - set(INPUT_NAMES)
        if unknown or INPUT_IDS not in inputs:
            raise ValueError(f"BertEncoder inputs have keys {sorted(inputs)}; expected input_ids and "
                             "optionally input_mask, segment_ids")
        input_ids = inputs[INPUT_IDS]
        input_mask = inputs.get(INPUT_MASK)
        segment_ids = inputs.get(SEGMENT_IDS)
        if input_mask is None:
            input_mask = ops.ones_like(input_ids)
        if segment_ids is None:
            segment_ids = ops.zeros_like(input_ids)
        if output_attention_probs and self.transformer_layers and self.transformer_layers[0].self_attention.fused:
            raise ValueError("fused attention gives no attention probabilities: use_fused_attention(False) first")
        if skip_padding is None:
            skip_padding = self.skip_padding
        if skip_padding is None:
            skip_padding = bool(training) and packing_possible(input_mask)
        packed = PackedTokens(input_mask, bucket_rows=bool(training)) if skip_padding else None
        hidden = self.embeddings(input_ids, segment_ids, training=training, packed=packed)
        embedding_output = hidden
        encoder_outputs, all_probs = [], []
        last = len(self.transformer_layers) - 1
        for index, layer in enumerate(self.transformer_layers):
            pooled_query = self._pooled_token(hidden, input_mask, packed) if pooled_only and index == last else None
            hidden, probs = layer(hidden, input_mask, training=training, packed=packed, pooled_query=pooled_query)
            if not pooled_only:
                encoder_outputs.append(packed.unpack(hidden) if packed is not None else hidden)
            if output_attention_probs:  # kept only when asked: L x [B, heads, T, T] floats otherwise alive
                all_probs.append(probs)
        if pooled_only:  # hidden: the last layer's output at the pooled token, [B, H]
            outputs = {POOLED_OUTPUT: self.pooler(hidden)}
            if output_attention_probs:
                outputs["attention_probs"] = all_probs
            return outputs
        hidden = encoder_outputs[-1]
        outputs = {
            SEQUENCE_OUTPUT: hidden,
            POOLED_OUTPUT: self.pooler(self._pooled_token(hidden, input_mask)),
            ENCODER_OUTPUTS: encoder_outputs,
            "embedding_output": packed.unpack(embedding_output) if packed is not None else embedding_output,
        }
        if output_attention_probs:
            outputs["attention_probs"] = all_probs
        return outputs

    def use_fused_attention(self, fused=True):
        """Every layer's attention by one fused kernel, or (False) the original's explicit softmax again: see
        `BertSelfAttention`'s `fused` (Keras's JAX backend; cuDNN on an NVIDIA GPU; no attention dropout)."""
        for layer in self.transformer_layers:
            layer.self_attention.fused = fused

    def training_layout(self, compiled):
        """How a training step runs this encoder, for the log: "unpadded" (the position-wise layers on the real
        tokens only) or "padded"; `compiled`: the step runs under XLA (jit_compile, jax.jit)."""
        skip = self.skip_padding if self.skip_padding is not None else not compiled
        return "unpadded" if skip else "padded"

    def _pooled_token(self, hidden, input_mask, packed=None):
        """hidden [B, T, H] (or with `packed`, its real tokens [N, H]), input_mask int [B, T] -> [B, H]: the first
        token, or for a causal model the last real one (position sum(input_mask) - 1)."""
        if not self.config.causal_attention:
            if packed is None:
                return hidden[:, 0, :]
            return packed.unpack_at(hidden, ops.zeros_like(input_mask[:, 0]))
        last = ops.maximum(ops.sum(ops.cast(input_mask, "int32"), axis=1) - 1, 0)
        if packed is not None:
            return packed.unpack_at(hidden, last)
        return ops.take_along_axis(hidden, last[:, None, None], axis=1)[:, 0, :]

    def checkpoint_variables(self):
        """{Google checkpoint name, e.g. `bert/encoder/layer_0/attention/self/query/kernel`: variable}."""
        if not self.built:
            self.build()
        anchor = "embeddings/word_embeddings"
        path = self.embeddings.word_embeddings.path
        prefix = path[: -len(anchor)]
        names = {}
        for variable in self.weights:
            if not variable.path.startswith(prefix):
                raise ValueError(f"variable {variable.path} is not under the encoder scope {prefix!r}")
            names[ENCODER_SCOPE + variable.path[len(prefix):]] = variable
        return names

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.saving.serialize_keras_object(self.dtype_policy),
                "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)


model_types.provide(model_types.ENCODER, build=lambda config, source, options: BertEncoder(config))
