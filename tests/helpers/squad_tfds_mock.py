"""TFDS's SQuAD offline: tfds.testing.mock_data serving real SQuAD files through TFDS's own squad example
generator, in a shuffled order as TFDS's prepared data has. Used in-process and, by run_squad.py
subprocesses, through MOCKED_RUN."""

import contextlib
import os
import random

import tensorflow as tf

# run_squad.py in a subprocess with TFDS mocked: python -c MOCKED_RUN SQUAD_DIR FLAGS...
MOCKED_RUN = """import runpy, sys
from tests.helpers.squad_tfds_mock import mock_squad
with mock_squad(sys.argv.pop(1)):
    runpy.run_path("run_squad.py", run_name="__main__")
"""


@contextlib.contextmanager
def mock_squad(squad_dir):
    """TFDS mocked: squad/v1.1 and squad/v2.0 serve, shuffled, the rows that TFDS's squad builder generates from
    the files `squad_dir/{train|dev}-{v1.1|v2.0}.json` there are (read now: the mock hides the file system)."""
    import tensorflow_datasets as tfds

    rows = {}
    for config in ("v1.1", "v2.0"):
        for split, name in (("train", "train"), ("validation", "dev")):
            path = os.path.join(squad_dir, f"{name}-{config}.json")
            if os.path.exists(path):
                rows[config, split] = [row for _, row in tfds.builder(f"squad/{config}")._generate_examples(path)]
                random.Random(0).shuffle(rows[config, split])

    def as_dataset(builder, split, **kwargs):
        return tf.data.Dataset.from_generator(lambda: iter(rows[builder.builder_config.name, split]),
                                              output_signature=builder.info.features.get_tensor_spec())

    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
        yield
