"""BertTaskModel: what the fine-tuning models share (encoder + task head, objective, names, config)."""

import keras
from keras import ops

from bert_tf.checkpoint_names import BILSTM_SCOPE
from bert_tf.config import BertConfig
from bert_tf.feature_schema import (
    INPUT_IDS,
    INPUT_MASK,
    INPUT_NAMES,
    IS_REAL_EXAMPLE,
    LABEL_IDS,
    POOLED_OUTPUT,
    SEQUENCE_OUTPUT,
)
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.layers.output_head import OutputHead
from bert_tf.modeling.layers.sequence_bilstm import SequenceBiLSTM
from bert_tf.modeling.tasks.objective import ObjectiveModel

# The task heads (--task_head): the original's linear output layer, or a BiLSTM before it (Devlin et al. 2019,
# Table 5 "+ BiLSTM").
TASK_HEADS = ("linear", "bilstm")


class BertTaskModel(ObjectiveModel):
    """Base of BertClassifier, BertTokenClassifier, BertMultipleChoice and BertSpanLabeler: a BertEncoder and
    a task head with `num_outputs` outputs. Subclasses define `call` (on `sentence_features` or
    `token_features`) and the objective contract of `ObjectiveModel` (`objective_metrics`,
    `objective_weights`, `objective`).

    task_head: "linear" (the original): the OutputHead reads the pooled output (sentence-level tasks) or the
      sequence output (token-level tasks). "bilstm": a randomly initialised SequenceBiLSTM of `bilstm_layers`
      layers and `bilstm_size` units per direction reads the sequence output; token-level tasks read its
      per-token outputs, sentence-level tasks its final forward and backward states (each direction's
      summary of the whole input: a causal encoder's [CLS] has seen only itself, so the first position
      would waste the BiLSTM's forward half). Its variables and its OutputHead are named under `bilstm/`, so
      a checkpoint with a linear head leaves them missing (a new head) instead of loading a head of
      another shape. The pooler is then unused and frozen.

    Labels are `features["label_ids"]`; with Keras they may instead be passed as `y`. Examples with
    `is_real_example` 0 (padding added to fill the last batch) weigh nothing.
    """

    def __init__(self, config, num_outputs, dropout_rate=0.1, task_head="linear", bilstm_size=768, bilstm_layers=2,
                 **kwargs):
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        if task_head not in TASK_HEADS:
            raise ValueError(f"task_head {task_head!r}: expected one of {', '.join(TASK_HEADS)}")
        self.config = config
        self.dropout_rate = dropout_rate
        self.task_head, self.bilstm_size, self.bilstm_layers = task_head, bilstm_size, bilstm_layers
        self.encoder = BertEncoder(config)
        self.bilstm = SequenceBiLSTM(bilstm_size, bilstm_layers) if task_head == "bilstm" else None
        head_width = 2 * bilstm_size if self.bilstm else config.hidden_size
        self.head = OutputHead(num_outputs, head_width, config.initializer_range, dropout_rate)
        if self.bilstm:
            self.encoder.pooler.trainable = False  # the BiLSTM reads the sequence output
        self.create_objective_trackers()

    def build(self, input_shape=None):
        self.encoder.build()
        if self.bilstm:
            self.bilstm.build((None, None, self.bilstm_input_width()))
        self.head.build()
        self.built = True

    def encode(self, inputs, training=None, pooled_only=False):
        """The encoder's outputs for the model inputs among `inputs` (other keys, e.g. labels, are ignored);
        `pooled_only`: the pooled output alone (`BertEncoder`)."""
        return self.encoder({k: inputs[k] for k in INPUT_NAMES if k in inputs}, training=training,
                            pooled_only=pooled_only)

    def bilstm_input_width(self):
        """The width of what the BiLSTM reads (`bilstm_input`): H."""
        return self.config.hidden_size

    def bilstm_input(self, inputs, training=None):
        """What a BiLSTM head reads: the sequence output float [B, T, H]."""
        return self.encode(inputs, training)[SEQUENCE_OUTPUT]

    @staticmethod
    def input_mask(inputs):
        """int [B, T]: `input_mask`, or ones when absent."""
        return inputs[INPUT_MASK] if INPUT_MASK in inputs else ops.ones_like(inputs[INPUT_IDS])

    def token_features(self, inputs, training=None):
        """What a token-level OutputHead reads: the sequence output float [B, T, H], or with the BiLSTM head
        its per-token outputs float32 [B, T, 2 bilstm_size]."""
        if self.bilstm is None:
            return self.encode(inputs, training)[SEQUENCE_OUTPUT]
        return self.bilstm(self.bilstm_input(inputs, training), self.input_mask(inputs), training=training)[0]

    def sentence_features(self, inputs, training=None):
        """What a sentence-level OutputHead reads: the pooled output float [B, H], or with the BiLSTM head its
        final forward and backward states float32 [B, 2 bilstm_size]."""
        if self.bilstm is None:
            return self.encode(inputs, training, pooled_only=True)[POOLED_OUTPUT]
        return self.bilstm(self.bilstm_input(inputs, training), self.input_mask(inputs), training=training)[1]

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

    def head_options(self):
        """The constructor options that shape the head, for a checkpoint to describe itself (embedded by the
        training loop, read by export_model.py): None for the linear head, else {"task_head": "bilstm",
        "bilstm_size", "bilstm_layers"}."""
        if self.bilstm is None:
            return None
        return {"task_head": self.task_head, "bilstm_size": self.bilstm_size, "bilstm_layers": self.bilstm_layers}

    def head_variables(self):
        """{name: variable} of the task head: `output_weights`, `output_bias`; with the BiLSTM head
        `bilstm/layer_{i}/{forward,backward}/...`, `bilstm/output_weights`, `bilstm/output_bias`."""
        if self.bilstm is None:
            return self.head.checkpoint_variables()
        variables = {**self.bilstm.checkpoint_variables(), **self.head.checkpoint_variables()}
        return {BILSTM_SCOPE + name: variable for name, variable in variables.items()}

    def checkpoint_variables(self):
        """{Google checkpoint name: variable}: the encoder's `bert/...` names and `head_variables()`."""
        if not self.built:
            self.build()
        return {**self.encoder.checkpoint_variables(), **self.head_variables()}

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.saving.serialize_keras_object(self.dtype_policy),
                "config": self.config.to_dict(), "dropout_rate": self.dropout_rate, "task_head": self.task_head,
                "bilstm_size": self.bilstm_size, "bilstm_layers": self.bilstm_layers}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)

