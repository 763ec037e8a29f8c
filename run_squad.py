"""`python run_squad.py ...` from a checkout. The command is bert_tf/cli/run_squad.py,
installed by pip as `bert-tf-run-squad` (also `python -m bert_tf.cli.run_squad`)."""

from bert_tf.cli.run_squad import console

if __name__ == "__main__":
    console()
