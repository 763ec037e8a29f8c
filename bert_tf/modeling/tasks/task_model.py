"""BertTaskModel: what the fine-tuning models share (encoder + output head, objective, names, config)."""

import keras
from keras import ops

from bert_tf.config import BertConfig
from bert_tf.feature_schema import INPUT_IDS, INPUT_NAMES, IS_REAL_EXAMPLE, LABEL_IDS
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.layers.output_head import OutputHead
from bert_tf.modeling.tasks.objective import ObjectiveModel


class BertTaskModel(ObjectiveModel):
    """Base of BertClassifier, BertTokenClassifier, BertMultipleChoice and BertSpanLabeler: a BertEncoder and
    an OutputHead with `num_outputs` outputs. Subclasses define `call` and the objective contract of
    `ObjectiveModel` (`objective_metrics`, `objective_weights`, `objective`).

    Labels are `features["label_ids"]`; with Keras they may instead be passed as `y`. Examples with
    `is_real_example` 0 (padding added to fill the last batch) weigh nothing.
    """

    def __init__(self, config, num_outputs, dropout_rate=0.1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.dropout_rate = dropout_rate
        self.encoder = BertEncoder(config)
        self.head = OutputHead(num_outputs, config.hidden_size, config.initializer_range, dropout_rate)
        self.create_objective_trackers()

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
        if IS_REAL_EXAMPLE in features:
            return ops.cast(features[IS_REAL_EXAMPLE], "float32")
        return ops.ones((ops.shape(features[INPUT_IDS])[0],), "float32")

    def objective_features(self, x, y):
        """Keras hook: `x` (a feature dict, or `input_ids` alone) with the labels `y` as `label_ids`."""
        features = dict(x) if isinstance(x, dict) else {INPUT_IDS: x}
        if y is not None:
            features[LABEL_IDS] = y
        if LABEL_IDS not in features:
            raise ValueError(f"no labels: pass y, or a `{LABEL_IDS}` feature in x")
        return features

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

