"""Summarises an extract_features JSON-lines file: shapes, and the feature-based recipe of the paper
(section 5.3): concatenate the last four layers per token, average over tokens, compare sentences.

    python tools/demo_features.py FEATURES.jsonl [INPUT.txt]   # INPUT.txt: the lines, to show the closest pair
"""

import json
import sys

import numpy as np


def sentence_vectors(path):
    """One vector per line: the mean over tokens of the last four layers concatenated [4H]."""
    vectors = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            tokens = [np.concatenate([layer["values"] for layer in feature["layers"]])
                      for feature in record["features"]]
            vectors.append(np.mean(tokens, axis=0))
    return np.stack(vectors)


def shorten(text, width):
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


if __name__ == "__main__":
    path = sys.argv[1]
    with open(path, encoding="utf-8") as f:
        first = json.loads(f.readline())
    feature = first["features"][1]
    print(f"line 0: {len(first['features'])} tokens; token {feature['token']!r} has layers "
          f"{[layer['index'] for layer in feature['layers']]} of {len(feature['layers'][0]['values'])} values")
    vectors = sentence_vectors(path)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, np.nan)
    closest = np.unravel_index(np.nanargmax(similarity), similarity.shape)
    farthest = np.unravel_index(np.nanargmin(similarity), similarity.shape)
    print(f"{len(vectors)} sentence vectors of size {vectors.shape[1]} (last four layers concatenated)")
    lines = None
    if len(sys.argv) > 2:
        with open(sys.argv[2], encoding="utf-8") as f:
            lines = f.read().splitlines()
    for name, (i, j) in (("most", closest), ("least", farthest)):
        print(f"{name} similar pair: lines {i} and {j} (cosine {similarity[i, j]:.3f})")
        for k in (i, j) if lines else ():
            print(f"  line {k}: {shorten(lines[k], 96)}")
