"""The original `run_classifier` module (TF1 code on tf.compat.v1) as a test oracle: its processors and
`convert_single_example` (see `import_original_without_modeling`)."""

from tools.original_bert import import_original_without_modeling


def original_run_classifier():
    return import_original_without_modeling("run_classifier")
