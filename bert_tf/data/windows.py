"""Sliding windows over a text longer than the model, and the window where each token has the most context.

A sequence of `num_pieces` word pieces becomes windows of up to `window` pieces, each starting `stride` after
the last, the last reaching the end (run_squad.py's doc spans). A piece seen by several windows takes its
representation from the window where it has the most context on both sides (Devlin's rule for features,
google-research/bert #66; the original's `_check_is_max_context`). SQuAD's features, extract_features.py's
whole-text vectors and the long-text modes share this one definition.
"""

import numpy as np


def check_stride(window, stride, flag="doc_stride"):
    """ValueError unless 1 <= stride < window: windows that overlap, so that every piece is in one, and
    stride > 0 so that they move. `window`: pieces per window (max_seq_length less the special tokens);
    `flag`: the name in the message."""
    if window < 1:
        raise ValueError(f"the window holds {window} word pieces; max_seq_length leaves no room for text")
    if not 1 <= stride < window:
        raise ValueError(f"{flag}={stride} must be >= 1 and less than the window ({window} word pieces: "
                         f"max_seq_length less [CLS] and [SEP]) so that the windows overlap")


def doc_spans(num_pieces, window, stride):
    """The sliding windows over `num_pieces` word pieces, as (start, length) pairs: each window holds up to
    `window` pieces, the next starts `stride` later (never past the end of the one before, so no piece is
    skipped), the last reaches the end. An empty text gets one empty window (so that it still gets an
    output)."""
    spans, start = [], 0
    while start < num_pieces:
        length = min(num_pieces - start, window)
        spans.append((start, length))
        if start + length == num_pieces:
            break
        start += min(length, stride)
    return spans or [(0, 0)]


def spread_windows(count, max_windows):
    """The indexes of the windows that a text of `count` windows keeps under a cap of `max_windows`: all of them,
    or that many spread evenly from the first to the last (round(i * (count - 1) / (max_windows - 1)), halves to
    even, as NumPy's round of its linspace). -> list of int."""
    if count <= max_windows:
        return list(range(count))
    return [int(i) for i in np.round(np.linspace(0, count - 1, max_windows))]


def max_context_windows(spans, num_pieces):
    """For each of `num_pieces` piece positions, the index of the window (in `spans`) that gives it the most
    context: the window maximising min(left context, right context) + 0.01 * window length, the first such
    window on ties (the original's `_check_is_max_context`, computed once for all positions). -> list of int,
    `num_pieces` long."""
    best_scores, best_windows = [None] * num_pieces, [None] * num_pieces
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        for position in range(start, end + 1):
            score = min(position - start, end - position) + 0.01 * length
            if best_scores[position] is None or score > best_scores[position]:
                best_scores[position], best_windows[position] = score, index
    return best_windows
