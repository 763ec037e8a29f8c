"""Serving adapters of the fine-tuned task models, for `bert_tf.export.serving.export_serving`.

Each adapter maps the int32 [B, T] model inputs to the outputs below, in every signature of the SavedModel
(`serving_default`, the raw-text ones and `serve_examples`; see bert_tf/export/serving.py). B is the batch, T the
request's sequence length (at most the exported seq_length).

  ClassifierAdapter(BertClassifier, labels): classification: `logits`, `probabilities` float32 [B, C],
      `label_id` int32 [B] (the argmax) and `label` tf.string [B] (its name); plus the `classify` signature
      for TF Serving's Classify API. Regression (num_labels=1): `score` float32 [B]; plus the `regress`
      signature for TF Serving's Regress API. A BertDocumentClassifier's inputs are its windows [B, W, T],
      its text signatures window whole documents (`bert_tf.export.document_serving`).
  TokenClassifierAdapter(BertTokenClassifier, labels): `logits` float32 [B, T, L], `tag_ids` int32 [B, T]
      and `tags` tf.string [B, T], at every word piece.
  EmbedderAdapter(BertSentenceEmbedder): `embeddings` float32 [B, H] (pooled as the embedder pools; normalized
      when it normalizes).
  SpanLabelerAdapter(BertSpanLabeler, max_answer_length): `start_logits`, `end_logits` float32 [B, T] and
      the best answer span `answer_start`, `answer_end` int32 [B], `answer_score` float32 [B]; its raw-text
      signatures (`SpanServingModule`) take `question` + `context` and add the `answer` text.

`labels` are the label names in label-id order, as the fine-tuning run used them (run_classifier.py: the
task's labels or its --label_list; run_ner.py: the training file's tags, sorted, "O" first).
"""

import tensorflow as tf

from bert_tf import model_types
from bert_tf.export.document_serving import DocumentServingModule
from bert_tf.export.serving import ServingAdapter, ServingModule, _float32, _text_specs, adapter_factory
from bert_tf.feature_schema import END_LOGITS, INPUT_IDS, INPUT_MASK, SEGMENT_IDS, START_LOGITS
from bert_tf.modeling.tasks.document_classifier import BertDocumentClassifier
from bert_tf.modeling.tasks.embedder import EMBEDDINGS

QUESTION, CONTEXT = "question", "context"


def _check_labels(labels, num_labels, model):
    """`labels` as a tuple of str; ValueError unless there is one per output of `model`."""
    if labels is None or len(labels) != num_labels:
        got = "none" if labels is None else f"{len(labels)} ({', '.join(map(str, labels))})"
        raise ValueError(f"{model.name} has {num_labels} outputs: it needs {num_labels} label names in label-id "
                         f"order, got {got}")
    return tuple(str(label) for label in labels)


def _argmax_labels(logits, labels):
    """logits float32 [..., C], labels C names -> (argmax int32 [...], its name tf.string [...])."""
    ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return ids, tf.gather(tf.constant(labels), ids)


class ClassifierAdapter(ServingAdapter):
    """Serving outputs of a `BertClassifier` (see the module doc).

    The TF Serving signature reads serialized tf.Example `inputs` [B] (bytes features `text_a`, optional
    `text_b`, as serve_examples). `classify` returns `classes` tf.string [B, C] (the label names, the same in
    every row) and `scores` float32 [B, C] (the probabilities); `regress` returns `outputs` float32 [B].

    Args:
      classifier: a built `BertClassifier` with its fine-tuned weights.
      labels: C label names in label-id order; None for a regression model.
    """

    def __init__(self, classifier, labels=None):
        super().__init__(classifier)
        if classifier.is_regression:
            if labels is not None:
                raise ValueError(f"{classifier.name} is a regression model (num_labels=1): it has no labels; "
                                 f"got {labels}")
            self.labels = None
        else:
            self.labels = _check_labels(labels, classifier.num_labels, classifier)

    @property
    def serving_api(self):
        if self.model.is_regression:
            return "regress", tf.saved_model.REGRESS_METHOD_NAME
        return "classify", tf.saved_model.CLASSIFY_METHOD_NAME

    def outputs(self, inputs):
        logits = tf.cast(self.model(inputs, training=False), tf.float32)
        if self.model.is_regression:
            return {"score": logits[:, 0]}
        label_id, label = _argmax_labels(logits, self.labels)
        return {"logits": logits, "probabilities": tf.nn.softmax(logits), "label_id": label_id, "label": label}

    def serving_module(self, preprocessor):
        if isinstance(self.model, BertDocumentClassifier):
            return DocumentServingModule(self, preprocessor)
        return super().serving_module(preprocessor)

    def api_outputs(self, outputs):
        if self.model.is_regression:
            return {"outputs": outputs["score"]}
        probabilities = outputs["probabilities"]
        return {"classes": tf.broadcast_to(tf.constant(self.labels), tf.shape(probabilities)),
                "scores": probabilities}


class TokenClassifierAdapter(ServingAdapter):
    """Serving outputs of a `BertTokenClassifier`: `logits` float32 [B, T, L], `tag_ids` int32 [B, T] (the
    argmax) and `tags` tf.string [B, T] (its name), at every position. The model was trained on the first
    word piece of each word: read the tags there and ignore [CLS], [SEP], padding and the other pieces
    (serve_text returns the packed `input_ids` to align them with the text's word pieces).

    Args:
      token_classifier: a built `BertTokenClassifier` with its fine-tuned weights.
      labels: L tag names in label-id order.
    """

    def __init__(self, token_classifier, labels):
        super().__init__(token_classifier)
        self.labels = _check_labels(labels, token_classifier.num_labels, token_classifier)

    def outputs(self, inputs):
        logits = tf.cast(self.model(inputs, training=False), tf.float32)
        tag_ids, tags = _argmax_labels(logits, self.labels)
        return {"logits": logits, "tag_ids": tag_ids, "tags": tags}


def best_span(start_logits, end_logits, segment_ids, input_mask, max_answer_length):
    """The best answer span of each packed `[CLS] question [SEP] context [SEP]` window.

    Over the context tokens (segment 1, before the final [SEP]), the span start <= end < start +
    max_answer_length with the largest start_logits[start] + end_logits[end] (the first such span in
    start-major order on ties); (0, 0), [CLS], the original's null answer, when the window has no context
    token. Unlike the original, every pair is scored, not only the n-best starts and ends.

    Args:
      start_logits, end_logits: float32 [B, T].
      segment_ids, input_mask: int32 [B, T], as BertPacker packs them.
      max_answer_length: the longest span, in word pieces.
    Returns:
      (start int32 [B], end int32 [B], score float32 [B]).
    """
    length = tf.shape(segment_ids)[1]
    positions = tf.range(length)
    context = (segment_ids == 1) & (positions[tf.newaxis] < tf.reduce_sum(input_mask, axis=1, keepdims=True) - 1)
    offsets = positions[tf.newaxis] - positions[:, tf.newaxis]  # [T, T]: end - start
    allowed = context[:, :, tf.newaxis] & context[:, tf.newaxis, :] & (offsets >= 0) & (offsets < max_answer_length)
    scores = start_logits[:, :, tf.newaxis] + end_logits[:, tf.newaxis, :]
    flat = tf.argmax(tf.reshape(tf.where(allowed, scores, float("-inf")), [tf.shape(scores)[0], -1]), axis=1,
                     output_type=tf.int32)
    found = tf.reduce_any(context, axis=1)
    start = tf.where(found, flat // length, 0)
    end = tf.where(found, flat % length, 0)
    score = tf.gather(start_logits, start, batch_dims=1) + tf.gather(end_logits, end, batch_dims=1)
    return start, end, score


class EmbedderAdapter(ServingAdapter):
    """Serving outputs of a `BertSentenceEmbedder`: `embeddings` float32 [B, H] (see the module doc)."""

    def outputs(self, inputs):
        return {EMBEDDINGS: tf.cast(self.model(inputs, training=False, skip_padding=True), tf.float32)}


class SpanLabelerAdapter(ServingAdapter):
    """Serving outputs of a `BertSpanLabeler`: `start_logits`, `end_logits` float32 [B, T] and the
    `best_span` of each window, `answer_start`, `answer_end` int32 [B] (positions in the packed inputs) and
    `answer_score` float32 [B] (start + end logit). Served by a `SpanServingModule`.

    Args:
      span_labeler: a built `BertSpanLabeler` with its fine-tuned weights.
      max_answer_length: the longest answer, in word pieces (run_squad.py's --max_answer_length).
    """

    def __init__(self, span_labeler, max_answer_length=30):
        super().__init__(span_labeler)
        if max_answer_length < 1:
            raise ValueError(f"max_answer_length={max_answer_length} must be >= 1")
        self.max_answer_length = max_answer_length

    def outputs(self, inputs):
        logits = _float32(self.model(inputs, training=False))
        start, end, score = best_span(logits[START_LOGITS], logits[END_LOGITS], inputs[SEGMENT_IDS],
                                      inputs[INPUT_MASK], self.max_answer_length)
        return {**logits, "answer_start": start, "answer_end": end, "answer_score": score}

    def serving_module(self, preprocessor):
        return SpanServingModule(self, preprocessor)


class SpanServingModule(ServingModule):
    """The SQuAD SavedModel's root: `serving_default` as any; `serve_text(question, context: tf.string [B])`
    and `serve_examples(inputs)` (serialized tf.train.Example with bytes features `question` and `context`,
    both required) pack `[CLS] question [SEP] context [SEP]` into one window (BertPacker's truncation, no
    doc stride: a context longer than the window is cut) and return the adapter's outputs, the packed inputs
    and `answer` tf.string [B]: the answer span's word pieces joined as the original's `tok_text` (" ##"
    removed), so lower-cased and accent-stripped for uncased models and [UNK] for unknown characters; the
    original's mapping back to the context's characters (`get_final_text`) is not done in the graph.
    "" for the null answer.
    """

    def _text_functions(self):
        self.serve_text = tf.function(self._serve_question, input_signature=_text_specs(QUESTION, CONTEXT))
        return {"serve_text": self.serve_text}

    def _pack_examples(self, serialized):
        features = tf.io.parse_example(serialized, {name: tf.io.FixedLenFeature([], tf.string)
                                                    for name in (QUESTION, CONTEXT)})
        return self.preprocessor.pack_texts(question=features[QUESTION], context=features[CONTEXT])

    def _serve_question(self, question, context):
        return self._outputs_with_inputs(self.preprocessor.pack_texts(question=question, context=context))

    def _outputs_with_inputs(self, inputs):
        outputs = super()._outputs_with_inputs(inputs)
        positions = tf.range(tf.shape(inputs[INPUT_IDS])[1])[tf.newaxis]
        in_answer = ((positions >= outputs["answer_start"][:, tf.newaxis])
                     & (positions <= outputs["answer_end"][:, tf.newaxis]) & (inputs[SEGMENT_IDS] == 1))
        pieces = tf.gather(tf.constant(self.preprocessor.tokenizer.vocab), inputs[INPUT_IDS])
        text = tf.strings.reduce_join(tf.ragged.boolean_mask(pieces, in_answer), axis=1, separator=" ")
        return {**outputs, "answer": tf.strings.regex_replace(tf.strings.regex_replace(text, " ##", ""), "##", "")}


model_types.provide(model_types.CLASSIFIER, adapter=adapter_factory(ClassifierAdapter, "label_list"))
model_types.provide(model_types.NER, adapter=adapter_factory(TokenClassifierAdapter, "label_list"))
model_types.provide(model_types.SQUAD, adapter=adapter_factory(SpanLabelerAdapter, "max_answer_length"))
model_types.provide(model_types.EMBEDDER, adapter=adapter_factory(EmbedderAdapter))
