"""`python encode_sentences.py ...` from a checkout. The command is bert_tf/cli/encode_sentences.py,
installed by pip as `bert-tf-encode-sentences` (also `python -m bert_tf.cli.encode_sentences`)."""

from bert_tf.cli.encode_sentences import console

if __name__ == "__main__":
    console()
