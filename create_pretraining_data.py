"""`python create_pretraining_data.py ...` from a checkout. The command is bert_tf/cli/create_pretraining_data.py,
installed by pip as `bert-tf-create-pretraining-data` (also `python -m bert_tf.cli.create_pretraining_data`)."""

from bert_tf.cli.create_pretraining_data import console

if __name__ == "__main__":
    console()
