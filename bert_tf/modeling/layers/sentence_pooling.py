"""SentencePooling: one vector per sentence from the encoder's per-token outputs, as sentence-transformers
pools (its `Pooling` and `Normalize` modules)."""

import keras
from keras import ops

POOLING_MODES = ("mean", "cls", "max", "mean_sqrt_len")


def l2_normalize(x):
    """x float [..., H] divided by its L2 norm along H (at least 1e-12: sentence-transformers' Normalize)."""
    return x / ops.maximum(ops.norm(x, axis=-1, keepdims=True), 1e-12)


@keras.saving.register_keras_serializable(package="bert_tf")
class SentencePooling(keras.layers.Layer):
    """Pools a sequence output over its real tokens; padding is never pooled.

    mode: "mean" (the average of the real tokens), "cls" (the [CLS] token's vector), "max" (per dimension,
      the largest over the real tokens), "mean_sqrt_len" (their sum divided by the square root of their
      count). normalize: divide by the L2 norm (sentence-transformers' Normalize: eps 1e-12).

    Inputs: sequence_output float [B, T, H], input_mask int [B, T] (1 real, 0 padding).
    Output: float32 [B, H].
    """

    def __init__(self, mode="mean", normalize=False, **kwargs):
        super().__init__(**kwargs)
        if mode not in POOLING_MODES:
            raise ValueError(f"pooling {mode!r}: expected one of {', '.join(POOLING_MODES)}")
        self.mode, self.normalize = mode, bool(normalize)

    def call(self, sequence_output, input_mask):
        x = ops.cast(sequence_output, "float32")
        if self.mode == "cls":
            pooled = x[:, 0]
        else:
            mask = ops.expand_dims(ops.cast(input_mask, "float32"), -1)  # [B, T, 1]
            if self.mode == "max":
                pooled = ops.max(ops.where(mask > 0, x, ops.full_like(x, -1e9)), axis=1)
            else:
                count = ops.maximum(ops.sum(mask, axis=1), 1e-9)  # [B, 1], as sentence-transformers clamps
                total = ops.sum(x * mask, axis=1)
                pooled = total / (count if self.mode == "mean" else ops.sqrt(count))
        return l2_normalize(pooled) if self.normalize else pooled

    def get_config(self):
        return {**super().get_config(), "mode": self.mode, "normalize": self.normalize}
