"""Feature-based BERT (Devlin et al. 2019, section 5.3): per-token activations of chosen layers as JSON lines.

Input: one example per line, `text_a` or `text_a ||| text_b`. Output: one JSON object per input line,
`{"linex_index": i, "features": [{"token": t, "layers": [{"index": -1, "values": [...]}, ...]}, ...]}`
with values rounded to 6 decimals, as the original `extract_features.py` writes.

A text longer than the model is cut to `max_seq_length` (the original), or, with a `doc_stride`, read whole: it
becomes overlapping windows (`bert_tf.data.windows`) and each word piece's vector comes from the window where it
has the most context (Devlin's rule, google-research/bert #66); [CLS] from the first window, [SEP] from the last.
"""

import dataclasses
import json
import re

import numpy as np
from keras import ops

from bert_tf import atomic_io
from bert_tf.batched_inference import BatchedInference
from bert_tf.data import windows
from bert_tf.data.packing import pack_tokens
from bert_tf.data.text_lines import read_lines
from bert_tf.feature_schema import ENCODER_OUTPUTS, INPUT_NAMES
from bert_tf.progress import Progress

_PAIR = re.compile(r"^(.*) \|\|\| (.*)$")
SORTED_BATCHES = 16  # write_features reads this many batches at a time, which extract sorts by length


@dataclasses.dataclass
class InputExample:
    unique_id: int
    text_a: str
    text_b: str = None


def read_examples(path, pairs=True):
    """Yields InputExamples from `path`; ValueError naming the line for invalid UTF-8, an empty line, or a pair
    where `pairs` is False (windows read single texts)."""
    for line_number, line in read_lines(path):
        line = line.strip()
        if not line:
            raise ValueError(f"{path}:{line_number}: empty line; expected `text` or `text_a ||| text_b` "
                             "on every line")
        match = _PAIR.match(line)
        if match and not pairs:
            raise ValueError(f"{path}:{line_number}: a text pair (`text_a ||| text_b`); with --doc_stride every "
                             "line is one text, read whole in windows")
        if match:
            yield InputExample(line_number - 1, match.group(1), match.group(2))
        else:
            yield InputExample(line_number - 1, line)


def resolve_layers(layers, num_hidden_layers):
    """Parses "-1,-2" into a list of ints, each in [-L, L-1]; ValueError for anything else."""
    try:
        indexes = [int(x) for x in str(layers).split(",")]
    except ValueError:
        raise ValueError(f"layers={layers!r}: expected comma-separated integers such as -1,-2,-3,-4") from None
    for index in indexes:
        if not -num_hidden_layers <= index < num_hidden_layers:
            raise ValueError(f"layers: layer {index} does not exist in a {num_hidden_layers}-layer model "
                             f"(valid: {-num_hidden_layers}..{num_hidden_layers - 1})")
    return indexes


class FeatureExtractor:
    """Runs a BertEncoder over examples and returns the activations of `layers` for every real token.

    `layers`: ints indexing the encoder's layer outputs (-1 is the last layer). `batch_size`: examples (windows)
    per forward pass, in length-sorted batches each cut to about its longest (`bert_tf.batched_inference`).
    `doc_stride`: None cuts a long text to `max_seq_length`; N reads every token of single texts through windows
    of max_seq_length - 2 pieces starting N apart (1 <= N < max_seq_length - 2, else ValueError).
    """

    def __init__(self, encoder, tokenizer, max_seq_length, layers, batch_size=32, doc_stride=None):
        encoder.config.check_seq_length(max_seq_length)
        if doc_stride is not None:
            windows.check_stride(max_seq_length - 2, doc_stride)
        self.encoder, self.tokenizer = encoder, tokenizer
        self.max_seq_length, self.batch_size, self.doc_stride = max_seq_length, batch_size, doc_stride
        self.layers = resolve_layers(",".join(map(str, layers)), encoder.config.num_hidden_layers)
        self._inference = BatchedInference(self._layer_outputs, variables=encoder.variables)

    def _layer_outputs(self, inputs):
        """{input_ids, input_mask, segment_ids: int32 [B, T]} -> one float32 [B, T, H] per layer (a tuple)."""
        outputs = self.encoder(inputs, training=False)
        return tuple(ops.cast(outputs[ENCODER_OUTPUTS][i], "float32") for i in self.layers)

    def extract(self, examples):
        """InputExamples -> list of (unique_id, tokens, float32 [len(layers), len(tokens), H]), in their order.
        With a doc_stride, `tokens` is [CLS], every word piece of the text, [SEP]."""
        rows, layouts = [], []  # the packed windows; per example (its first row, its pieces, its spans)
        for example in examples:
            tokens_a = self.tokenizer.tokenize(example.text_a)
            if self.doc_stride is None:
                tokens_b = self.tokenizer.tokenize(example.text_b) if example.text_b is not None else None
                layouts.append((len(rows), None, None))
                rows.append(pack_tokens(tokens_a, tokens_b, self.max_seq_length, self.tokenizer))
                continue
            if example.text_b is not None:
                raise ValueError(f"example {example.unique_id}: a text pair; windows (doc_stride) read single texts")
            spans = windows.doc_spans(len(tokens_a), self.max_seq_length - 2, self.doc_stride)
            layouts.append((len(rows), tokens_a, spans))
            rows += [pack_tokens(tokens_a[start:start + length], None, self.max_seq_length, self.tokenizer)
                     for start, length in spans]
        values = self._row_values(rows)
        results = []
        for example, (first, pieces, spans) in zip(examples, layouts):
            if pieces is None:
                results.append((example.unique_id, rows[first].tokens, values[first]))
            else:
                results.append((example.unique_id, ["[CLS]", *pieces, "[SEP]"],
                                _by_max_context(values[first:first + len(spans)], spans, len(pieces))))
        return results

    def _row_values(self, rows):
        """PackedInputs -> per row float32 [len(layers), len(row.tokens), H], in their order."""
        features = {name: np.asarray([getattr(row, name) for row in rows], np.int32) for name in INPUT_NAMES}
        values = [None] * len(rows)
        for indexes, batch in self._inference.batches(features, self.batch_size, description="feature extraction"):
            for position, index in enumerate(indexes):
                values[index] = np.stack([layer[position, : len(rows[index].tokens)] for layer in batch])
        return values

    def to_json(self, unique_id, tokens, values):
        """The original's JSON object for one example (values rounded to 6 decimals)."""
        features = []
        for position, token in enumerate(tokens):
            features.append({"token": token, "layers": [
                {"index": index, "values": [round(x, 6) for x in values[j, position].tolist()]}
                for j, index in enumerate(self.layers)]})
        return {"linex_index": unique_id, "features": features}


def _by_max_context(window_values, spans, num_pieces):
    """One text's vectors from its windows: window_values, per span of `spans` float32 [L, length + 2, H]
    ([CLS] window [SEP]) -> float32 [L, num_pieces + 2, H]: each piece's from its window of most context
    (`windows.max_context_windows`), [CLS] the first window's, [SEP] the last's."""
    best = np.asarray(windows.max_context_windows(spans, num_pieces), np.int64)
    first, last = window_values[0], window_values[-1]
    out = np.empty((first.shape[0], num_pieces + 2, first.shape[2]), first.dtype)
    out[:, 0], out[:, -1] = first[:, 0], last[:, -1]
    for index, (start, _) in enumerate(spans):
        positions = np.flatnonzero(best == index)
        out[:, 1 + positions] = window_values[index][:, 1 + positions - start]
    return out


def _chunks(examples, budget, weight):
    """Lists of consecutive `examples` whose `weight`s add up to at most `budget` (at least one example each)."""
    chunk, total = [], 0
    for example in examples:
        if chunk and total + weight(example) > budget:
            yield chunk
            chunk, total = [], 0
        chunk.append(example)
        total += weight(example)
    if chunk:
        yield chunk


def write_features(extractor, input_file, output_file, batch_size):
    """Streams `input_file` through `extractor` into JSON lines at `output_file`.

    The input is read SORTED_BATCHES batches of `batch_size` rows at a time (a row: an example, or with a
    doc_stride a window, counted as at most 1 + the text's characters // doc_stride since a word piece has at
    least one character): `extractor.extract` sorts them by length into its batches, and their lines are written
    in input order before the next are read (so memory stays bounded). The output is written through
    `atomic_io.atomic_write` (temporary name, synced, renamed when complete), so a failure (bad line, full disk,
    interrupt) leaves no partial file. Shows the progress in examples (`bert_tf.progress`; the total is the
    input's line count). Returns the number of examples written.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be at least 1")
    with open(input_file, "rb") as f:
        total = sum(1 for _ in f)
    count = 0
    with atomic_io.atomic_write(output_file) as out, Progress("feature extraction", total, "examples") as progress:
        stride = extractor.doc_stride
        rows = (lambda example: 1) if stride is None else (lambda example: 1 + len(example.text_a) // stride)
        for chunk in _chunks(read_examples(input_file, pairs=stride is None), batch_size * SORTED_BATCHES, rows):
            for result in extractor.extract(chunk):
                out.write(json.dumps(extractor.to_json(*result)) + "\n")
            count += len(chunk)
            progress.update(count)
    return count
