"""Task models built on BertEncoder. BertPretrainer: masked LM + next sentence prediction."""

import keras
from keras import ops

from bert_tf.config import BertConfig
from bert_tf.modeling.encoder import INPUT_NAMES, BertEncoder
from bert_tf.modeling.layers.pretraining_heads import MaskedLMHead, NextSentenceHead


def _cross_entropy_and_hits(labels, logits):
    """labels int [...], logits float32 [..., C] -> (cross-entropy float32 [...], 1.0 where argmax == label)."""
    labels = ops.cast(labels, "int32")
    loss = ops.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    hits = ops.cast(ops.equal(ops.cast(ops.argmax(logits, axis=-1), "int32"), labels), "float32")
    return loss, hits


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(keras.Model):
    """BERT pretraining (Devlin et al. 2019, section 3.1): the encoder, the masked LM head (decoder tied to
    the word embeddings, evaluated only at `masked_lm_positions`) and, unless `use_next_sentence_label` is
    False (MLM-only pretraining, the paper's "No NSP" ablation), the next sentence head.

    Inputs: a dict of the original pretraining features, int [B, T] `input_ids`, `input_mask`,
    `segment_ids` and int [B, P] `masked_lm_positions`; the label features (`masked_lm_ids` [B, P],
    `masked_lm_weights` float [B, P], `next_sentence_labels` [B, 1]) may be in the same dict and are ignored
    by `call`.

    Outputs, a dict: `masked_lm_logits` float32 [B, P, V]; `next_sentence_logits` float32 [B, 2] (with NSP).

    The objective is defined here so that `compile(optimizer)` + `fit(dataset of feature dicts)` works on
    one device and the distributed loop (`bert_tf.training.loop`) computes the same thing:
    `objective_weights(features)` and `objective(features, outputs)` give, per term (`masked_lm`,
    `next_sentence`), each prediction's weight, cross-entropy and hit. The loss is, per term, the weighted
    mean cross-entropy, summed over the terms (the original: masked LM loss over `masked_lm_weights`, plus
    the mean NSP loss). The metrics are the original's: masked_lm_accuracy, masked_lm_loss,
    next_sentence_accuracy, next_sentence_loss.
    """

    def __init__(self, config, use_next_sentence_label=True, **kwargs):
        kwargs.setdefault("name", "bert_pretrainer")
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.use_next_sentence_label = use_next_sentence_label
        self.encoder = BertEncoder(config)
        self.masked_lm = MaskedLMHead(config.vocab_size, config.hidden_size, config.hidden_act,
                                      config.initializer_range, config.layer_norm_eps)
        self.next_sentence = None
        if use_next_sentence_label:
            self.next_sentence = NextSentenceHead(config.hidden_size, config.initializer_range)
        else:
            self.encoder.pooler.trainable = False  # nothing trains it without NSP; it stays as loaded
        self._objective_trackers = [keras.metrics.Mean(name=f"{term}_{metric}")
                                    for term in self.objective_terms for metric in ("accuracy", "loss")]

    @property
    def objective_terms(self):
        """The loss terms: ("masked_lm", "next_sentence") or ("masked_lm",) without NSP."""
        return ("masked_lm", "next_sentence") if self.use_next_sentence_label else ("masked_lm",)

    def build(self, input_shape=None):
        self.encoder.build()
        with keras.name_scope("cls"):
            self.masked_lm.build()
            if self.next_sentence is not None:
                self.next_sentence.build()
        self.built = True

    def call(self, inputs, training=None):
        if "masked_lm_positions" not in inputs or "input_ids" not in inputs:
            raise ValueError(f"BertPretrainer inputs have keys {sorted(inputs)}; expected input_ids, "
                             "input_mask, segment_ids and masked_lm_positions")
        encoded = self.encoder({k: inputs[k] for k in INPUT_NAMES if k in inputs}, training=training)
        outputs = {"masked_lm_logits": self.masked_lm(
            encoded["sequence_output"], inputs["masked_lm_positions"], self.encoder.embeddings.word_embeddings)}
        if self.next_sentence is not None:
            outputs["next_sentence_logits"] = self.next_sentence(encoded["pooled_output"])
        return outputs

    # ------------------------------------------------------------------------------------------ objective

    def objective_weights(self, features):
        """{term: float32 [N]}: the weight of each prediction, from the features alone (so a distributed
        loop can sum them over the global batch before the backward pass). masked_lm: `masked_lm_weights`
        flattened, N = B * P; next_sentence: ones, N = B."""
        weights = {"masked_lm": ops.reshape(ops.cast(features["masked_lm_weights"], "float32"), (-1,))}
        if self.use_next_sentence_label:
            weights["next_sentence"] = ops.ones((ops.shape(features["input_ids"])[0],), "float32")
        return weights

    def objective(self, features, outputs):
        """{term: {"loss": cross-entropy float32 [N], "accuracy": 1.0 where the argmax is right [N]}},
        aligned with `objective_weights`."""
        loss, hits = _cross_entropy_and_hits(ops.reshape(features["masked_lm_ids"], (-1,)),
                                             ops.reshape(outputs["masked_lm_logits"], (-1, self.config.vocab_size)))
        terms = {"masked_lm": {"loss": loss, "accuracy": hits}}
        if self.use_next_sentence_label:
            loss, hits = _cross_entropy_and_hits(ops.reshape(features["next_sentence_labels"], (-1,)),
                                                 outputs["next_sentence_logits"])
            terms["next_sentence"] = {"loss": loss, "accuracy": hits}
        return terms

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras `fit` hook: the pretraining loss of one batch of feature dicts `x` (`y` is unused)."""
        weights, terms = self.objective_weights(x), self.objective(x, y_pred)
        return sum(ops.divide_no_nan(ops.sum(weights[t] * terms[t]["loss"]), ops.sum(weights[t]))
                   for t in self.objective_terms)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Keras `fit`/`evaluate` hook: updates masked_lm_accuracy, masked_lm_loss, next_sentence_... ."""
        weights, terms = self.objective_weights(x), self.objective(x, y_pred)
        trackers = {tracker.name: tracker for tracker in self._objective_trackers}
        for term in self.objective_terms:
            for metric, values in terms[term].items():
                trackers[f"{term}_{metric}"].update_state(values, sample_weight=weights[term])
        return self.get_metrics_result()

    # ------------------------------------------------------------------------------------ weights, config

    def checkpoint_variables(self):
        """{Google checkpoint name: variable}: the encoder's `bert/...` and the heads' `cls/...` names."""
        if not self.built:
            self.build()
        names = dict(self.encoder.checkpoint_variables())
        names.update(self.masked_lm.checkpoint_variables())
        if self.next_sentence is not None:
            names.update(self.next_sentence.checkpoint_variables())
        return names

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.saving.serialize_keras_object(self.dtype_policy),
                "config": self.config.to_dict(), "use_next_sentence_label": self.use_next_sentence_label}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)
