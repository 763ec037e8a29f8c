"""Input data: packing, TFRecord formats, tf.data pipelines."""
