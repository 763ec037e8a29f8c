"""The dictionary baselines a Chinese tagger must beat, scored by run_ner.py's own scorers on a People's Daily
dev or test file (tools/make_finetuning_data.py peoples_daily writes them):

    python tools/tagging_baselines.py DATA_DIR [--eval_file=dev.txt]

  segmentation  forward maximum matching with the training file's words (a character no word starts with
                is a word alone): SIGHAN's classic dictionary baseline.
  pos           each word's most frequent training tag; a word unseen in training gets the most frequent tag.
  entities      the training file's entities (their most frequent type), found by forward maximum matching
                over the characters; everything else O. (The majority tag, O everywhere, has F1 0.)

Prints one JSON object: {scheme: {metric: value}} with the keys run_ner.py writes in eval_results.txt.
"""

import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_tf.data.tasks.peoples_daily import read_peoples_daily, segmentation_tags
from bert_tf.evaluation import conlleval, segmentation


def forward_maximum_matching(characters, dictionary, longest):
    """(start, end) spans of `characters` (list of str): at each position the longest dictionary word (at most
    `longest` characters), else the character alone."""
    spans, start = [], 0
    while start < len(characters):
        end = next((end for end in range(min(len(characters), start + longest), start + 1, -1)
                    if "".join(characters[start:end]) in dictionary), start + 1)
        spans.append((start, end))
        start = end
    return spans


def segmentation_baseline(train, evaluated):
    """SegmentationScores of maximum matching with the training words."""
    words = {w for s in train for w in segmentation.words_of(s.words, s.tags)}
    longest = max(map(len, words))
    predicted = [segmentation_tags(["".join(sentence.words[start:end]) for start, end in
                                    forward_maximum_matching(sentence.words, words, longest)])
                 for sentence in evaluated]
    return segmentation.evaluate([s.words for s in evaluated], [s.tags for s in evaluated], predicted, words)


def pos_baseline(train, evaluated):
    """Word accuracy of each word's most frequent training tag."""
    by_word = collections.defaultdict(collections.Counter)
    for sentence in train:
        for word, tag in zip(sentence.words, sentence.tags):
            by_word[word][tag] += 1
    overall = collections.Counter(t for s in train for t in s.tags).most_common(1)[0][0]
    pairs = [(tag, by_word[word].most_common(1)[0][0] if word in by_word else overall)
             for s in evaluated for word, tag in zip(s.words, s.tags)]
    return sum(gold == guess for gold, guess in pairs) / len(pairs)


def entity_baseline(train, evaluated):
    """conlleval scores of tagging the training entities wherever they occur."""
    types = collections.defaultdict(collections.Counter)
    for sentence in train:
        for start, end, kind in _entities(sentence.tags):
            types["".join(sentence.words[start:end])][kind] += 1
    dictionary = {name: counts.most_common(1)[0][0] for name, counts in types.items()}
    longest = max(map(len, dictionary))
    predicted = []
    for sentence in evaluated:
        tags = []
        for start, end in forward_maximum_matching(sentence.words, dictionary, longest):
            kind = dictionary.get("".join(sentence.words[start:end]))
            tags += ["O"] * (end - start) if kind is None else [f"B-{kind}"] + [f"I-{kind}"] * (end - start - 1)
        predicted.append(tags)
    return conlleval.evaluate([s.tags for s in evaluated], predicted)


def _entities(tags):
    """(start, end, type) of the BIO entities in `tags`."""
    spans = []
    for index, tag in enumerate(tags):
        if tag.startswith("B-"):
            spans.append([index, index + 1, tag[2:]])
        elif tag.startswith("I-") and spans and spans[-1][1] == index and spans[-1][2] == tag[2:]:
            spans[-1][1] += 1
    return [tuple(span) for span in spans]


def baselines(data_dir, eval_file="dev.txt", train_file="train.txt"):
    """{scheme: {metric: value}} of the three baselines on data_dir's files (People's Daily format)."""
    def read(name, scheme):
        return read_peoples_daily(os.path.join(data_dir, name), scheme)

    seg = segmentation_baseline(read(train_file, "segmentation"), read(eval_file, "segmentation"))
    ner = entity_baseline(read(train_file, "entities"), read(eval_file, "entities"))
    return {"segmentation": {"eval_precision": seg.precision, "eval_recall": seg.recall, "eval_f1": seg.f1,
                             "eval_oov_recall": seg.oov_recall},
            "pos": {"eval_accuracy": pos_baseline(read(train_file, "pos"), read(eval_file, "pos"))},
            "entities": {"eval_precision": ner.precision, "eval_recall": ner.recall, "eval_f1": ner.f1}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir")
    parser.add_argument("--eval_file", default="dev.txt")
    parser.add_argument("--train_file", default="train.txt")
    args = parser.parse_args(argv)
    print(json.dumps(baselines(args.data_dir, args.eval_file, args.train_file), indent=1))


if __name__ == "__main__":
    main()
