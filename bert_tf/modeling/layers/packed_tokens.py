"""PackedTokens: the real tokens of a padded batch as one flat list, so that the position-wise layers of a
Transformer (every Dense, LayerNorm and residual add: about 90% of BERT's FLOPs) skip the padding."""

from keras import ops


class PackedTokens:
    """Where the real tokens of a padded batch are, to move per-token tensors between the padded layout
    [B, T, ...] and the packed one [N, ...] (N = the number of real tokens, in row-major order).

    A batch of texts of different lengths padded to its longest spends the compute of B * T tokens on N
    real ones: with sentence-length texts in batches of 256 about half of it (bench/bench_embeddings.py).
    Attention still runs padded ([B, heads, T, T], padding keys masked as before); everything else runs on
    the N real tokens. The shapes depend on the mask's values, so this is for graphs run by TensorFlow's
    executor (tf.function, SavedModel, LiteRT) and for eager JAX and PyTorch, not under XLA (jax.jit and
    jit_compile need static shapes).

        packed = PackedTokens(input_mask)       # int [B, T], 1 = real token
        flat = packed.pack(hidden)              # [B, T, H] -> [N, H]
        padded = packed.unpack(flat)            # [N, H] -> [B, T, H], zeros at the padding
    """

    def __init__(self, input_mask):
        real = ops.reshape(ops.not_equal(input_mask, 0), (-1,))  # [B * T]
        self.rows = ops.nonzero(real)[0]  # int [N]: the flat position (row * T + position) of each real token
        count = ops.shape(self.rows)[0]
        # [B, T]: the packed row of each token, N (a zero row appended by `unpack`) for the padding.
        packed_row = ops.cumsum(ops.cast(real, "int32")) - 1
        self.index = ops.reshape(ops.where(real, packed_row, count), ops.shape(input_mask))

    def pack(self, padded):
        """[B, T, ...] -> [N, ...]: the rows of the real tokens."""
        return ops.take(ops.reshape(padded, (-1, *padded.shape[2:])), self.rows, axis=0)

    def unpack(self, packed):
        """[N, ...] -> [B, T, ...]: each row back at its token's position, zeros at the padding. (Two gathers,
        not a scatter: TensorFlow's CPU ScatterNd took 8% of an embedding batch's time.)"""
        zero = ops.zeros((1, *packed.shape[1:]), packed.dtype)
        return ops.take(ops.concatenate([packed, zero], axis=0), self.index, axis=0)
