"""Keras 3 layers and models of BERT. Imports neither `bert_tf.data` nor `bert_tf.training`.

    layers/     building blocks: embeddings, attention, Transformer block, dense, LayerNorm, dropout, heads
    encoder.py  BertEncoder: embeddings + Transformer stack + pooler
    tasks/      models on the encoder: BertPretrainer and the fine-tuning task models, and the objective
                contract (tasks/objective.py) that the training loop relies on
"""
