"""BERT's building blocks as Keras layers: embeddings, attention, Transformer block, heads."""
