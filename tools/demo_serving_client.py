"""Queries an exported SavedModel with raw sentences the way a serving process would: it imports only
tensorflow and tensorflow_text (run it with `python -I`), never bert_tf."""

import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the WordPiece op the graph uses)

if __name__ == "__main__":
    served = tf.saved_model.load(sys.argv[1]).signatures["serve_text"]
    texts = ["The Congress shall assemble at least once in every year.", "Congress meets every year.",
             "I like bananas.", "", "東京 😀"]
    out = served(text_a=tf.constant(texts))
    mask = tf.cast(out["input_mask"], tf.float32)[..., None]
    vectors = tf.math.l2_normalize(tf.reduce_sum(out["sequence_output"] * mask, 1) / tf.reduce_sum(mask, 1), -1)
    print("tokens per text:", out["input_mask"].numpy().sum(1).tolist())
    print("cosine similarity of mean-pooled outputs (texts 1-3):")
    print(tf.matmul(vectors[:3], vectors[:3], transpose_b=True).numpy().round(2))
    try:
        served(text_a=tf.constant([b"caf\xe9"]))
    except tf.errors.InvalidArgumentError as e:
        print("invalid UTF-8 refused:", e.message.splitlines()[-2].strip())
