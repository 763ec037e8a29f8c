"""BertPretrainer: BertEncoder with the masked LM and next sentence heads of BERT pretraining, or the
left-to-right LM of the paper's section 5.1 ablation."""

import math

import keras
from keras import ops

from bert_tf import model_types
from bert_tf.config import BertConfig
from bert_tf.feature_schema import (
    INPUT_IDS,
    INPUT_MASK,
    INPUT_NAMES,
    LM_LOGITS,
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

# mlm_nsp: masked LM + next sentence (the paper); mlm: masked LM only ("No NSP"); ltr: left-to-right LM
# ("LTR & No NSP"), on a causal_attention encoder.
PRETRAINING_OBJECTIVES = ("mlm_nsp", "mlm", "ltr")
# The language-model term of each objective: its loss is the one whose exp is the perplexity.
LM_TERMS = {"mlm_nsp": "masked_lm", "mlm": "masked_lm", "ltr": "lm"}


def original_token_ids(features):
    """int32 [B, T]: `input_ids` with the original id (`masked_lm_ids`) put back at every real masked
    position (`masked_lm_weights` > 0), i.e. the text before create_pretraining_data.py masked it. The
    positions of one example are distinct, as the original's masking draws them without replacement."""
    input_ids = ops.cast(features[INPUT_IDS], "int32")
    real = ops.cast(features[MASKED_LM_WEIGHTS] > 0, "int32")  # [B, P]
    at = ops.one_hot(ops.cast(features[MASKED_LM_POSITIONS], "int32"), ops.shape(input_ids)[1],
                     dtype="int32") * real[:, :, None]  # [B, P, T]
    originals = ops.sum(at * ops.cast(features[MASKED_LM_IDS], "int32")[:, :, None], axis=1)  # [B, T]
    return ops.where(ops.sum(at, axis=1) > 0, originals, input_ids)


def next_token_weights(features):
    """float32 [B, T]: 1.0 at every position i whose next position is a real token (`input_mask` shifted by
    one); the last position predicts nothing. From the mask alone, without restoring the tokens."""
    return ops.pad(ops.cast(features[INPUT_MASK], "float32")[:, 1:], ((0, 0), (0, 1)))


def next_token_targets(features):
    """(labels int32 [B, T], weights float32 [B, T]) of left-to-right LM: position i predicts the original
    token at i + 1, weighted by `next_token_weights`."""
    ids = original_token_ids(features) if MASKED_LM_IDS in features else ops.cast(features[INPUT_IDS], "int32")
    return ops.pad(ids[:, 1:], ((0, 0), (0, 1))), next_token_weights(features)


def pretraining_objective(config, has_next_sentence_head):
    """The objective a pretrained checkpoint was trained with: ltr for a causal_attention config, else
    mlm_nsp when it has the next sentence head, mlm when not."""
    if config.causal_attention:
        return "ltr"
    return "mlm_nsp" if has_next_sentence_head else "mlm"


def with_perplexity(results, objective):
    """The eval `results` dict plus `<lm term>_perplexity` = exp(mean LM loss): `masked_lm_perplexity`
    (mlm_nsp, mlm) or `lm_perplexity` (ltr), the paper's Table 6 "LM (ppl)"."""
    term = LM_TERMS[objective]
    loss = results.get(f"{term}_loss")
    if loss is None:
        return results
    return {**results, f"{term}_perplexity": math.exp(min(float(loss), 700.0))}


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(ObjectiveModel):
    """BERT pretraining (Devlin et al. 2019, section 3.1): the encoder, the masked LM head (decoder tied to
    the word embeddings, evaluated only at `masked_lm_positions`) and, with `objective="mlm_nsp"` (the
    default), the next sentence head; `objective="mlm"` is MLM-only pretraining (the paper's "No NSP"
    ablation).

    `objective="ltr"` is the left-to-right LM of section 5.1 ("LTR & No NSP"): the config must have
    `causal_attention`; the original tokens are restored from the masked features (`original_token_ids`),
    so the same records serve every objective, and the same head (transform + tied decoder) gives at every
    position the logits of the next token (`next_token_targets`).

    Inputs: a dict of the original pretraining features, int [B, T] `input_ids`, `input_mask`,
    `segment_ids` and int [B, P] `masked_lm_positions`; the label features (`masked_lm_ids` [B, P],
    `masked_lm_weights` float [B, P], `next_sentence_labels` [B, 1]) may be in the same dict and are ignored
    by `call`.

    Outputs, a dict: `masked_lm_logits` float32 [B, P, V]; `next_sentence_logits` float32 [B, 2] (with NSP);
    for ltr only `lm_logits` float32 [B, T, V] (the masked features are optional then: without them the
    input ids are taken as the text).

    Objective (the `ObjectiveModel` contract, so `compile(optimizer)` + `fit(dataset of feature dicts)` and
    the distributed loop compute the same thing): terms `masked_lm` (weights `masked_lm_weights`) and
    `next_sentence` (weight 1 per example), each with the cross-entropy "loss" and "accuracy" of every
    prediction. The loss is the original's: the masked LM loss over `masked_lm_weights` plus the mean NSP
    loss. The metrics are the original's: masked_lm_accuracy, masked_lm_loss, next_sentence_accuracy,
    next_sentence_loss. ltr: the term `lm` (lm_loss, lm_accuracy), weighted by `next_token_targets`.
    """

    def __init__(self, config, objective="mlm_nsp", **kwargs):
        kwargs.setdefault("name", "bert_pretrainer")
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        if objective not in PRETRAINING_OBJECTIVES:
            raise ValueError(f"objective={objective!r}; expected one of {', '.join(PRETRAINING_OBJECTIVES)}")
        if config.causal_attention != (objective == "ltr"):
            raise ValueError(
                f"objective={objective} needs a config with causal_attention={objective == 'ltr'} (a masked LM "
                "reads both directions, a left-to-right LM only the left)")
        self.config = config
        self.objective_name = objective
        self.use_next_sentence_label = objective == "mlm_nsp"
        self.encoder = BertEncoder(config)
        self.masked_lm = MaskedLMHead(config.vocab_size, config.hidden_size, config.hidden_act,
                                      config.initializer_range, config.layer_norm_eps)
        self.next_sentence = None
        if self.use_next_sentence_label:
            self.next_sentence = NextSentenceHead(config.hidden_size, config.initializer_range)
        else:
            self.encoder.pooler.trainable = False  # nothing trains it without NSP; it stays as loaded
        self.create_objective_trackers()

    def objective_metrics(self):
        """{"masked_lm": ("loss", "accuracy"), "next_sentence": (...)}; no next_sentence term without NSP;
        {"lm": (...)} for ltr."""
        terms = (LM_TERMS[self.objective_name],) + (("next_sentence",) if self.use_next_sentence_label else ())
        return {term: ("loss", "accuracy") for term in terms}

    def build(self, input_shape=None):
        self.encoder.build()
        with keras.name_scope("cls"):
            self.masked_lm.build()
            if self.next_sentence is not None:
                self.next_sentence.build()
        self.built = True

    def call(self, inputs, training=None):
        if self.objective_name == "ltr":
            return self._left_to_right(inputs, training)
        if MASKED_LM_POSITIONS not in inputs or INPUT_IDS not in inputs:
            raise ValueError(f"BertPretrainer inputs have keys {sorted(inputs)}; expected input_ids, "
                             "input_mask, segment_ids and masked_lm_positions")
        encoded = self.encoder({k: inputs[k] for k in INPUT_NAMES if k in inputs}, training=training)
        outputs = {MASKED_LM_LOGITS: self.masked_lm(
            encoded[SEQUENCE_OUTPUT], inputs[MASKED_LM_POSITIONS], self.encoder.embeddings.word_embeddings)}
        if self.next_sentence is not None:
            outputs[NEXT_SENTENCE_LOGITS] = self.next_sentence(encoded[POOLED_OUTPUT])
        return outputs

    def _left_to_right(self, inputs, training):
        """ltr: {lm_logits [B, T, V]} of the encoder on the original tokens."""
        if INPUT_IDS not in inputs:
            raise ValueError(f"BertPretrainer inputs have keys {sorted(inputs)}; expected input_ids, "
                             "input_mask, segment_ids (and the masked features of the records)")
        encoder_inputs = {k: inputs[k] for k in INPUT_NAMES if k in inputs}
        if MASKED_LM_IDS in inputs:
            encoder_inputs[INPUT_IDS] = original_token_ids(inputs)
        sequence_output = self.encoder(encoder_inputs, training=training)[SEQUENCE_OUTPUT]
        shape = ops.shape(sequence_output)
        every_position = ops.broadcast_to(ops.arange(shape[1])[None, :], (shape[0], shape[1]))
        return {LM_LOGITS: self.masked_lm(sequence_output, every_position,
                                          self.encoder.embeddings.word_embeddings)}

    # ------------------------------------------------------------------------------------------ objective

    def objective_weights(self, features):
        """{term: float32 [N]}: the weight of each prediction, from the features alone (so a distributed
        loop can sum them over the global batch before the backward pass). masked_lm: `masked_lm_weights`
        flattened, N = B * P; next_sentence: ones, N = B; lm (ltr): `next_token_weights`, N = B * T."""
        if self.objective_name == "ltr":
            return {"lm": ops.reshape(next_token_weights(features), (-1,))}
        weights = {"masked_lm": ops.reshape(ops.cast(features[MASKED_LM_WEIGHTS], "float32"), (-1,))}
        if self.use_next_sentence_label:
            weights["next_sentence"] = ops.ones((ops.shape(features[INPUT_IDS])[0],), "float32")
        return weights

    def objective(self, features, outputs):
        """{term: {"loss": cross-entropy float32 [N], "accuracy": 1.0 where the argmax is right [N]}},
        aligned with `objective_weights`."""
        if self.objective_name == "ltr":
            loss, hits = cross_entropy_and_hits(ops.reshape(next_token_targets(features)[0], (-1,)),
                                                 ops.reshape(outputs[LM_LOGITS], (-1, self.config.vocab_size)))
            return {"lm": {"loss": loss, "accuracy": hits}}
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
                "config": self.config.to_dict(), "objective": self.objective_name}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)


def _from_checkpoint(config, source, options):
    """The registry's pretrainer for the checkpoint `source`: the objective its heads say."""
    return BertPretrainer(config, objective=pretraining_objective(config, model_types.has_next_sentence(source)))


model_types.provide(model_types.PRETRAINER, build=_from_checkpoint)
