"""PackedTokens: the real tokens of a padded batch as one flat list, so that the position-wise layers of a
Transformer (every Dense, LayerNorm and residual add: about 90% of BERT's FLOPs) skip the padding."""

import tensorflow as tf


class PackedTokens:
    """Where the real tokens of a padded batch are, to move per-token tensors between the padded layout
    [B, T, ...] and the packed one [N, ...] (N = the number of real tokens, in row-major order).

    A batch of texts of different lengths padded to its longest spends the compute of B * T tokens on N
    real ones: with sentence-length texts in batches of 256 about half of it (bench/bench_embeddings.py).
    Attention still runs padded ([B, heads, T, T], padding keys masked as before); everything else runs on
    the N real tokens. The shapes depend on the mask's values, so this is for graphs run by TensorFlow's
    executor (tf.function, SavedModel, LiteRT), not under XLA (jit_compile needs static shapes).

        packed = PackedTokens(input_mask)       # int [B, T], 1 = real token
        flat = packed.pack(hidden)              # [B, T, H] -> [N, H]
        padded = packed.unpack(flat)            # [N, H] -> [B, T, H], zeros at the padding
    """

    def __init__(self, input_mask):
        real = tf.reshape(tf.not_equal(input_mask, 0), [-1])  # [B * T]
        self.rows = tf.where(real)[:, 0]  # int64 [N]: the flat position (row * T + position) of each real token
        count = tf.cast(tf.shape(self.rows)[0], tf.int32)
        # [B, T]: the packed row of each token, N (a zero row appended by `unpack`) for the padding.
        self.index = tf.reshape(tf.where(real, tf.cumsum(tf.cast(real, tf.int32)) - 1, count), tf.shape(input_mask))

    def pack(self, padded):
        """[B, T, ...] -> [N, ...]: the rows of the real tokens."""
        shape = tf.shape(padded)
        return tf.gather(tf.reshape(padded, tf.concat([[shape[0] * shape[1]], shape[2:]], axis=0)), self.rows)

    def unpack(self, packed):
        """[N, ...] -> [B, T, ...]: each row back at its token's position, zeros at the padding. (Two gathers,
        not tf.scatter_nd: TensorFlow's CPU ScatterNd took 8% of an embedding batch's time.)"""
        zero = tf.zeros(tf.concat([[1], tf.shape(packed)[1:]], axis=0), packed.dtype)
        return tf.gather(tf.concat([packed, zero], axis=0), self.index)
