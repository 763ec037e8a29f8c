"""Scores SQuAD-format predictions with an official evaluation script's numbers: SQuAD v1.1 / v2.0
(bert_tf/evaluation/squad.py) or CMRC 2018, also DRCD's (bert_tf/evaluation/cmrc.py):

    bert-tf-evaluate-squad dev-v1.1.json predictions.json
    bert-tf-evaluate-squad dev-v2.0.json predictions.json --na-prob-file null_odds.json
    bert-tf-evaluate-squad --metric=cmrc2018 cmrc2018_dev.json predictions.json

The official scripts' arguments; prints their JSON (CMRC 2018: one line, AVERAGE / F1 / EM as "%.3f" strings,
TOTAL, SKIP, FILE). Also `python -m bert_tf.cli.evaluate_squad`.
"""

import argparse
import json
import sys

from bert_tf.evaluation import cmrc
from bert_tf.evaluation.squad import evaluate_files

METRICS = ("squad", "cmrc2018")


def _evaluate(args):
    """The printed line(s) of the chosen evaluation; ValueError for a flag it does not take."""
    if args.metric == "cmrc2018":
        if args.na_prob_file:
            raise ValueError(f"--na-prob-file={args.na_prob_file} is for the SQuAD 2.0 evaluation; --metric=cmrc2018 "
                             "has no null odds")
        results = cmrc.evaluate_files(args.data_file, args.pred_file)
        return json.dumps(cmrc.official_output(results, args.pred_file))
    results = evaluate_files(args.data_file, args.pred_file, args.na_prob_file)
    return json.dumps(results, indent=2) if "exact" in results else json.dumps(results)


def main(argv=None):
    """Exit status 0 with the results on stdout, or 1 with one `Error:` line on stderr."""
    parser = argparse.ArgumentParser(description="Official-equivalent SQuAD v1.1 / v2.0 or CMRC 2018 evaluation.")
    parser.add_argument("data_file", metavar="DATA.json", help="SQuAD-format dataset file")
    parser.add_argument("pred_file", metavar="PREDICTIONS.json", help="model predictions (predictions.json)")
    parser.add_argument("--na-prob-file", "-n", metavar="NULL_ODDS.json",
                        help="SQuAD 2.0: no-answer scores per question (null_odds.json)")
    parser.add_argument("--metric", choices=METRICS, default="squad",
                        help="squad: the official SQuAD v1.1 / v2.0 script (v2.0 when the data has is_impossible); "
                        "cmrc2018: cmrc2018_evaluate.py, character F1 and EM for Chinese (CMRC 2018, DRCD; needs "
                        "nltk)")
    args = parser.parse_args(argv)
    try:
        printed = _evaluate(args)
    except (ValueError, OSError) as e:
        sys.stderr.write(f"Error: {e}\n")
        return 1
    sys.stdout.write(printed + "\n")
    return 0


def console():
    """The bert-tf-evaluate-squad command."""
    sys.exit(main())


if __name__ == "__main__":
    console()
