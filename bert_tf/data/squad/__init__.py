"""SQuAD data: examples and features, their TFRecords, TFDS input, answers from logits."""
