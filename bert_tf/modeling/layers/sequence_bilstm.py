"""SequenceBiLSTM: a stack of bidirectional LSTMs over the encoder's per-token outputs, padding masked (the
randomly initialised BiLSTM of Devlin et al. 2019, Table 5 "+ BiLSTM" and the feature-based tagger of Table 7)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="bert_tf")
class SequenceBiLSTM(keras.layers.Layer):
    """`num_layers` bidirectional LSTM layers of `units` units per direction; layer i > 0 reads the
    concatenated forward and backward outputs of layer i - 1.

    Padding is masked: the forward LSTM's state is carried unchanged over the padding after the last real
    token, the backward LSTM starts at the last real token; padding positions of the sequence output are 0.
    So the outputs at the real positions do not depend on how much padding follows them.

    Call: x float [B, T, H], input_mask int [B, T] (1 real, 0 padding; right-padded) ->
      sequence float32 [B, T, 2 * units]: at each position, [forward output, backward output] of the last layer;
      final float32 [B, 2 * units]: [the forward state at the last real token, the backward state at the first
      token], each direction's summary of the whole sequence (what a sentence-level head reads).

    Variables (checkpoint names, `checkpoint_variables`): `layer_{i}/{forward,backward}/kernel` [in, 4 units],
    `recurrent_kernel` [units, 4 units], `bias` [4 units]; Keras' gate order (input, forget, cell, output),
    forget-gate bias initialised to 1.
    """

    def __init__(self, units, num_layers=1, **kwargs):
        kwargs.setdefault("name", "bilstm")
        super().__init__(**kwargs)
        if units < 1 or num_layers < 1:
            raise ValueError(f"SequenceBiLSTM units={units}, num_layers={num_layers}: both must be >= 1")
        self.units, self.num_layers = units, num_layers
        # Lists of layers (Keras and TensorFlow track their variables; dicts inside lists they would not).
        self.forward_layers, self.backward_layers = (
            [keras.layers.LSTM(units, return_sequences=True, return_state=True, go_backwards=direction == "backward",
                               name=f"layer_{i}_{direction}") for i in range(num_layers)]
            for direction in ("forward", "backward"))

    def build(self, input_shape=None):
        width = input_shape[-1] if input_shape is not None else None
        for forward, backward in zip(self.forward_layers, self.backward_layers):
            forward.build((None, None, width))
            backward.build((None, None, width))
            width = 2 * self.units
        self.built = True

    def call(self, x, input_mask, training=None):
        mask = ops.cast(input_mask, "bool")
        keep = ops.cast(mask, self.compute_dtype)[..., None]  # [B, T, 1]
        x = ops.cast(x, self.compute_dtype)
        for forward_lstm, backward_lstm in zip(self.forward_layers, self.backward_layers):
            forward, forward_h, _ = forward_lstm(x, mask=mask, training=training)
            backward, backward_h, _ = backward_lstm(x, mask=mask, training=training)
            backward = ops.flip(backward, axis=1)  # go_backwards returns the outputs last position first
            x = ops.concatenate([forward, backward], axis=-1) * keep
        final = ops.concatenate([forward_h, backward_h], axis=-1)
        return ops.cast(x, "float32"), ops.cast(final, "float32")

    def checkpoint_variables(self):
        """{name: variable}: `layer_{i}/{forward,backward}/{kernel,recurrent_kernel,bias}`."""
        return {f"layer_{i}/{direction}/{variable.path.rsplit('/', 1)[-1]}": variable
                for direction, layers in (("forward", self.forward_layers), ("backward", self.backward_layers))
                for i, lstm in enumerate(layers) for variable in lstm.cell.weights}

    def get_config(self):
        return {**super().get_config(), "units": self.units, "num_layers": self.num_layers}
