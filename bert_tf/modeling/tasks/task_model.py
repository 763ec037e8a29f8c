"""BertTaskModel: what the fine-tuning models share (encoder + output head, objective, names, config)."""

import keras
from keras import ops

from bert_tf.config import BertConfig
from bert_tf.modeling.encoder import INPUT_NAMES, BertEncoder
from bert_tf.modeling.layers.output_head import OutputHead

LABEL_KEY = "label_ids"


class BertTaskModel(keras.Model):
    """Base of BertClassifier, BertTokenClassifier and BertMultipleChoice: a BertEncoder and an OutputHead
    with `num_outputs` outputs. Subclasses define `call`, `objective_metrics`, `objective_weights` and
    `objective`.

    The objective lives in the model, as in BertPretrainer, so that Keras `compile(optimizer)` +
    `fit`/`evaluate` and the distributed loop (`bert_tf.training.loop.Trainer`) compute the same loss and
    metrics: per term, each prediction's weight (`objective_weights(features)`: float32 [N], 0 for padding
    and ignored positions), loss and hit (`objective(features, outputs)`: float32 [N]). The loss is the
    weighted mean. Labels are `features["label_ids"]`; with Keras they may instead be passed as `y`.
    Examples with `is_real_example` 0 (padding added to fill the last batch) weigh nothing.
    """

    def __init__(self, config, num_outputs, dropout_rate=0.1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.dropout_rate = dropout_rate
        self.encoder = BertEncoder(config)
        self.head = OutputHead(num_outputs, config.hidden_size, config.initializer_range, dropout_rate)
        self._objective_trackers = [keras.metrics.Mean(name=f"{term}_{metric}")
                                    for term, metrics in self.objective_metrics().items() for metric in metrics]

    def objective_metrics(self):
        """{term: metric names}, e.g. {"classification": ("loss", "accuracy")}."""
        raise NotImplementedError

    def build(self, input_shape=None):
        self.encoder.build()
        self.head.build()
        self.built = True

    def encode(self, inputs, training=None):
        """The encoder's outputs for the model inputs among `inputs` (other keys, e.g. labels, are ignored)."""
        return self.encoder({k: inputs[k] for k in INPUT_NAMES if k in inputs}, training=training)

    @staticmethod
    def example_weights(features):
        """float32 [B]: `is_real_example` when present, else ones."""
        if "is_real_example" in features:
            return ops.cast(features["is_real_example"], "float32")
        return ops.ones((ops.shape(features["input_ids"])[0],), "float32")

    # ---------------------------------------------------------------------------------------- Keras hooks

    @staticmethod
    def _features(x, y):
        features = dict(x) if isinstance(x, dict) else {"input_ids": x}
        if y is not None:
            features[LABEL_KEY] = y
        if LABEL_KEY not in features:
            raise ValueError(f"no labels: pass y, or a `{LABEL_KEY}` feature in x")
        return features

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras `fit` hook: the weighted mean loss of every term, summed."""
        features = self._features(x, y)
        weights, terms = self.objective_weights(features), self.objective(features, y_pred)
        return sum(ops.divide_no_nan(ops.sum(weights[t] * terms[t]["loss"]), ops.sum(weights[t])) for t in terms)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Keras `fit`/`evaluate` hook: updates `<term>_<metric>` (e.g. classification_accuracy)."""
        features = self._features(x, y)
        weights, terms = self.objective_weights(features), self.objective(features, y_pred)
        trackers = {tracker.name: tracker for tracker in self._objective_trackers}
        for term, values in terms.items():
            for metric, value in values.items():
                trackers[f"{term}_{metric}"].update_state(value, sample_weight=weights[term])
        return self.get_metrics_result()

    # ------------------------------------------------------------------------------------ weights, config

    def checkpoint_variables(self):
        """{Google checkpoint name: variable}: the encoder's `bert/...` names, `output_weights`, `output_bias`."""
        if not self.built:
            self.build()
        return {**self.encoder.checkpoint_variables(), **self.head.checkpoint_variables()}

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.saving.serialize_keras_object(self.dtype_policy),
                "config": self.config.to_dict(), "dropout_rate": self.dropout_rate}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)


def cross_entropy_and_hits(labels, logits):
    """labels int [...], logits float32 [..., C] -> (cross-entropy float32 [...], 1.0 where argmax == label).
    Labels outside [0, C) (e.g. -100, ignored positions) are clipped: give them weight 0."""
    labels = ops.clip(ops.cast(labels, "int32"), 0, ops.shape(logits)[-1] - 1)
    loss = ops.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    hits = ops.cast(ops.equal(ops.cast(ops.argmax(logits, axis=-1), "int32"), labels), "float32")
    return loss, hits
