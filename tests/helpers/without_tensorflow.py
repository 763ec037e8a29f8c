"""Runs a script of the checkout in a process where `import tensorflow` fails, as on a JAX host without TensorFlow
(a CUDA 13 GPU machine, a TPU VM's JAX image):

    KERAS_BACKEND=jax python tests/helpers/without_tensorflow.py run_pretraining.py --input_file=... ...

Any import of TensorFlow, however indirect, raises ImportError (sys.modules["tensorflow"] is None), so a command
that runs to its end here needs no TensorFlow at all. `command(script)` is that argv, for subprocess;
tests/helpers/kill_at.py does the same when the environment has VARIABLE set.
"""

import os
import runpy
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VARIABLE = "BERT_TF_TEST_WITHOUT_TENSORFLOW"


def command(script, tensorflow=False):
    """The argv that runs `script` (a path in the checkout, e.g. "run_classifier.py") with this Python: in a
    process where TensorFlow cannot be imported, or with `tensorflow=True` as it is."""
    return [sys.executable, *([] if tensorflow else [os.path.abspath(__file__)]), os.path.join(ROOT, script)]

if __name__ == "__main__":
    sys.modules["tensorflow"] = None
    sys.path.insert(0, ROOT)
    script, sys.argv = os.path.join(ROOT, sys.argv[1]), sys.argv[1:]  # (an absolute path stays as it is)
    runpy.run_path(script, run_name="__main__")
