"""Dropout with 16 random bits per element: half the random-number work of keras.layers.Dropout."""

import keras
import tensorflow as tf

_LEVELS = 1 << 16  # an element is dropped when its 16 random bits, as an integer, are below rate * _LEVELS


@keras.saving.register_keras_serializable(package="bert_tf")
class BertDropout(keras.layers.Layer):
    """Inverted dropout (Srivastava et al. 2014): in training, each element is zeroed with probability
    `rate` (to 1/65536) and the others are scaled by 1 / (1 - rate); outside training, the identity.

    keras.layers.Dropout draws one uniform number per element in the input's dtype (for bfloat16, 7 random
    bits: a rate of 0.1 drops 10.16%); here each 32-bit output of the Philox generator decides two elements
    with 16 bits each, which halves the random-number work, a visible share of a CPU training step
    (bench/bench_optimisations.py). The draw is stateless, seeded from a Keras SeedGenerator (its state is
    checkpointed by the training loop, so a resumed run draws the same masks).

    Call: inputs [...] (any float dtype), training -> same shape and dtype.
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"dropout rate={rate} must be in [0, 1)")
        self.rate = rate
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self._threshold = round(rate * _LEVELS)

    def call(self, inputs, training=None):
        if not training or not self._threshold:
            return inputs
        seed = tf.cast(tf.math.floormod(self.seed_generator.next(), tf.int32.max - 1), tf.int32)
        count = tf.size(inputs)
        bits = tf.random.stateless_uniform([(count + 1) // 2], seed, minval=None, maxval=None, dtype=tf.uint32)
        halves = tf.reshape(tf.bitcast(bits, tf.uint16), [-1])[:count]
        keep = tf.reshape(halves, tf.shape(inputs)) >= tf.constant(self._threshold, tf.uint16)
        scaled = inputs * tf.constant(1.0 / (1.0 - self.rate), inputs.dtype)
        return tf.where(keep, scaled, tf.zeros((), inputs.dtype))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}
