"""`python export_model.py ...` from a checkout. The command is bert_tf/cli/export_model.py,
installed by pip as `bert-tf-export-model` (also `python -m bert_tf.cli.export_model`)."""

from bert_tf.cli.export_model import console

if __name__ == "__main__":
    console()
