"""`python convert_checkpoint.py ...` from a checkout. The command is bert_tf/cli/convert_checkpoint.py,
installed by pip as `bert-tf-convert-checkpoint` (also `python -m bert_tf.cli.convert_checkpoint`)."""

from bert_tf.cli.convert_checkpoint import console

if __name__ == "__main__":
    console()
