"""Feature-based BERT (Devlin et al. 2019, section 5.3): per-token activations of chosen layers as JSON lines.

Input: one example per line, `text_a` or `text_a ||| text_b`. Output: one JSON object per input line,
`{"linex_index": i, "features": [{"token": t, "layers": [{"index": -1, "values": [...]}, ...]}, ...]}`
with values rounded to 6 decimals, as the original `extract_features.py` writes.
"""

import dataclasses
import json
import re

import numpy as np
from keras import ops

from bert_tf import atomic_io
from bert_tf.batched_inference import BatchedInference
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


def read_examples(path):
    """Yields InputExamples from `path`; ValueError naming the line for invalid UTF-8 or an empty line."""
    for line_number, line in read_lines(path):
        line = line.strip()
        if not line:
            raise ValueError(f"{path}:{line_number}: empty line; expected `text` or `text_a ||| text_b` "
                             "on every line")
        match = _PAIR.match(line)
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

    `layers`: ints indexing the encoder's layer outputs (-1 is the last layer). `batch_size`: examples per
    forward pass, in length-sorted batches each cut to about its longest example (`bert_tf.batched_inference`).
    """

    def __init__(self, encoder, tokenizer, max_seq_length, layers, batch_size=32):
        encoder.config.check_seq_length(max_seq_length)
        self.encoder, self.tokenizer = encoder, tokenizer
        self.max_seq_length, self.batch_size = max_seq_length, batch_size
        self.layers = resolve_layers(",".join(map(str, layers)), encoder.config.num_hidden_layers)
        self._inference = BatchedInference(self._layer_outputs, variables=encoder.variables)

    def _layer_outputs(self, inputs):
        """{input_ids, input_mask, segment_ids: int32 [B, T]} -> one float32 [B, T, H] per layer (a tuple)."""
        outputs = self.encoder(inputs, training=False)
        return tuple(ops.cast(outputs[ENCODER_OUTPUTS][i], "float32") for i in self.layers)

    def extract(self, examples):
        """InputExamples -> list of (unique_id, tokens, float32 [len(layers), len(tokens), H]), in their order."""
        packed = [pack_tokens(self.tokenizer.tokenize(e.text_a),
                              self.tokenizer.tokenize(e.text_b) if e.text_b is not None else None,
                              self.max_seq_length, self.tokenizer) for e in examples]
        features = {name: np.asarray([getattr(p, name) for p in packed], np.int32) for name in INPUT_NAMES}
        results = [None] * len(examples)
        for indexes, values in self._inference.batches(features, self.batch_size, description="feature extraction"):
            for row, index in enumerate(indexes):
                tokens = packed[index].tokens
                results[index] = (examples[index].unique_id, tokens,
                                  np.stack([layer[row, : len(tokens)] for layer in values]))
        return results

    def to_json(self, unique_id, tokens, values):
        """The original's JSON object for one example (values rounded to 6 decimals)."""
        features = []
        for position, token in enumerate(tokens):
            features.append({"token": token, "layers": [
                {"index": index, "values": [round(x, 6) for x in values[j, position].tolist()]}
                for j, index in enumerate(self.layers)]})
        return {"linex_index": unique_id, "features": features}


def _chunks(iterable, size):
    chunk = []
    for item in iterable:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def write_features(extractor, input_file, output_file, batch_size):
    """Streams `input_file` through `extractor` into JSON lines at `output_file`.

    The input is read SORTED_BATCHES batches of `batch_size` examples at a time: `extractor.extract` sorts
    them by length into its batches, and their lines are written in input order before the next are read (so
    memory stays bounded). The output is written through `atomic_io.atomic_write` (temporary name, synced,
    renamed when complete), so a failure (bad line, full disk, interrupt) leaves no partial file. Shows the
    progress in examples (`bert_tf.progress`; the total is the input's line count). Returns the number of
    examples written.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be at least 1")
    with open(input_file, "rb") as f:
        total = sum(1 for _ in f)
    count = 0
    with atomic_io.atomic_write(output_file) as out, Progress("feature extraction", total, "examples") as progress:
        for chunk in _chunks(read_examples(input_file), batch_size * SORTED_BATCHES):
            for result in extractor.extract(chunk):
                out.write(json.dumps(extractor.to_json(*result)) + "\n")
            count += len(chunk)
            progress.update(count)
    return count
