"""ObjectiveModel: what the training loop needs from a model, written down once.

Every trainable model of bert_tf (BertPretrainer and the fine-tuning task models) is an ObjectiveModel, so
that Keras `compile(optimizer)` + `fit` / `evaluate` on one device and the distributed loop
(`bert_tf.training.loop.Trainer`) compute the same loss and metrics from the same three methods:

  objective_metrics()               {term: metric names}, e.g. {"masked_lm": ("loss", "accuracy")}
  objective_weights(features)       {term: float32 [N]}: each prediction's weight, from the features alone
                                    (0 for padding and ignored positions), so a distributed loop can sum them
                                    over the global batch before the backward pass
  objective(features, outputs)      {term: {metric: float32 [N]}}, aligned with the weights; "loss" is each
                                    prediction's loss, "accuracy" 1.0 where its argmax is right
  objective_sums(features, outputs) (defined here from the two above) the summed weights and weighted metric
                                    values of a batch, which the training loops add up
  objective_sum_names()             (defined here) the keys of objective_sums, known before any batch

The loss is, per term, the weighted mean of "loss" over the predictions, summed over the terms; a metric is
reported as `<term>_<metric>` (masked_lm_accuracy, next_sentence_loss, classification_accuracy, ...), the
weighted mean of its values.

The contract is described in docs/DESIGN.md, section 3.3.
"""

import keras
from keras import ops


def _sum_names(term, metrics):
    """The keys of one term's sums in `objective_sums`: (its summed weights', {metric: its weighted sum's})."""
    return f"{term}_weight", {metric: f"{term}_{metric}_sum" for metric in metrics}


class ObjectiveModel(keras.Model):
    """Base of every trainable bert_tf model: the objective contract above and the Keras hooks built on it.

    Subclasses define `call`, `objective_metrics`, `objective_weights` and `objective`; `objective_features`
    (x, y) -> features is the hook that lets Keras pass labels as `y`. What the training loop saves a
    checkpoint from is declared here too: `config` (the BertConfig embedded in the checkpoint),
    `checkpoint_variables()` and `head_options()`.
    """

    config = None  # the model's BertConfig, set by every subclass

    def checkpoint_variables(self):
        """{Google checkpoint name: variable} of every weight (what checkpoints save and load)."""
        raise NotImplementedError

    def head_options(self):
        """The constructor options that shape a head other than the original linear one (embedded in the
        checkpoints the loop writes, read back by export_model.py), or None."""
        return None

    def objective_metrics(self):
        """{term: metric names}: what `objective` returns, e.g. {"classification": ("loss", "accuracy")}."""
        raise NotImplementedError

    def objective_weights(self, features):
        """{term: float32 [N]}: each prediction's weight, from `features` alone."""
        raise NotImplementedError

    def objective(self, features, outputs):
        """{term: {metric: float32 [N]}}: each prediction's loss and metric values, aligned with the weights."""
        raise NotImplementedError

    def objective_sums(self, features, outputs):
        """{`<term>_weight`: the summed weights, `<term>_<metric>_sum`: the weighted sum of each metric}, float32
        scalars of one (micro-)batch: what the training loops add over batches and replicas."""
        weights, terms = self.objective_weights(features), self.objective(features, outputs)
        sums = {}
        for term, w in weights.items():
            weight_name, metric_names = _sum_names(term, terms[term])
            sums[weight_name] = ops.sum(w)
            for metric, values in terms[term].items():
                sums[metric_names[metric]] = ops.sum(w * values)
        return sums

    def objective_sum_names(self):
        """The keys of `objective_sums`, from `objective_metrics` alone (without tracing the model)."""
        names = []
        for term, metrics in self.objective_metrics().items():
            weight_name, metric_names = _sum_names(term, metrics)
            names += [weight_name, *metric_names.values()]
        return names

    def objective_features(self, x, y):
        """The features dict that `objective_weights` / `objective` read, from Keras' `x` and `y`."""
        return x

    def objective_loss(self, features, outputs):
        """float32 scalar: per term the weighted mean loss, summed over the terms."""
        weights, terms = self.objective_weights(features), self.objective(features, outputs)
        return sum(ops.divide_no_nan(ops.sum(weights[t] * terms[t]["loss"]), ops.sum(weights[t])) for t in terms)

    # ---------------------------------------------------------------------------------------- Keras hooks

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras `fit` hook: `objective_loss` of one batch."""
        return self.objective_loss(self.objective_features(x, y), y_pred)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Keras `fit`/`evaluate` hook: updates every `<term>_<metric>` mean."""
        features = self.objective_features(x, y)
        weights, terms = self.objective_weights(features), self.objective(features, y_pred)
        for term, values in terms.items():
            for metric, value in values.items():
                self._objective_tracker(f"{term}_{metric}").update_state(value, sample_weight=weights[term])
        return self.get_metrics_result()

    def _objective_tracker(self, name):
        trackers = {tracker.name: tracker for tracker in self._objective_trackers}
        if name not in trackers:
            raise ValueError(f"{type(self).__name__}.objective returned {name}, which objective_metrics() does "
                             f"not declare ({', '.join(trackers)})")
        return trackers[name]

    def create_objective_trackers(self):
        """The Keras metrics of `objective_metrics()`: subclasses call it at the end of `__init__`, once their
        own attributes decide the terms (metric variables must exist before `fit` traces a step)."""
        self._objective_trackers = [keras.metrics.Mean(name=f"{term}_{metric}")
                                    for term, metrics in self.objective_metrics().items() for metric in metrics]


def cross_entropy_and_hits(labels, logits):
    """labels int [...], logits float32 [..., C] -> (cross-entropy float32 [...], 1.0 where argmax == label).

    Labels outside [0, C) (IGNORE_LABEL, padding) are clipped into range so that the loss stays finite:
    give them weight 0."""
    labels = ops.clip(ops.cast(labels, "int32"), 0, ops.shape(logits)[-1] - 1)
    loss = ops.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    hits = ops.cast(ops.equal(ops.cast(ops.argmax(logits, axis=-1), "int32"), labels), "float32")
    return loss, hits
