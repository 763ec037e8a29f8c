"""ScalarMix: a learned weighted sum of several layers' outputs, as ELMo combines its layers (Peters et al.
2018, equation 1), for the feature-based tagger's weighted-sum features (Devlin et al. 2019, Table 7)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="bert_tf")
class ScalarMix(keras.layers.Layer):
    """gamma * sum_k softmax(w)_k * layers[:, :, k]: `layer_weights` w [K] (zeros: an equal average at first)
    and the scale `gamma` [] (one), both trained; the softmax keeps the weights positive and summing to 1.

    Call: layers float [B, T, K, H] -> float32 [B, T, H].
    """

    def __init__(self, num_layers, **kwargs):
        kwargs.setdefault("name", "scalar_mix")
        super().__init__(**kwargs)
        if num_layers < 1:
            raise ValueError(f"ScalarMix num_layers={num_layers} must be >= 1")
        self.num_layers = num_layers

    def build(self, input_shape=None):
        self.layer_weights = self.add_weight(name="layer_weights", shape=(self.num_layers,), initializer="zeros",
                                             autocast=False)
        self.gamma = self.add_weight(name="gamma", shape=(), initializer="ones", autocast=False)
        self.built = True

    def call(self, layers):
        weights = ops.softmax(self.layer_weights)
        return self.gamma * ops.einsum("k,btkh->bth", weights, ops.cast(layers, "float32"))

    def checkpoint_variables(self):
        """{name: variable}: `layer_weights`, `gamma`."""
        return {"layer_weights": self.layer_weights, "gamma": self.gamma}

    def get_config(self):
        return {**super().get_config(), "num_layers": self.num_layers}
