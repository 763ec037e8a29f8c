"""BertClassifier: sentence(-pair) classification and regression on the pooled [CLS] output."""

import keras
from keras import ops

from bert_tf.feature_schema import LABEL_IDS
from bert_tf.modeling.tasks.objective import cross_entropy_and_hits
from bert_tf.modeling.tasks.task_model import BertTaskModel


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(BertTaskModel):
    """The original `run_classifier.py` model (Devlin et al. 2019, section 4.1): dropout on the pooled
    output, then `output_weights` [num_labels, H] and `output_bias` [num_labels] (the original's names, so
    its fine-tuned checkpoints load). `num_labels=1` is regression (STS-B): the one output is the score.

    Inputs: a dict with `input_ids`, `input_mask`, `segment_ids` int32 [B, T] (other keys are ignored).
    Output: logits float32 [B, num_labels] (regression: scores [B, 1]).
    Objective: term "classification" (loss = cross-entropy, accuracy) or, with num_labels=1, term
    "regression" (loss = squared error); labels `label_ids` int [B] or float [B].

        model = BertClassifier(config, num_labels=2)
        bert_tf.load_checkpoint(model, "uncased_L-12_H-768_A-12/bert_model.ckpt")
        model.compile(keras.optimizers.AdamW(2e-5))
        model.fit(train_dataset)  # feature dicts with label_ids, e.g. from bert_tf.data.tasks.pipeline
    """

    def __init__(self, config, num_labels, dropout_rate=0.1, **kwargs):
        kwargs.setdefault("name", "bert_classifier")
        self.num_labels = num_labels
        super().__init__(config, num_labels, dropout_rate, **kwargs)

    @property
    def is_regression(self):
        return self.num_labels == 1

    def objective_metrics(self):
        return {"regression": ("loss",)} if self.is_regression else {"classification": ("loss", "accuracy")}

    def call(self, inputs, training=None):
        return self.head(self.sentence_features(inputs, training), training=training)

    def objective_weights(self, features):
        return {term: self.example_weights(features) for term in self.objective_metrics()}

    def objective(self, features, outputs):
        if self.is_regression:
            error = outputs[:, 0] - ops.cast(ops.reshape(features[LABEL_IDS], (-1,)), "float32")
            return {"regression": {"loss": ops.square(error)}}
        loss, hits = cross_entropy_and_hits(ops.reshape(features[LABEL_IDS], (-1,)), outputs)
        return {"classification": {"loss": loss, "accuracy": hits}}

    def get_config(self):
        return {**super().get_config(), "num_labels": self.num_labels}

