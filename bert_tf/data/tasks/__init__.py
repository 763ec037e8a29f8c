"""Classification, tagging (NER) and multiple-choice data, and their tf.data input."""
