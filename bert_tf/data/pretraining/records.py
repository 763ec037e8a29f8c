"""The pretraining TFRecord format of the original `create_pretraining_data.py` (names, shapes, dtypes).

Records written here train in the original code and the original's records train here. TensorFlow is
imported inside the functions: data-creation worker processes use only the names and stay TF-free.
"""

import numpy as np

from bert_tf.feature_schema import (
    INPUT_NAMES,
    MASKED_LM_IDS,
    MASKED_LM_POSITIONS,
    MASKED_LM_WEIGHTS,
    NEXT_SENTENCE_LABELS,
)

# In the records: INPUT_NAMES [max_seq_length] int64, these two [max_predictions_per_seq] int64,
# MASKED_LM_WEIGHTS [max_predictions_per_seq] float32, NEXT_SENTENCE_LABELS [1] int64.
MASKED_LM_INT_FEATURES = (MASKED_LM_POSITIONS, MASKED_LM_IDS)
ALL_FEATURES = INPUT_NAMES + MASKED_LM_INT_FEATURES + (MASKED_LM_WEIGHTS, NEXT_SENTENCE_LABELS)


def pretraining_feature_spec(max_seq_length, max_predictions_per_seq):
    """The original's `name_to_features` for `tf.io.parse_single_example` / `parse_example`."""
    import tensorflow as tf

    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in INPUT_NAMES}
    spec.update({name: tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
                 for name in MASKED_LM_INT_FEATURES})
    spec[MASKED_LM_WEIGHTS] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32)
    spec[NEXT_SENTENCE_LABELS] = tf.io.FixedLenFeature([1], tf.int64)
    return spec


def serialize_pretraining_example(features):
    """{name: 1-D array-like} with the 7 original features -> serialized tf.train.Example bytes."""
    import tensorflow as tf

    def int_feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=np.asarray(values, np.int64).tolist()))

    def float_feature(values):
        return tf.train.Feature(float_list=tf.train.FloatList(value=np.asarray(values, np.float32).tolist()))

    fields = {name: int_feature(features[name])
              for name in ALL_FEATURES if name != MASKED_LM_WEIGHTS}
    fields[MASKED_LM_WEIGHTS] = float_feature(features[MASKED_LM_WEIGHTS])
    return tf.train.Example(features=tf.train.Features(feature=fields)).SerializeToString()
