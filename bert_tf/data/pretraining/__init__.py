"""Pretraining data: corpus, sentences, instances (masked LM + next sentence), records, the tf.data input,
vocabulary learning."""
