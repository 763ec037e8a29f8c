"""BERT input embeddings: word + segment (token type) + absolute position, then LayerNorm and dropout."""

import keras
from keras import ops

from bert_tf.modeling.layers import initializers
from bert_tf.modeling.layers.dropout import BertDropout
from bert_tf.modeling.layers.layer_norm import BertLayerNorm


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEmbeddings(keras.layers.Layer):
    """Embeds token ids (Devlin et al. 2019, section 3, "Input/Output Representations").

    Weights (Google checkpoint names under `bert/embeddings/`): `word_embeddings` [V, H],
    `token_type_embeddings` [type_vocab_size, H], `position_embeddings` [max_position_embeddings, H],
    `LayerNorm/gamma|beta` [H]. The sum and the LayerNorm are computed in float32.

    Call: `input_ids`, `segment_ids` int [B, T] with T <= max_position_embeddings -> [B, T, H] in the compute
    dtype (float32, or bfloat16/float16 under a mixed-precision policy: the dropout after the LayerNorm casts).
    With `packed` (a `PackedTokens` of the input mask): the real tokens only, [N, H], the LayerNorm and the
    dropout computed on them alone (on the TensorFlow backend the same kernel shapes as the layers' own).
    """

    def __init__(self, vocab_size, hidden_size, max_position_embeddings, type_vocab_size,
                 initializer_range=0.02, dropout_rate=0.1, layer_norm_eps=1e-12, **kwargs):
        # No autocast: the tables are read in float32 even under a mixed-precision policy.
        super().__init__(autocast=False, **kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate
        self.layer_norm_eps = layer_norm_eps
        self.layer_norm = BertLayerNorm(layer_norm_eps)
        self.dropout = BertDropout(dropout_rate)

    def build(self, input_shape=None):
        init = initializers.truncated_normal(self.initializer_range)
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(self.vocab_size, self.hidden_size), initializer=init)
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings", shape=(self.type_vocab_size, self.hidden_size), initializer=init)
        self.position_embeddings = self.add_weight(
            name="position_embeddings", shape=(self.max_position_embeddings, self.hidden_size),
            initializer=init)
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_ids, segment_ids, training=None, packed=None):
        seq_length = input_ids.shape[1]
        if seq_length is not None and seq_length > self.max_position_embeddings:
            raise ValueError(f"sequence length {seq_length} exceeds max_position_embeddings="
                             f"{self.max_position_embeddings}")
        # float32 casts: no-ops unless the tables are stored in bfloat16 (a bfloat16 serving export).
        word = ops.cast(ops.take(self.word_embeddings, input_ids, axis=0), "float32")
        token_type = ops.cast(ops.take(self.token_type_embeddings, segment_ids, axis=0), "float32")
        positions = ops.cast(self.position_embeddings[: ops.shape(input_ids)[1]], "float32")
        embeddings = word + token_type + positions[None, :, :]
        if packed is not None:
            embeddings = packed.pack(embeddings)
        return self.dropout(self.layer_norm(embeddings), training=training)

    def get_config(self):
        return {**super().get_config(), "vocab_size": self.vocab_size, "hidden_size": self.hidden_size,
                "max_position_embeddings": self.max_position_embeddings,
                "type_vocab_size": self.type_vocab_size, "initializer_range": self.initializer_range,
                "dropout_rate": self.dropout_rate, "layer_norm_eps": self.layer_norm_eps}
