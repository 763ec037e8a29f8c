"""`python run_pretraining.py ...` from a checkout. The command is bert_tf/cli/run_pretraining.py,
installed by pip as `bert-tf-run-pretraining` (also `python -m bert_tf.cli.run_pretraining`)."""

from bert_tf.cli.run_pretraining import console

if __name__ == "__main__":
    console()
