"""`python run_embedder.py ...` from a checkout. The command is bert_tf/cli/run_embedder.py,
installed by pip as `bert-tf-run-embedder` (also `python -m bert_tf.cli.run_embedder`)."""

from bert_tf.cli.run_embedder import console

if __name__ == "__main__":
    console()
