"""Summarises an extract_features JSON-lines file: shapes, and the feature-based recipe of the paper
(section 5.3): concatenate the last four layers per token, average over tokens, compare sentences."""

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
    np.fill_diagonal(similarity, -1)
    i, j = np.unravel_index(np.argmax(similarity), similarity.shape)
    print(f"{len(vectors)} sentence vectors of size {vectors.shape[1]} (last four layers concatenated); "
          f"most similar pair: lines {i} and {j} (cosine {similarity[i, j]:.3f})")
