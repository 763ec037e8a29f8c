"""`python build_vocab.py ...` from a checkout. The command is bert_tf/cli/build_vocab.py,
installed by pip as `bert-tf-build-vocab` (also `python -m bert_tf.cli.build_vocab`)."""

from bert_tf.cli.build_vocab import console

if __name__ == "__main__":
    console()
