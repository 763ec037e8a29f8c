"""The dense projection every BERT layer uses, written so the CPU/GPU graph optimisers can fuse it."""

import keras
import numpy as np
from keras import ops

from bert_tf.modeling.layers import activations, initializers
from bert_tf.modeling.layers.tf_kernels import gelu_for_training


def training_form(activation):
    """The form of `activation` to use when gradients are taken: on the TensorFlow backend, GELU's fused
    forward and backward (`tf_kernels.gelu_for_training`); otherwise `activation` itself (JAX's XLA fuses its
    automatic gradient, PyTorch differentiates it as it is)."""
    if activation is activations.gelu and keras.backend.backend() == "tensorflow":
        return gelu_for_training
    return activation


@keras.saving.register_keras_serializable(package="bert_tf")
class BertDense(keras.layers.Layer):
    """`activation(x @ kernel + bias)` over the last axis, as ONE 2-D MatMul + BiasAdd (+ activation).

    Same weights and names as `keras.layers.Dense` (`kernel` [in, units], `bias` [units]), so Google's
    checkpoint scopes (`.../query/kernel`) are unchanged. The difference is the graph: Keras' Dense runs a
    rank-3 input through Tensordot (MatMul, then a Reshape, then BiasAdd), and the Reshape between MatMul and
    BiasAdd stops TensorFlow's remapper from fusing them; here the input is flattened to [N, in] first, so
    MatMul + BiasAdd + GELU become one oneDNN (CPU) / cuBLASLt (GPU) fused kernel. The feed-forward
    block runs 1.41x faster under mixed_bfloat16 and 1.12x in float32 on CPU (bench/bench_optimisations.py).

    In training the activation takes its `training_form` (GELU: XLA-fused forward and backward).

    `quantize("int8")` (for serving) replaces the kernel by an int8 `kernel` and a float32 `kernel_scale`
    [units], one scale per output channel (abs-max / 127); each call dequantizes the kernel to the compute
    dtype (weight-only quantization: the matmul itself runs in the compute dtype, see `quantize`).

    Call: x [..., in], training -> [..., units] in the compute dtype.
    """

    def __init__(self, units, activation=None, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.activation = keras.activations.get(activation)
        self.initializer_range = initializer_range

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units),
                                      initializer=initializers.truncated_normal(self.initializer_range))
        self.bias = self.add_weight(name="bias", shape=(self.units,), initializer="zeros")
        self.built = True

    @property
    def quantized(self):
        """True after `quantize("int8")`."""
        return self.built and self.kernel.dtype == "int8"

    def quantize(self, mode, type_check=True, config=None):
        """Stores the kernel as int8 with one float32 scale per output channel: kernel ~= int8 * scale, with
        scale = max |kernel[:, j]| / 127 (round to nearest; the relative error per weight is at most
        1/254 of its column's largest weight). Only for serving (the int8 kernel is not trainable).

        Why weight-only: TensorFlow 2.21 has no fast int8 x int8 matmul on CPU (measured [128, 768] x
        [768, 3072] on 2 cores: int8 -> int32 MatMul 15.8 ms, bfloat16 1.0 ms, float32 2.5 ms), so
        quantizing the activations per call would make the model slower; dequantizing the kernel costs one
        elementwise pass over the weights per call. Keras' own `Dense.quantize` does quantize the
        activations (9.3 ms for that matmul). LiteRT's int8 kernels are the fast int8 route
        (bert_tf/export/tflite.py).

        Args: mode: "int8" (the only mode); type_check, config: Keras' `Layer.quantize` arguments, unused.
        """
        del type_check, config
        if mode != "int8":
            raise ValueError(f"BertDense {self.name}: quantization mode {mode!r} is not supported; expected 'int8'")
        if not self.built or self.quantized:
            raise ValueError(f"BertDense {self.name}: quantize a built float layer (built={self.built}, "
                             f"quantized={self.quantized})")
        kernel = ops.convert_to_numpy(ops.cast(self.kernel, "float32"))
        scale = np.abs(kernel).max(axis=0) / 127.0
        scale[scale == 0] = 1.0  # an all-zero column stays zero
        self._tracker.unlock()
        try:
            del self.kernel
            self.kernel = self.add_weight(name="kernel", shape=kernel.shape, dtype="int8", trainable=False,
                                          initializer="zeros", autocast=False)
            self.kernel_scale = self.add_weight(name="kernel_scale", shape=scale.shape, dtype="float32",
                                                trainable=False, initializer="ones", autocast=False)
        finally:
            self._tracker.lock()
        self.kernel.assign(np.round(kernel / scale).astype(np.int8))
        self.kernel_scale.assign(scale.astype(np.float32))

    def _kernel_value(self):
        """The kernel [in, units] in the compute dtype (dequantized when int8)."""
        if not self.quantized:
            return self.kernel
        return ops.cast(self.kernel, self.compute_dtype) * ops.cast(self.kernel_scale, self.compute_dtype)

    def call(self, x, training=None):
        activation = training_form(self.activation) if training else self.activation
        leading = ops.shape(x)[:-1]
        flat = ops.reshape(x, (-1, ops.shape(x)[-1]))
        outputs = activation(ops.add(ops.matmul(flat, self._kernel_value()), self.bias))
        return ops.reshape(outputs, (*leading, self.units))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": keras.activations.serialize(self.activation),
                "initializer_range": self.initializer_range}
