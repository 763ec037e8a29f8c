"""TensorBoard scalars of a training run (`train/` and `eval/` under its output_dir), written by tensorboardX,
which needs no TensorFlow: the same event files on every Keras backend and on hosts without TensorFlow.

    with ScalarWriter(os.path.join(model_dir, "train")) as writer:
        writer.write(step, {"loss": 0.42, "learning_rate": 1e-4})   # flushed: visible to TensorBoard at once

Each value is a scalar summary (`simple_value`) at its step, which TensorBoard shows under Scalars as it shows
tf.summary.scalar's. An event file is an append-only log that TensorBoard reads up to a cut record, so it is
written in place, not through atomic_io.
"""

import numpy as np
from tensorboardX import SummaryWriter


class ScalarWriter:
    """Writes {name: float} at a step into a new event file in `directory` (made if missing)."""

    def __init__(self, directory):
        self._writer = SummaryWriter(directory)

    def write(self, step, values):
        for name, value in values.items():
            self._writer.add_scalar(name, float(np.float32(value)), global_step=int(step))
        self._writer.flush()

    def close(self):
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
