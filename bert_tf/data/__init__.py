"""Input data, from text files to model features and tf.data pipelines.

    packing.py, record_framing.py   shared: packing segments into BERT inputs; TFRecord framing in NumPy
    pretraining/                    corpus -> sentences -> masked LM + NSP instances -> TFRecords -> tf.data
    squad/                          SQuAD examples and windows, their cached records, TFDS input, answers
    tasks/                          classification (GLUE, custom), tagging (NER), multiple choice (SWAG), tf.data

The feature names are bert_tf/feature_schema.py's.
"""
