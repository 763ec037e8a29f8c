"""BertSpanLabeler: extractive question answering (SQuAD), Devlin et al. 2019, section 4.2."""

import keras
from keras import ops

from bert_tf import model_types
from bert_tf.checkpoint_names import SQUAD_SCOPE
from bert_tf.feature_schema import END_LOGITS, INPUT_IDS, SPAN_LABELS, START_LOGITS
from bert_tf.modeling.tasks.objective import cross_entropy_and_hits
from bert_tf.modeling.tasks.task_model import BertTaskModel

# The start and end logit of every padding position: out of the softmax (exp underflows to 0 in float32), last
# in the ranking of predictions.
PADDING_LOGIT = -1e9


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSpanLabeler(BertTaskModel):
    """The original run_squad.py model: the encoder, then one linear map of every token's final hidden state
    to a start and an end logit, without dropout. Head weights carry the original's names
    `cls/squad/output_weights` [2, H] and `cls/squad/output_bias` [2], so its fine-tuned SQuAD checkpoints
    load; the pooler is unused and frozen (the original never updates it either).

    Inputs: a dict with int [B, T] `input_ids`, `input_mask`, `segment_ids`; other entries (the labels
    `start_positions`, `end_positions` int [B], `unique_ids`) may be in the same dict and are ignored by `call`.
    Outputs, a dict: `start_logits`, `end_logits`, float32 [B, T]; PADDING_LOGIT at the padding (input_mask 0).

    Objective (for `fit` and `bert_tf.training.loop.Trainer`, see BertTaskModel): one term, `span`, over the
    2B predictions (every start, then every end), each with its example's weight: the loss is their mean
    cross-entropy, i.e. the original's (start loss + end loss) / 2; `span_accuracy` is the fraction of start
    and end positions whose argmax is right. A window without the answer is labelled 0 ([CLS]). With Keras,
    the labels may also be passed as `y={"start_positions": ..., "end_positions": ...}`.
    One difference: the original's softmax runs over all T positions, the padding's included, so its loss
    depends on how far a window is padded, and its training pushes the padding's logits down; here the
    padding is out of the softmax (its logits are PADDING_LOGIT, in training and prediction alike), so that
    trimmed, length-grouped and unpadded batches (`BertEncoder`'s skip_padding) train exactly as full-length
    ones, and no padding position takes a place of the n best starts and ends that prediction ranks (the
    padding's own logits, never trained, did: up to every place of a short window's n-best).

        model = BertSpanLabeler(config)
        bert_tf.load_checkpoint(model, "uncased_L-12_H-768_A-12/bert_model.ckpt")
        model.compile(keras.optimizers.AdamW(3e-5))
        model.fit(squad_pipeline.squad_dataset(record_file, 384, is_training=True, batch_size=12))
    """

    def __init__(self, config, **kwargs):
        kwargs.setdefault("name", "bert_span_labeler")
        super().__init__(config, 2, dropout_rate=0.0, **kwargs)
        self.encoder.pooler.trainable = False

    def objective_metrics(self):
        return {"span": ("loss", "accuracy")}

    def call(self, inputs, training=None):
        if not isinstance(inputs, dict) or INPUT_IDS not in inputs:
            raise ValueError(f"BertSpanLabeler inputs must be a dict with input_ids, input_mask, segment_ids; got "
                             f"{sorted(inputs) if isinstance(inputs, dict) else type(inputs).__name__}")
        logits = self.head(self.token_features(inputs, training), training=training)
        real = ops.not_equal(self.input_mask(inputs), 0)
        return {START_LOGITS: ops.where(real, logits[..., 0], PADDING_LOGIT),
                END_LOGITS: ops.where(real, logits[..., 1], PADDING_LOGIT)}

    def objective_features(self, x, y):
        """Keras hook: `x` with the labels `y` ({start_positions, end_positions}) added."""
        features = dict(x)
        if isinstance(y, dict):
            features.update(y)
        missing = [name for name in SPAN_LABELS if name not in features]
        if missing:
            raise ValueError(f"no labels {missing}: pass them in x or as y={{'start_positions': ..., "
                             "'end_positions': ...}} (int [B])")
        return features

    def objective_weights(self, features):
        """{"span": float32 [2B]}: each start and end position weighs as its example."""
        weights = self.example_weights(features)
        return {"span": ops.concatenate([weights, weights], axis=0)}

    def objective(self, features, outputs):
        """{"span": {"loss": cross-entropy float32 [2B], "accuracy": 1.0 where the argmax is right [2B]}},
        starts first, aligned with `objective_weights`."""
        labels = ops.concatenate([ops.reshape(features[name], (-1,)) for name in SPAN_LABELS], axis=0)
        logits = ops.concatenate([outputs[START_LOGITS], outputs[END_LOGITS]], axis=0)  # the padding's out
        loss, hits = cross_entropy_and_hits(labels, logits)
        return {"span": {"loss": loss, "accuracy": hits}}

    def checkpoint_variables(self):
        """{Google checkpoint name: variable}: the encoder's `bert/...` names and the head's under `cls/squad/`
        (`cls/squad/output_*`; with the BiLSTM head `cls/squad/bilstm/...`)."""
        if not self.built:
            self.build()
        head = {SQUAD_SCOPE + name: variable for name, variable in self.head_variables().items()}
        return {**self.encoder.checkpoint_variables(), **head}

    def get_config(self):
        config = super().get_config()
        del config["dropout_rate"]  # always 0.0: the original has no dropout before this head
        return config


def _from_checkpoint(config, source, options):
    """The registry's span labeler for the checkpoint `source`: its embedded head options."""
    model_types.get(model_types.SQUAD).head_size(source)  # a fine-tuned span head, or a ValueError naming its absence
    return BertSpanLabeler(config, **(source.head or {}))


model_types.provide(model_types.SQUAD, build=_from_checkpoint)
