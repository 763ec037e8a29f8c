"""Inverted dropout with Keras' seeds: one definition, and on the TensorFlow backend a faster kernel."""

import keras

from bert_tf.modeling.layers.tf_kernels import hashed_dropout


@keras.saving.register_keras_serializable(package="bert_tf")
class BertDropout(keras.layers.Layer):
    """Inverted dropout (Srivastava et al. 2014): in training, each element is zeroed with probability
    `rate` and the others are scaled by 1 / (1 - rate); outside training, the identity. The masks come from a
    Keras SeedGenerator (its state is checkpointed by the training loop, so a resumed run draws the same
    masks).

    On the JAX and PyTorch backends this is `keras.random.dropout` (the backend's own generator, float32
    uniforms). On the TensorFlow backend it is `tf_kernels.hashed_dropout` (rate to 1/65536): TensorFlow's
    Philox kernel on CPU is most of a dropout's time, so each element's bits are a hash of its index and a
    per-call key instead, in one XLA-fused kernel with the backward another (3.3-4.7x keras.layers.Dropout,
    whose bfloat16 uniforms have 7 random bits: a rate of 0.1 drops 10.16% there).

    Call: inputs [...] (any float dtype), training -> same shape and dtype.
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"dropout rate={rate} must be in [0, 1)")
        self.rate = rate
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, inputs, training=None):
        if not training or not self.rate:
            return inputs
        if keras.backend.backend() == "tensorflow":
            return hashed_dropout(inputs, self.rate, self.seed_generator.next())
        return keras.random.dropout(inputs, self.rate, seed=self.seed_generator)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}
