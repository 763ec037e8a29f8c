"""BertConfig: the hyper-parameters of a BERT encoder, with Google's `bert_config.json` field names."""

import copy
import dataclasses
import json
import os

from bert_tf import atomic_io

# HF fields that mean nothing for the encoder's weights or numerics and are dropped silently.
_HF_IGNORED = {
    "_name_or_path", "architectures", "model_type", "transformers_version", "gradient_checkpointing",
    "use_cache", "pad_token_id", "bos_token_id", "eos_token_id", "torch_dtype", "dtype", "classifier_dropout",
    "add_cross_attention", "tie_word_embeddings", "id2label", "label2id", "problem_type",
    "output_past", "directionality", "pooler_fc_size", "pooler_num_attention_heads", "pooler_num_fc_layers",
    "pooler_size_per_head", "pooler_type", "finetuning_task", "tokenizer_class", "return_dict", "num_labels",
}
# KerasHub BertBackbone config.json fields -> Google's (its dropout is both of Google's dropout rates).
_KERAS_HUB_FIELDS = {"vocabulary_size": "vocab_size", "hidden_dim": "hidden_size", "num_layers": "num_hidden_layers",
                     "num_heads": "num_attention_heads", "intermediate_dim": "intermediate_size",
                     "max_sequence_length": "max_position_embeddings", "num_segments": "type_vocab_size"}
ACTIVATIONS = ("gelu", "gelu_new", "gelu_tanh", "relu", "swish", "silu", "tanh", "linear")


@dataclasses.dataclass
class BertConfig:
    """Hyper-parameters of a BERT encoder (Devlin et al. 2019, section 3).

    Field names are Google's `bert_config.json` names. `layer_norm_eps` is an addition (HF's name) that
    defaults to the original's 1e-12. `hidden_act="gelu"` is the exact erf GELU; "gelu_new"/"gelu_tanh" is
    the tanh approximation.

    `causal_attention` (an addition; HF's `is_decoder`): every position attends only to itself and the
    positions to its left, the left-to-right ("LTR") model of the paper's section 5.1, pretrained with
    `run_pretraining.py --pretraining_objective=ltr`. It is part of the model, so fine-tuning, feature
    extraction and export keep the constraint; the pooled output of such a model is taken at the last real
    token (the only one that sees the whole input) instead of [CLS]. `to_dict` writes the field only when it
    is true, so a bidirectional model's bert_config.json stays the original's.
    """

    vocab_size: int
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 16
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    causal_attention: bool = False

    def __post_init__(self):
        self.validate()

    def validate(self):
        """Raises ValueError naming the first field whose value is not usable."""
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size={self.hidden_size} is not a multiple of "
                             f"num_attention_heads={self.num_attention_heads}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ValueError(f"{name}={value!r} must be a number in [0, 1)")
        for name in ("initializer_range", "layer_norm_eps"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{name}={value!r} must be a positive number")
        if not isinstance(self.causal_attention, bool):
            raise ValueError(f"causal_attention={self.causal_attention!r} must be true or false")
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"hidden_act={self.hidden_act!r} is not one of {', '.join(ACTIVATIONS)}")

    def check_vocab_size(self, vocab_size, vocab_file):
        """ValueError unless a vocab of `vocab_size` tokens (read from `vocab_file`) fits this config."""
        if vocab_size != self.vocab_size:
            raise ValueError(f"{vocab_file} has {vocab_size} tokens but the config says vocab_size="
                             f"{self.vocab_size}; use the vocab.txt that belongs to this checkpoint")

    def check_seq_length(self, max_seq_length):
        """ValueError unless sequences of `max_seq_length` tokens fit the position table."""
        if not 2 <= max_seq_length <= self.max_position_embeddings:
            raise ValueError(f"max_seq_length={max_seq_length} must be between 2 and the config's "
                             f"max_position_embeddings={self.max_position_embeddings}")

    @property
    def attention_head_size(self):
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_dict(cls, values, source="config"):
        """Builds a config from a Google `bert_config.json`, HF `config.json` or KerasHub BertBackbone
        `config.json` dict (hidden_act "gelu_tanh": what KerasHub computes).

        Unknown keys raise a ValueError naming them and `source`, so a typo is not silently ignored.
        """
        if not isinstance(values, dict):
            raise ValueError(f"{source}: expected a JSON object, got {type(values).__name__}")
        if "registered_name" in values:
            values = _keras_hub_fields(values, source)
        fields = {f.name for f in dataclasses.fields(cls)}
        if values.get("model_type") not in (None, "bert"):
            raise ValueError(f"{source}: model_type={values['model_type']!r}, expected 'bert'")
        if values.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{source}: position_embedding_type={values['position_embedding_type']!r} is not "
                             "supported; BERT uses 'absolute'")
        kwargs, unknown = {}, []
        for key, value in values.items():
            if key == "is_decoder":  # HF's name for causal self-attention
                key = "causal_attention"
            if key in fields:
                kwargs[key] = value
            elif key not in _HF_IGNORED and key != "position_embedding_type":
                unknown.append(key)
        if unknown:
            raise ValueError(f"{source}: unknown field(s) {', '.join(sorted(unknown))}; expected Google "
                             f"bert_config.json fields ({', '.join(sorted(fields))})")
        if "vocab_size" not in kwargs:
            raise ValueError(f"{source}: missing required field 'vocab_size'")
        try:
            return cls(**kwargs)
        except ValueError as e:
            raise ValueError(f"{source}: {e}") from None

    @classmethod
    def from_json_file(cls, path):
        """Reads a Google `bert_config.json` or a HuggingFace `config.json` (a file or its directory)."""
        path = os.fspath(path)
        if os.path.isdir(path):
            for name in ("bert_config.json", "config.json"):
                if os.path.isfile(os.path.join(path, name)):
                    path = os.path.join(path, name)
                    break
            else:
                raise ValueError(f"{path}: directory has no bert_config.json or config.json")
        if not os.path.isfile(path):
            raise ValueError(f"{path}: config file not found")
        try:
            with open(path, encoding="utf-8") as f:
                values = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: not a valid JSON config file ({e})") from None
        return cls.from_dict(values, source=path)

    def to_dict(self):
        """The fields as a dict; `causal_attention` only when true (Google's bert_config.json has no such
        field)."""
        values = copy.deepcopy(dataclasses.asdict(self))
        if not self.causal_attention:
            del values["causal_attention"]
        return values

    def to_json_string(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path):
        """Writes the config atomically (`atomic_io.write_file`: checked, synced, renamed)."""
        atomic_io.write_file(path, self.to_json_string())


def _keras_hub_fields(values, source):
    """Google bert_config.json fields of a KerasHub `BertBackbone` config.json dict; ValueError naming `source`
    when it is another architecture. hidden_act is "gelu_tanh" (what KerasHub computes); layer_norm_eps keeps
    its default, KerasHub's hard-coded 1e-12."""
    registered = str(values["registered_name"])
    if registered.split(">")[-1] != "BertBackbone":
        raise ValueError(f"{source}: a KerasHub {registered.split('>')[-1]} preset; expected a BertBackbone")
    config = values.get("config", values)
    try:
        fields = {google: config[keras_hub] for keras_hub, google in _KERAS_HUB_FIELDS.items()}
        dropout = config["dropout"]
    except KeyError as e:
        raise ValueError(f"{source}: a BertBackbone config without {e}") from None
    return {**fields, "hidden_act": "gelu_tanh", "hidden_dropout_prob": dropout,
            "attention_probs_dropout_prob": dropout}
