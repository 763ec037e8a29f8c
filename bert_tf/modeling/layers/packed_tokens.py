"""PackedTokens: the real tokens of a padded batch as one flat list, so that the position-wise layers of a
Transformer (every Dense, LayerNorm and residual add: about 90% of BERT's FLOPs) skip the padding."""

import keras
from keras import ops


class PackedTokens:
    """Where the real tokens of a padded batch are, to move per-token tensors between the padded layout
    [B, T, ...] and the packed one [N, ...] (N = the number of real tokens, in row-major order).

    A batch of texts of different lengths padded to its longest spends the compute of B * T tokens on N
    real ones: with sentence-length texts in batches of 256 about half of it (bench/bench_embeddings.py).
    Attention still runs padded ([B, heads, T, T], padding keys masked as before); everything else runs on
    the N real tokens. The shapes depend on the mask's values, so this is for graphs run by TensorFlow's
    executor (tf.function, SavedModel, LiteRT) and for eager JAX and PyTorch, not under XLA (jax.jit and
    jit_compile need static shapes: `packing_possible` tells).

        packed = PackedTokens(input_mask)       # int [B, T], 1 = real token
        flat = packed.pack(hidden)              # [B, T, H] -> [N, H]
        padded = packed.unpack(flat)            # [N, H] -> [B, T, H], zeros at the padding

    bucket_rows=True (training): the packed tensors have N' >= N rows, N rounded up to one of 8 sizes per
    octave (at most 12.5% more, 6% on average; at most B * T), the extra rows copies of the first position,
    computed but never unpacked (their gradient is zero). The TensorFlow backend's fused training kernels
    (tf_kernels: GELU, LayerNorm, dropout) are XLA-compiled once per input shape (about 0.1 s each): with N
    itself, nearly every batch would compile them again.
    """

    def __init__(self, input_mask, bucket_rows=False):
        real = ops.reshape(ops.not_equal(input_mask, 0), (-1,))  # [B * T]
        self.rows = ops.nonzero(real)[0]  # int [N]: the flat position (row * T + position) of each real token
        count, extra, nowhere = ops.shape(self.rows)[0], 0, ops.shape(real)[0]
        if bucket_rows:  # at most B * T rows: never more than the padded computation
            extra = ops.minimum(bucketed_size(count), nowhere) - count
        # [N' + 1]: the flat position each packed row (and the zero row `unpack` appends) goes back to; B * T
        # (nowhere) for the extra rows and the zero row.
        self._unpacked_at = ops.concatenate([self.rows, ops.full((extra + 1,), nowhere, self.rows.dtype)])
        if bucket_rows:
            self.rows = ops.concatenate([self.rows, ops.zeros((extra,), self.rows.dtype)])
            count = count + extra
        # [B, T]: the packed row of each token, N' (a zero row appended by `unpack`) for the padding.
        packed_row = ops.cumsum(ops.cast(real, "int32")) - 1
        self.index = ops.reshape(ops.where(real, packed_row, count), ops.shape(input_mask))

    def pack(self, padded):
        """[B, T, ...] -> [N, ...]: the rows of the real tokens."""
        flat = ops.reshape(padded, (-1, *padded.shape[2:]))
        return _take_rows(flat, self.rows, ops.reshape(self.index, (-1,)))

    def unpack(self, packed):
        """[N, ...] -> [B, T, ...]: each row back at its token's position, zeros at the padding. (Two gathers,
        not a scatter: TensorFlow's CPU ScatterNd took 8% of an embedding batch's time.)"""
        return _take_rows(self._with_zero_row(packed), self.index, self._unpacked_at)

    def unpack_at(self, packed, positions):
        """[N, ...], int positions [B] -> [B, ...]: each example's token at its position (zeros if padding)."""
        rows = ops.take_along_axis(self.index, ops.cast(positions, self.index.dtype)[:, None], axis=1)[:, 0]
        return ops.take(self._with_zero_row(packed), rows, axis=0)

    @staticmethod
    def _with_zero_row(packed):
        """[N, ...] -> [N + 1, ...]: a row of zeros appended (where the padding's index points)."""
        return ops.concatenate([packed, ops.zeros((1, *packed.shape[1:]), packed.dtype)], axis=0)


def _take_rows(table, indices, inverse):
    """table [R, ...], int indices [...] -> the rows ops.take(table, indices, axis=0), [*indices.shape, ...].

    `inverse` int [R]: for each row of table, the flat position in `indices` that takes it, or indices.size
    where none does. On the TensorFlow backend the gradient is then a gather too, the rows of dy at `inverse`
    (zeros at indices.size), instead of TensorFlow's scatter-add (UnsortedSegmentSum: 5% of the op time of
    a MiniLM fine-tuning step). That is the exact gradient when every row is taken once at most, and where
    a row is taken again (pack's extra rows) the other takings' gradient is zero, as the extra rows are
    never unpacked: their gradient is left out."""
    if keras.backend.backend() != "tensorflow":
        return ops.take(table, indices, axis=0)
    import tensorflow as tf  # the TensorFlow backend's gradient

    @tf.custom_gradient
    def take(table):
        def gradient(dy):
            flat = tf.reshape(dy, tf.concat([[-1], tf.shape(dy)[tf.rank(indices):]], 0))
            flat = tf.concat([flat, tf.zeros_like(flat[:1])], 0)
            return tf.gather(flat, inverse)

        return tf.gather(table, indices), gradient

    return take(table)


def bucketed_size(count):
    """int scalar count -> the smallest size >= count of the series 8, 9, ..., 15, 16, 18, ..., 30, 32, 36, ...
    (8 sizes per octave: multiples of 2^(floor(log2(count)) - 3), at least 8)."""
    count = ops.maximum(ops.cast(count, "int32"), 8)
    step = ops.cast(2 ** (ops.floor(ops.log2(ops.cast(count, "float32"))) - 3), "int32")
    return -(-count // step) * step


def packing_possible(input_mask):
    """Whether PackedTokens can pack `input_mask` here: its shapes depend on the mask's values, which XLA does not
    allow. False under XLA: a TensorFlow graph compiled with jit_compile (or inside a TPU computation), a JAX
    tracer (jax.jit); True eagerly, in TensorFlow graphs run by its executor and on PyTorch."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf
        from tensorflow.python.ops import control_flow_util  # the test tf.function(jit_compile=True) sets

        graph = tf.compat.v1.get_default_graph()
        return tf.executing_eagerly() or not control_flow_util.GraphOrParentsInXlaContext(graph)
    if backend == "jax":
        import jax

        return not isinstance(input_mask, jax.core.Tracer)
    return True
