"""BertPretrainer: BertEncoder with the masked LM and next sentence heads of BERT pretraining."""

import keras
from keras import ops

from bert_tf.config import BertConfig
from bert_tf.feature_schema import (
    INPUT_IDS,
    INPUT_NAMES,
    MASKED_LM_IDS,
    MASKED_LM_LOGITS,
    MASKED_LM_POSITIONS,
    MASKED_LM_WEIGHTS,
    NEXT_SENTENCE_LABELS,
    NEXT_SENTENCE_LOGITS,
    POOLED_OUTPUT,
    SEQUENCE_OUTPUT,
)
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.layers.pretraining_heads import MaskedLMHead, NextSentenceHead
from bert_tf.modeling.tasks.objective import ObjectiveModel, cross_entropy_and_hits


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(ObjectiveModel):
    """BERT pretraining (Devlin et al. 2019, section 3.1): the encoder, the masked LM head (decoder tied to
    the word embeddings, evaluated only at `masked_lm_positions`) and, unless `use_next_sentence_label` is
    False (MLM-only pretraining, the paper's "No NSP" ablation), the next sentence head.

    Inputs: a dict of the original pretraining features, int [B, T] `input_ids`, `input_mask`,
    `segment_ids` and int [B, P] `masked_lm_positions`; the label features (`masked_lm_ids` [B, P],
    `masked_lm_weights` float [B, P], `next_sentence_labels` [B, 1]) may be in the same dict and are ignored
    by `call`.

    Outputs, a dict: `masked_lm_logits` float32 [B, P, V]; `next_sentence_logits` float32 [B, 2] (with NSP).

    Objective (the `ObjectiveModel` contract, so `compile(optimizer)` + `fit(dataset of feature dicts)` and
    the distributed loop compute the same thing): terms `masked_lm` (weights `masked_lm_weights`) and
    `next_sentence` (weight 1 per example), each with the cross-entropy "loss" and "accuracy" of every
    prediction. The loss is the original's: the masked LM loss over `masked_lm_weights` plus the mean NSP
    loss. The metrics are the original's: masked_lm_accuracy, masked_lm_loss, next_sentence_accuracy,
    next_sentence_loss.
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
        self.create_objective_trackers()

    def objective_metrics(self):
        """{"masked_lm": ("loss", "accuracy"), "next_sentence": (...)}; no next_sentence term without NSP."""
        terms = ("masked_lm", "next_sentence") if self.use_next_sentence_label else ("masked_lm",)
        return {term: ("loss", "accuracy") for term in terms}

    def build(self, input_shape=None):
        self.encoder.build()
        with keras.name_scope("cls"):
            self.masked_lm.build()
            if self.next_sentence is not None:
                self.next_sentence.build()
        self.built = True

    def call(self, inputs, training=None):
        if MASKED_LM_POSITIONS not in inputs or INPUT_IDS not in inputs:
            raise ValueError(f"BertPretrainer inputs have keys {sorted(inputs)}; expected input_ids, "
                             "input_mask, segment_ids and masked_lm_positions")
        encoded = self.encoder({k: inputs[k] for k in INPUT_NAMES if k in inputs}, training=training)
        outputs = {MASKED_LM_LOGITS: self.masked_lm(
            encoded[SEQUENCE_OUTPUT], inputs[MASKED_LM_POSITIONS], self.encoder.embeddings.word_embeddings)}
        if self.next_sentence is not None:
            outputs[NEXT_SENTENCE_LOGITS] = self.next_sentence(encoded[POOLED_OUTPUT])
        return outputs

    # ------------------------------------------------------------------------------------------ objective

    def objective_weights(self, features):
        """{term: float32 [N]}: the weight of each prediction, from the features alone (so a distributed
        loop can sum them over the global batch before the backward pass). masked_lm: `masked_lm_weights`
        flattened, N = B * P; next_sentence: ones, N = B."""
        weights = {"masked_lm": ops.reshape(ops.cast(features[MASKED_LM_WEIGHTS], "float32"), (-1,))}
        if self.use_next_sentence_label:
            weights["next_sentence"] = ops.ones((ops.shape(features[INPUT_IDS])[0],), "float32")
        return weights

    def objective(self, features, outputs):
        """{term: {"loss": cross-entropy float32 [N], "accuracy": 1.0 where the argmax is right [N]}},
        aligned with `objective_weights`."""
        loss, hits = cross_entropy_and_hits(ops.reshape(features[MASKED_LM_IDS], (-1,)),
                                             ops.reshape(outputs[MASKED_LM_LOGITS], (-1, self.config.vocab_size)))
        terms = {"masked_lm": {"loss": loss, "accuracy": hits}}
        if self.use_next_sentence_label:
            loss, hits = cross_entropy_and_hits(ops.reshape(features[NEXT_SENTENCE_LABELS], (-1,)),
                                                 outputs[NEXT_SENTENCE_LOGITS])
            terms["next_sentence"] = {"loss": loss, "accuracy": hits}
        return terms

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
