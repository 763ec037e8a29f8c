"""`python run_swag.py ...` from a checkout. The command is bert_tf/cli/run_swag.py,
installed by pip as `bert-tf-run-swag` (also `python -m bert_tf.cli.run_swag`)."""

from bert_tf.cli.run_swag import console

if __name__ == "__main__":
    console()
