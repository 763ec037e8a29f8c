"""`python run_classifier.py ...` from a checkout. The command is bert_tf/cli/run_classifier.py,
installed by pip as `bert-tf-run-classifier` (also `python -m bert_tf.cli.run_classifier`)."""

from bert_tf.cli.run_classifier import console

if __name__ == "__main__":
    console()
