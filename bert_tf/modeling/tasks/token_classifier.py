"""BertTokenClassifier: one label per token (named entity recognition), on the sequence output."""

import keras
from keras import ops

from bert_tf.feature_schema import IGNORE_LABEL, LABEL_IDS
from bert_tf.modeling.tasks.objective import cross_entropy_and_hits
from bert_tf.modeling.tasks.task_model import BertTaskModel


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenClassifier(BertTaskModel):
    """Token classification (Devlin et al. 2019, section 5.3, NER): dropout on every token's last-layer
    output, then `output_weights` [num_labels, H] and `output_bias` [num_labels].

    Inputs: a dict with `input_ids`, `input_mask`, `segment_ids` int32 [B, T].
    Output: logits float32 [B, T, num_labels].
    Objective: term "tagging" (cross-entropy, accuracy) over the positions whose `label_ids` int [B, T] is
    not IGNORE_LABEL (-100): the first word piece of each word; [CLS], [SEP], padding and the other pieces
    of a word are ignored.
    """

    def __init__(self, config, num_labels, dropout_rate=0.1, **kwargs):
        kwargs.setdefault("name", "bert_token_classifier")
        self.num_labels = num_labels
        super().__init__(config, num_labels, dropout_rate, **kwargs)
        self.encoder.pooler.trainable = False  # the pooled output is unused; the pooler stays as loaded

    def objective_metrics(self):
        return {"tagging": ("loss", "accuracy")}

    def call(self, inputs, training=None):
        return self.head(self.token_features(inputs, training), training=training)

    def objective_weights(self, features):
        labels = features[LABEL_IDS]
        weights = ops.cast(ops.not_equal(labels, IGNORE_LABEL), "float32")
        weights *= self.example_weights(features)[:, None]
        return {"tagging": ops.reshape(weights, (-1,))}

    def objective(self, features, outputs):
        loss, hits = cross_entropy_and_hits(ops.reshape(features[LABEL_IDS], (-1,)),
                                            ops.reshape(outputs, (-1, self.num_labels)))
        return {"tagging": {"loss": loss, "accuracy": hits}}

    def get_config(self):
        return {**super().get_config(), "num_labels": self.num_labels}
