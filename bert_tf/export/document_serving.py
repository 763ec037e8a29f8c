"""The serving SavedModel of a classifier of whole documents (`BertDocumentClassifier`, run_classifier.py
--truncation=windows): raw text cut into windows in the graph as the command cuts it.

Signatures (W: the request's most windows of a document, at most the model's max_windows; T: the exported
seq_length; an absent window all zeros):

  serving_default(input_ids, input_mask, segment_ids: int32 [B, W, T]) -> ClassifierAdapter's outputs
  serve_text(text_a: tf.string [B]) -> the same + the packed windows input_ids, input_mask, segment_ids [B, W, T]
  serve_examples(inputs: tf.string [B], serialized tf.train.Example with a bytes feature `text_a`) -> the same
  classify(inputs) -> TF Serving's Classify API: `classes`, `scores` [B, C]

Each text is tokenized whole (a document is not cut to a budget of characters, unlike the single-window
signatures: its windows spread over all of it), its word pieces cut into windows of seq_length - 2 pieces
starting `doc_stride` apart, the last reaching the end (`bert_tf.data.windows.doc_spans`), at most max_windows
of them spread evenly (`windows.spread_windows`), each packed `[CLS] window [SEP]`: the features of
`classification.convert_documents`, here in TensorFlow ops. Documents are single texts: there is no pair
signature.
"""

import tensorflow as tf

from bert_tf.data import windows
from bert_tf.export.serving import TEXT_A, ServingModule, _text_specs


def window_starts(num_pieces, window, stride, max_windows):
    """int64 RaggedTensor [B, (W)]: the starts of the windows that a text of `num_pieces` (int64 [B]) word pieces
    is read in (`windows.doc_spans` and `windows.spread_windows` in TensorFlow ops): window k starts at
    k * stride, for k < K = 1 + ceil((num_pieces - window) / stride) (1 when the text fits one window); over
    max_windows of them, round(i * (K - 1) / (max_windows - 1)) for i < max_windows (halves to even)."""
    count = 1 + tf.maximum(num_pieces - window + stride - 1, 0) // stride  # K
    kept = tf.minimum(count, max_windows)
    index = tf.ragged.range(kept)  # [B, (W)]
    if max_windows > 1:
        spread = tf.cast(count - 1, tf.float64) / (max_windows - 1)
        spread_index = tf.cast(tf.round(tf.cast(index, tf.float64) * spread[:, None]), tf.int64)
        index = tf.where(count[:, None] > max_windows, spread_index, index)
    return index * stride


class DocumentServingModule(ServingModule):
    """The SavedModel root of a BertDocumentClassifier's ClassifierAdapter (the module doc); `preprocessor`'s
    seq_length is T."""

    input_rank = 3  # serving_default takes [B, W, T]

    def __init__(self, adapter, preprocessor):
        model = adapter.model
        self.window = preprocessor.seq_length - 2
        self.stride = self.window // 2 if model.doc_stride is None else model.doc_stride
        windows.check_stride(self.window, self.stride)
        self.max_windows = model.max_windows
        super().__init__(adapter, preprocessor)

    def _text_functions(self):
        self.serve_text = tf.function(self._serve_text, input_signature=_text_specs(TEXT_A))
        return {"serve_text": self.serve_text}

    def pack_documents(self, text_a):
        """tf.string [B] -> dict of int32 [B, W, T]: each text's windows, packed."""
        pieces = self.preprocessor.tokenize(TEXT_A, text_a)  # int32 [B, (pieces)]
        num_pieces = pieces.row_lengths()
        starts = window_starts(num_pieces, self.window, self.stride, self.max_windows)  # [B, (W)]
        document = starts.value_rowids()  # [windows]: the document of each window
        lengths = tf.minimum(tf.gather(num_pieces, document) - starts.values, self.window)
        positions = tf.gather(pieces.row_starts(), document)[:, None] + starts.values[:, None] + tf.ragged.range(
            lengths)  # [windows, (pieces)]: indexes into pieces.values
        packed = self.preprocessor.packer(tf.gather(pieces.values, positions))  # [windows, T]
        return {name: tf.RaggedTensor.from_value_rowids(value, document, nrows=tf.shape(text_a, tf.int64)[0])
                .to_tensor(0) for name, value in packed.items()}

    def _pack_examples(self, serialized):
        features = tf.io.parse_example(serialized, {TEXT_A: tf.io.FixedLenFeature([], tf.string)})
        return self.pack_documents(features[TEXT_A])

    def _serve_text(self, text_a):
        return self._outputs_with_inputs(self.pack_documents(text_a))

