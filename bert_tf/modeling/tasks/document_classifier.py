"""BertDocumentClassifier: a document longer than the model classified through all of its windows."""

import keras
from keras import ops

from bert_tf import model_types
from bert_tf.feature_schema import INPUT_IDS, INPUT_MASK, INPUT_NAMES
from bert_tf.modeling.tasks.classifier import BertClassifier

# How the windows' outputs become the document's (--window_aggregation): the mean or the maximum of the windows'
# logits, or attention: a learned softmax over the windows' pooled [CLS] vectors, whose weighted sum the head reads.
AGGREGATIONS = ("mean", "max", "attention")
NO_WINDOW = -1e9  # the score of an absent window before the softmax / max


@keras.saving.register_keras_serializable(package="bert_tf")
class BertDocumentClassifier(BertClassifier):
    """BertClassifier over the windows of documents (`bert_tf.data.windows`): each window `[CLS] piece... [SEP]` is
    encoded on its own, and `aggregation` (AGGREGATIONS) makes the windows' outputs the document's logits. The
    head's variables are BertClassifier's (`output_weights`, `output_bias`), so a classifier checkpoint loads, with
    `aggregation="attention"`'s `window_attention` [H, 1] new.

    Inputs: `input_ids`, `input_mask`, `segment_ids` int32 [B, W, T]: W windows per document, an absent window all
    zeros (its [CLS] mask 0). Output: logits float32 [B, num_labels]. Objective: BertClassifier's, per document.

    `doc_stride` (None: half a window) and `max_windows` say how its documents were cut into windows
    (`classification.convert_documents`); the model reads windows as given, and keeps them in its checkpoint's
    head options so that its SavedModel (`bert_tf.export.document_serving`) windows raw text the same way.
    """

    def __init__(self, config, num_labels, aggregation="mean", dropout_rate=0.1, doc_stride=None, max_windows=16,
                 **kwargs):
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation {aggregation!r}: expected one of {', '.join(AGGREGATIONS)}")
        if num_labels == 1:
            raise ValueError("a document classifier has num_labels >= 2 (windows of a regression are not offered)")
        kwargs.setdefault("name", "bert_document_classifier")
        super().__init__(config, num_labels, dropout_rate, **kwargs)
        self.aggregation, self.doc_stride, self.max_windows = aggregation, doc_stride, max_windows
        self.window_attention = keras.layers.Dense(
            1, use_bias=False, name="window_attention",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=self.config.initializer_range)
        ) if aggregation == "attention" else None

    def build(self, input_shape=None):
        super().build(input_shape)
        if self.window_attention is not None:
            self.window_attention.build((None, self.head.hidden_size))  # what the head reads: [CLS] or BiLSTM

    def call(self, inputs, training=None):
        shape = ops.shape(inputs[INPUT_IDS])
        flat = {k: ops.reshape(inputs[k], (-1, shape[-1])) for k in INPUT_NAMES if k in inputs}
        present = ops.reshape(flat[INPUT_MASK][:, 0] > 0, (-1, shape[1])) if INPUT_MASK in flat else \
            ops.ones((shape[0], shape[1]), "bool")  # [B, W]
        features = self.sentence_features(flat, training)  # [B * W, H]
        if self.aggregation == "attention":
            scores = ops.reshape(ops.cast(self.window_attention(features), "float32"), (-1, shape[1]))
            weights = ops.softmax(ops.where(present, scores, NO_WINDOW), axis=-1)  # [B, W]
            windows = ops.reshape(ops.cast(features, "float32"), (-1, shape[1], ops.shape(features)[-1]))
            document = ops.sum(windows * weights[:, :, None], axis=1)  # [B, H]
            return self.head(ops.cast(document, features.dtype), training=training)
        logits = ops.reshape(ops.cast(self.head(features, training=training), "float32"),
                             (-1, shape[1], self.num_labels))  # [B, W, L]
        if self.aggregation == "max":
            return ops.max(ops.where(present[:, :, None], logits, NO_WINDOW), axis=1)
        present = ops.cast(present, "float32")[:, :, None]
        return ops.sum(logits * present, axis=1) / ops.maximum(ops.sum(present, axis=1), 1.0)

    def head_variables(self):
        """BertClassifier's head variables and, for attention, `window_attention/kernel` [H, 1]."""
        variables = super().head_variables()
        if self.window_attention is not None:
            variables["window_attention/kernel"] = self.window_attention.kernel
        return variables

    def window_options(self):
        """{"aggregation", "doc_stride", "max_windows"}: how this model reads a document."""
        return {"aggregation": self.aggregation, "doc_stride": self.doc_stride, "max_windows": self.max_windows}

    def head_options(self):
        return {**(super().head_options() or {}), **self.window_options()}

    def get_config(self):
        return {**super().get_config(), **self.window_options()}


def _from_checkpoint(config, source, options):
    """The registry's classifier for the checkpoint `source`: a BertDocumentClassifier when its embedded head
    options say how it reads windows (run_classifier.py --truncation=windows), else a BertClassifier; the head's
    size and options from the checkpoint."""
    head = dict(source.head or {})
    num_labels = model_types.get(model_types.CLASSIFIER).head_size(source)
    if "aggregation" in head:
        return BertDocumentClassifier(config, num_labels, **head)
    return BertClassifier(config, num_labels, **head)


model_types.provide(model_types.CLASSIFIER, build=_from_checkpoint)
