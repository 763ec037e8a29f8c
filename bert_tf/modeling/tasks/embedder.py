"""BertSentenceEmbedder: sentence embeddings (sentence-transformers' Transformer + Pooling [+ Normalize]), and
their fine-tuning on (anchor, positive) pairs with in-batch negatives."""

import keras
from keras import ops

from bert_tf import model_types
from bert_tf.config import BertConfig
from bert_tf.feature_schema import INPUT_IDS, INPUT_NAMES, IS_REAL_EXAMPLE, SEQUENCE_OUTPUT
from bert_tf.formats import sentence_transformers
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.layers.sentence_pooling import SentencePooling, l2_normalize
from bert_tf.modeling.tasks.objective import ObjectiveModel, cross_entropy_and_hits

EMBEDDINGS = "embeddings"


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSentenceEmbedder(ObjectiveModel):
    """A BertEncoder whose sequence output is pooled into one vector per text (`SentencePooling`: mean, cls,
    max or mean_sqrt_len over the real tokens; optionally L2-normalized), as sentence-transformers computes
    them (all-MiniLM-L6-v2: mean pooling, normalized).

    Inputs: a dict with `input_ids`, `input_mask`, `segment_ids` int32 [B, T] (other keys are ignored), or
    [B, C, T] for C texts per example (training pairs: C = 2, anchor then positive).
    Output: float32 [B, H] (or [B, C, H]). `skip_padding` (`BertEncoder`'s; True for inference, not under XLA):
    the encoder skips the padding tokens, same embeddings to float rounding, faster on batches of mixed lengths.
    Objective: term "ranking" (MultipleNegativesRankingLoss of sentence-transformers): for a batch of
    (anchor, positive) pairs [B, 2, T], the scores `scale` * cosine(anchor i, positive j) [B, B] and a
    cross-entropy whose right answer for anchor i is positive i (the other B - 1 positives are its
    negatives); "accuracy" is the share of anchors whose own positive scores highest.

        embedder = BertSentenceEmbedder(config, pooling="mean", normalize=True)
        bert_tf.load_checkpoint(embedder, "all-MiniLM-L6-v2/")
        vectors = embedder.predict(features)  # [N, H]
    """

    def __init__(self, config, pooling="mean", normalize=True, scale=20.0, **kwargs):
        kwargs.setdefault("name", "bert_sentence_embedder")
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config, self.scale = config, float(scale)
        self.encoder = BertEncoder(config)
        self.encoder.pooler.trainable = False  # the pooled output is unused; the pooler stays as loaded
        self.pooling = SentencePooling(pooling, normalize, name="pooling")
        self.create_objective_trackers()

    @property
    def pooling_mode(self):
        return self.pooling.mode

    @property
    def normalize(self):
        return self.pooling.normalize

    def build(self, input_shape=None):
        self.encoder.build()
        self.built = True

    def call(self, inputs, training=None, skip_padding=None):
        shape, texts_per_example = ops.shape(inputs[INPUT_IDS]), len(inputs[INPUT_IDS].shape) == 3
        # [B, C, T] -> [B * C, T]; [B, T] as it is (its static shape kept: LiteRT's converter needs it)
        flat = {k: ops.reshape(inputs[k], (-1, shape[-1])) if texts_per_example else inputs[k]
                for k in INPUT_NAMES if k in inputs}
        encoded = self.encoder(flat, training=training, skip_padding=skip_padding)
        embeddings = self.pooling(encoded[SEQUENCE_OUTPUT], flat[INPUT_NAMES[1]])
        if texts_per_example:
            return ops.reshape(embeddings, (shape[0], shape[1], -1))
        return embeddings

    # --------------------------------------------------------------------------------------------- objective

    def objective_metrics(self):
        return {"ranking": ("loss", "accuracy")}

    def objective_weights(self, features):
        if IS_REAL_EXAMPLE in features:
            return {"ranking": ops.cast(features[IS_REAL_EXAMPLE], "float32")}
        return {"ranking": ops.ones((ops.shape(features[INPUT_IDS])[0],), "float32")}

    def objective_features(self, x, y):
        return dict(x) if isinstance(x, dict) else {INPUT_IDS: x}

    def objective(self, features, outputs):
        anchors, positives = l2_normalize(outputs[:, 0]), l2_normalize(outputs[:, 1])
        scores = self.scale * ops.matmul(anchors, ops.transpose(positives))  # [B, B]
        if IS_REAL_EXAMPLE in features:  # padding examples that fill the last batch are nobody's negative
            real = ops.cast(features[IS_REAL_EXAMPLE], "float32")
            scores = scores + (1.0 - real)[None, :] * -1e9
        loss, hits = cross_entropy_and_hits(ops.arange(ops.shape(scores)[0]), scores)
        return {"ranking": {"loss": loss, "accuracy": hits}}

    # ------------------------------------------------------------------------------------ weights, config

    def checkpoint_variables(self):
        """{Google checkpoint name: variable}: the encoder's `bert/...` names (pooling has no weights)."""
        if not self.built:
            self.build()
        return self.encoder.checkpoint_variables()

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.saving.serialize_keras_object(self.dtype_policy),
                "config": self.config.to_dict(), "pooling": self.pooling_mode, "normalize": self.normalize,
                "scale": self.scale}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)


def _from_checkpoint(config, source, options):
    """The registry's embedder: the pooling and normalization of the export `options` (--pooling, --normalize),
    each unset one sentence-transformers' default (`sentence_transformers.DEFAULTS`)."""
    chosen = {name: options[name] for name in ("pooling", "normalize") if options.get(name) is not None}
    settings = {**sentence_transformers.DEFAULTS, **chosen}
    return BertSentenceEmbedder(config, settings["pooling"], settings["normalize"])


model_types.provide(model_types.EMBEDDER, build=_from_checkpoint)
