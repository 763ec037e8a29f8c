"""The checkpoint formats bert_tf reads and writes besides its own: HuggingFace directories (`huggingface`) and
KerasHub presets (`keras_hub`), each mapped to and from the canonical (Google) variable names; `source`
holds the reader's common result, `model_types` which heads a model of each kind has."""
