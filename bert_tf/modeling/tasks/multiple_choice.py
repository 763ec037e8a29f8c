"""BertMultipleChoice: pick one of several endings (SWAG), one score per choice."""

import keras
from keras import ops

from bert_tf import model_types
from bert_tf.feature_schema import INPUT_IDS, INPUT_NAMES, LABEL_IDS
from bert_tf.modeling.tasks.objective import cross_entropy_and_hits
from bert_tf.modeling.tasks.task_model import BertTaskModel


@keras.saving.register_keras_serializable(package="bert_tf")
class BertMultipleChoice(BertTaskModel):
    """Multiple choice (Devlin et al. 2019, section 4.4, SWAG): each choice is encoded as its own sequence
    `[CLS] context [SEP] ending [SEP]`; dropout on its pooled output and `output_weights` [1, H],
    `output_bias` [1] give its score; a softmax over the choices picks one.

    Inputs: a dict with `input_ids`, `input_mask`, `segment_ids` int32 [B, C, T] (C choices).
    Output: logits float32 [B, C].
    Objective: term "choice" (cross-entropy, accuracy); labels `label_ids` int [B], the right choice.
    """

    def __init__(self, config, dropout_rate=0.1, **kwargs):
        kwargs.setdefault("name", "bert_multiple_choice")
        super().__init__(config, 1, dropout_rate, **kwargs)

    def objective_metrics(self):
        return {"choice": ("loss", "accuracy")}

    def call(self, inputs, training=None):
        shape = ops.shape(inputs[INPUT_IDS])
        flat = {k: ops.reshape(inputs[k], (-1, shape[-1])) for k in INPUT_NAMES if k in inputs}
        scores = self.head(self.sentence_features(flat, training), training=training)
        return ops.reshape(scores, (-1, shape[1]))

    def objective_weights(self, features):
        return {"choice": self.example_weights(features)}

    def objective(self, features, outputs):
        loss, hits = cross_entropy_and_hits(ops.reshape(features[LABEL_IDS], (-1,)), outputs)
        return {"choice": {"loss": loss, "accuracy": hits}}


model_types.provide(model_types.MULTIPLE_CHOICE,
                    build=lambda config, source, options: BertMultipleChoice(config, **(source.head or {})))
