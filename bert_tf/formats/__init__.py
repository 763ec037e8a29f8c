"""The checkpoint formats' codecs, one layer below `checkpoints.py` and `conversion.py`: Google TF1 and bert_tf
bundles (`google`), HuggingFace directories (`huggingface`), KerasHub presets (`keras_hub`) and
sentence-transformers settings (`sentence_transformers`), each mapped to and from the canonical (Google)
variable names; `source` holds the readers' common result. They import `config`, `model_types`, `atomic_io`
and `checkpoint_paths` (which files a checkpoint path means), never `run_directory`, `checkpoints` or a model."""
