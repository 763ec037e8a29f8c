"""Models on top of BertEncoder: the pretrainer and the fine-tuning task models."""
