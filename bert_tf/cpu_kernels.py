"""Which CPU kernels TensorFlow runs: oneDNN's on every x86-64 CPU, not only on those TensorFlow picks itself.

TensorFlow 2.20 / 2.21 turn their oneDNN kernels (matmuls, fused ops) on by themselves only on x86 CPUs with AVX-512
(VNNI, BF16 or AMX: recent Xeons, AMD Zen 4); on the others (AMD EPYC up to Zen 3, Intel without AVX-512) they run
Eigen's, which are slower there. Measured on an AMD EPYC with AVX2 only (bench/RESULTS.md, H79 and H80): a 2048 x
2048 float32 matmul 0.120 TFLOP/s with Eigen's, 0.155 with oneDNN's; the RT fine-tuning job 285.5 s against 204.9 s
(medians of 3 seeds), the same dev accuracy in each seed. The two round differently (a SavedModel served by a
TensorFlow on Eigen's kernels gives MiniLM outputs within ~1e-4 of oneDNN's). TensorFlow reads TF_ENABLE_ONEDNN_OPTS
once, when it loads, so the choice is made before the first `import tensorflow`: by the commands (`bert_tf.cli`),
the tests and the benchmarks' bert_tf processes, which call `prefer_onednn()` first. A user's own
TF_ENABLE_ONEDNN_OPTS always wins (0: Eigen's kernels); in a notebook, set it before importing TensorFlow. Other
CPUs (ARM, where TensorFlow decides about oneDNN with ACL) are left to TensorFlow.
"""

import os
import platform

VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
X86_64 = ("x86_64", "amd64")


def prefer_onednn(environment=os.environ):
    """Sets TF_ENABLE_ONEDNN_OPTS=1 in `environment` (this process's, or a child's to be) on an x86-64 machine
    unless it sets it (module docstring); without effect on a TensorFlow already imported."""
    if platform.machine().lower() in X86_64:
        environment.setdefault(VARIABLE, "1")
