"""Scores SQuAD predictions with the official v1.1 / v2.0 scripts' numbers (bert_tf/evaluation/squad.py):

    bert-tf-evaluate-squad dev-v1.1.json predictions.json
    bert-tf-evaluate-squad dev-v2.0.json predictions.json --na-prob-file null_odds.json

The official scripts' arguments; prints their JSON. Also `python -m bert_tf.cli.evaluate_squad`.
"""

import argparse
import json
import sys

from bert_tf.evaluation.squad import evaluate_files


def main(argv=None):
    """Exit status 0 with the results on stdout, or 1 with one `Error:` line on stderr."""
    parser = argparse.ArgumentParser(description="Official-equivalent SQuAD v1.1 / v2.0 evaluation.")
    parser.add_argument("data_file", metavar="DATA.json", help="SQuAD dataset file")
    parser.add_argument("pred_file", metavar="PREDICTIONS.json", help="model predictions (predictions.json)")
    parser.add_argument("--na-prob-file", "-n", metavar="NULL_ODDS.json",
                        help="SQuAD 2.0: no-answer scores per question (null_odds.json)")
    args = parser.parse_args(argv)
    try:
        results = evaluate_files(args.data_file, args.pred_file, args.na_prob_file)
    except (ValueError, OSError) as e:
        sys.stderr.write(f"Error: {e}\n")
        return 1
    sys.stdout.write((json.dumps(results, indent=2) if "exact" in results else json.dumps(results)) + "\n")
    return 0


def console():
    """The bert-tf-evaluate-squad command."""
    sys.exit(main())


if __name__ == "__main__":
    console()
