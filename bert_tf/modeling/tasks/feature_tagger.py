"""BertFeatureTagger: the feature-based approach to NER (Devlin et al. 2019, section 5.3, Table 7): the
activations of chosen layers of a frozen encoder feed a randomly initialised BiLSTM tagger."""

import keras
from keras import ops

from bert_tf import model_types
from bert_tf.checkpoint_names import BILSTM_SCOPE
from bert_tf.feature_schema import ENCODER_OUTPUTS, INPUT_IDS, LAYER_FEATURES
from bert_tf.modeling.layers.scalar_mix import ScalarMix
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier

# The paper's six choices of features (Table 7); an explicit list of layer indices is concatenated.
FEATURE_CHOICES = ("embeddings", "second_to_last", "last", "weighted_sum_last_four", "concat_last_four",
                   "weighted_sum_all")


def resolve_feature_layers(choice, num_hidden_layers):
    """(layer indices, combination) of a feature choice: one of FEATURE_CHOICES, or comma-separated indices
    ("9,10,11,12"), concatenated. Index 0 is the embedding output (after its LayerNorm), i the output of
    transformer layer i, num_hidden_layers the last. combination: "concat" (one layer: itself) or
    "weighted_sum". ValueError naming an index that does not exist or an unknown choice."""
    last = num_hidden_layers
    named = {"embeddings": ([0], "concat"), "second_to_last": ([last - 1], "concat"), "last": ([last], "concat"),
             "weighted_sum_last_four": (list(range(last - 3, last + 1)), "weighted_sum"),
             "concat_last_four": (list(range(last - 3, last + 1)), "concat"),
             "weighted_sum_all": (list(range(last + 1)), "weighted_sum")}
    if choice in named:
        indices, combination = named[choice]
        if indices[0] < 0:
            raise ValueError(f"feature layers {choice!r}: this model has only {last} layers")
        return tuple(indices), combination
    try:
        indices = [int(index) for index in str(choice).split(",")]
    except ValueError:
        raise ValueError(f"feature layers {choice!r}: expected one of {', '.join(FEATURE_CHOICES)}, or layer "
                         f"indices such as {last - 1},{last} (0: the embeddings, {last}: the last layer)") from None
    for index in indices:
        if not 0 <= index <= last:
            raise ValueError(f"feature layer {index} does not exist: this model has layers 0 (the embeddings) to "
                             f"{last} (the last)")
    if len(set(indices)) != len(indices):
        raise ValueError(f"feature layers {choice!r}: a layer is listed twice")
    return tuple(indices), "concat"


@keras.saving.register_keras_serializable(package="bert_tf")
class BertFeatureTagger(BertTokenClassifier):
    """Feature-based token classification: the encoder is frozen (not trainable, run without dropout); the
    outputs of the layers `feature_layers` chooses (see `resolve_feature_layers`) are concatenated ([B, T, K H])
    or summed with learned softmax-normalised scalar weights and a scale (ScalarMix, ELMo's weighting: [B,
    T, H]), then a SequenceBiLSTM of `bilstm_layers` layers of `bilstm_size` units per direction (the paper:
    two layers of 768) and the output layer give each token's logits.

    Inputs: the encoder inputs int32 [B, T]; for training on cached features, also `layer_features` float32
    [B, T', K, H] (T' >= T; `layer_features()` of the same inputs: the encoder is then not run).
    Output: logits float32 [B, T, num_labels]. Objective: BertTokenClassifier's.
    Variables: the encoder's `bert/...` (never updated), `bilstm/...` (the BiLSTM, its output layer and,
    for weighted sums, `bilstm/scalar_mix/layer_weights` [K] and `bilstm/scalar_mix/gamma` []).
    """

    def __init__(self, config, num_labels, feature_layers="concat_last_four", bilstm_size=768, bilstm_layers=2,
                 dropout_rate=0.1, task_head="bilstm", **kwargs):
        if task_head != "bilstm":
            raise ValueError(f"BertFeatureTagger always has a BiLSTM head, not task_head={task_head!r}")
        kwargs.setdefault("name", "bert_feature_tagger")
        self.feature_layers = feature_layers
        super().__init__(config, num_labels, dropout_rate, task_head=task_head, bilstm_size=bilstm_size,
                         bilstm_layers=bilstm_layers, **kwargs)
        self.layer_indices, self.combination = resolve_feature_layers(feature_layers, self.config.num_hidden_layers)
        self.encoder.trainable = False
        self.mix = ScalarMix(len(self.layer_indices)) if self.combination == "weighted_sum" else None

    def build(self, input_shape=None):
        super().build(input_shape)
        if self.mix:
            self.mix.build()

    def bilstm_input_width(self):
        """H for a weighted sum, K H for a concatenation."""
        return self.config.hidden_size * (1 if self.combination == "weighted_sum" else len(self.layer_indices))

    def layer_features(self, inputs, training=None):
        """The frozen encoder's chosen layers, float32 [B, T, K, H] (what training caches; `training` is
        ignored: the encoder runs without dropout)."""
        outputs = self.encode(inputs, training=False)
        layers = [outputs["embedding_output"], *outputs[ENCODER_OUTPUTS]]
        return ops.stack([ops.cast(layers[i], "float32") for i in self.layer_indices], axis=2)

    def bilstm_input(self, inputs, training=None):
        """The combined features float32 [B, T, H or K H], from `layer_features` in `inputs` when cached."""
        if LAYER_FEATURES in inputs:
            layers = ops.cast(inputs[LAYER_FEATURES][:, :ops.shape(inputs[INPUT_IDS])[1]], "float32")
        else:
            layers = self.layer_features(inputs)
        if self.mix:
            return self.mix(layers)
        shape = ops.shape(layers)
        return ops.reshape(layers, (shape[0], shape[1], shape[2] * shape[3]))

    def head_variables(self):
        """BertTaskModel's BiLSTM head and, for weighted sums, `bilstm/scalar_mix/layer_weights`, `.../gamma`."""
        variables = super().head_variables()
        if self.mix:
            variables.update({f"{BILSTM_SCOPE}scalar_mix/{name}": variable
                              for name, variable in self.mix.checkpoint_variables().items()})
        return variables

    def head_options(self):
        return {**super().head_options(), "feature_layers": self.feature_layers}

    def get_config(self):
        return {**super().get_config(), "feature_layers": self.feature_layers}


def _from_checkpoint(config, source, options):
    """The registry's ner tagger for the checkpoint `source`: a BertFeatureTagger when its embedded head
    options name feature layers, else a BertTokenClassifier; its head's size and options from `source`."""
    head = source.head or {}
    tagger = BertFeatureTagger if "feature_layers" in head else BertTokenClassifier
    return tagger(config, model_types.get(model_types.NER).head_size(source), **head)


model_types.provide(model_types.NER, build=_from_checkpoint)
