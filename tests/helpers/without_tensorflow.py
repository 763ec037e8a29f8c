"""Runs a script of the checkout in a process where `import tensorflow` fails, as on a JAX host without TensorFlow
(a CUDA 13 GPU machine, a TPU VM's JAX image):

    KERAS_BACKEND=jax python tests/helpers/without_tensorflow.py run_pretraining.py --input_file=... ...

Any import of TensorFlow, however indirect, raises ImportError (sys.modules["tensorflow"] is None), so a command
that runs to its end here needs no TensorFlow at all.
"""

import os
import runpy
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__":
    sys.modules["tensorflow"] = None
    sys.path.insert(0, ROOT)
    script, sys.argv = os.path.join(ROOT, sys.argv[1]), sys.argv[1:]
    runpy.run_path(script, run_name="__main__")
