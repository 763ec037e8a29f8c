"""`python prepare_corpus.py ...` from a checkout. The command is bert_tf/cli/prepare_corpus.py,
installed by pip as `bert-tf-prepare-corpus` (also `python -m bert_tf.cli.prepare_corpus`)."""

from bert_tf.cli.prepare_corpus import console

if __name__ == "__main__":
    console()
