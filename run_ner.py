"""`python run_ner.py ...` from a checkout. The command is bert_tf/cli/run_ner.py,
installed by pip as `bert-tf-run-ner` (also `python -m bert_tf.cli.run_ner`)."""

from bert_tf.cli.run_ner import console

if __name__ == "__main__":
    console()
