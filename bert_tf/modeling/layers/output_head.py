"""The output layer of the original fine-tuning heads: dropout, then logits = x W^T + b."""

import keras
from keras import ops

from bert_tf.checkpoint_names import OUTPUT_BIAS, OUTPUT_WEIGHTS
from bert_tf.modeling.layers import initializers
from bert_tf.modeling.layers.dropout import BertDropout


@keras.saving.register_keras_serializable(package="bert_tf")
class OutputHead(keras.layers.Layer):
    """The original `run_classifier.py` head (`create_model`), usable on pooled or per-token outputs.

    Weights (Google checkpoint names, no scope): `output_weights` [num_outputs, H], TruncatedNormal(stddev=
    initializer_range); `output_bias` [num_outputs], zeros. Dropout (the original: 0.1) is applied to the
    input during training only. The matmul runs in the compute dtype, the logits are float32.

    Call: x float [..., H] (e.g. [B, H] or [B, T, H]) -> logits float32 [..., num_outputs].
    """

    def __init__(self, num_outputs, hidden_size, initializer_range=0.02, dropout_rate=0.1, **kwargs):
        kwargs.setdefault("name", "output_head")
        super().__init__(**kwargs)
        if num_outputs < 1:
            raise ValueError(f"num_outputs={num_outputs} must be >= 1")
        self.num_outputs = num_outputs
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate
        self.dropout = BertDropout(dropout_rate)

    def build(self, input_shape=None):
        self.output_weights = self.add_weight(
            name="output_weights", shape=(self.num_outputs, self.hidden_size),
            initializer=initializers.truncated_normal(self.initializer_range))
        self.output_bias = self.add_weight(name="output_bias", shape=(self.num_outputs,), initializer="zeros",
                                           autocast=False)
        self.built = True

    def call(self, x, training=None):
        x = ops.cast(self.dropout(x, training=training), self.compute_dtype)
        logits = ops.matmul(x, ops.transpose(ops.cast(self.output_weights, self.compute_dtype)))
        return ops.cast(logits, "float32") + self.output_bias

    def checkpoint_variables(self):
        """{Google checkpoint name: variable}: `output_weights`, `output_bias`."""
        return {OUTPUT_WEIGHTS: self.output_weights, OUTPUT_BIAS: self.output_bias}

    def get_config(self):
        return {**super().get_config(), "num_outputs": self.num_outputs, "hidden_size": self.hidden_size,
                "initializer_range": self.initializer_range, "dropout_rate": self.dropout_rate}
