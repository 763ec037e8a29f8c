"""`python extract_features.py ...` from a checkout. The command is bert_tf/cli/extract_features.py,
installed by pip as `bert-tf-extract-features` (also `python -m bert_tf.cli.extract_features`)."""

from bert_tf.cli.extract_features import console

if __name__ == "__main__":
    console()
