"""The original `run_classifier` module (TF1 code on tf.compat.v1) as a test oracle. Its `modeling` import
needs tf.contrib, which TF2 lacks; the processors and `convert_single_example` do not use it, so a stub
stands in during the import."""

import sys
import types

from tests.original_bert import import_original


def original_run_classifier():
    if "bert.run_classifier" not in sys.modules:
        sys.modules["bert.modeling"] = types.ModuleType("bert.modeling")
        try:
            import_original("run_classifier")
        finally:
            del sys.modules["bert.modeling"]
    return sys.modules["bert.run_classifier"]
