"""Queries an exported SavedModel with raw sentences the way a serving process would: it imports only
tensorflow and tensorflow_text (run it with `python -I`), never bert_tf.

    python -I tools/demo_serving_client.py EXPORT_DIR/1

An encoder export: cosine similarities of mean-pooled sentence vectors. A classifier export: each sentence's
label and probabilities, from `serve_text` and from TF Serving's `classify` signature (tf.Example input).
"""

import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the WordPiece op the graph uses)


def show_encoder(served):
    texts = ["The Congress shall assemble at least once in every year.", "Congress meets every year.",
             "I like bananas.", "", "東京 😀"]
    out = served(text_a=tf.constant(texts))
    mask = tf.cast(out["input_mask"], tf.float32)[..., None]
    vectors = tf.math.l2_normalize(tf.reduce_sum(out["sequence_output"] * mask, 1) / tf.reduce_sum(mask, 1), -1)
    print("tokens per text:", out["input_mask"].numpy().sum(1).tolist())
    print("cosine similarity of mean-pooled outputs (texts 1-3):")
    print(tf.matmul(vectors[:3], vectors[:3], transpose_b=True).numpy().round(2))


def show_classifier(served, classify):
    texts = ["An absolute delight from start to finish.", "A tedious, joyless mess.",
             "Not the best film of the year, but a warm and funny one.", ""]
    out = served(text_a=tf.constant(texts))
    for text, label, probabilities in zip(texts, out["label"].numpy(), out["probabilities"].numpy()):
        shown = ", ".join(f"{p:.3f}" for p in probabilities)
        print(f"  {text!r:62} label {label.decode()}  probabilities [{shown}]")
    examples = [tf.train.Example(features=tf.train.Features(feature={"text_a": tf.train.Feature(
        bytes_list=tf.train.BytesList(value=[text.encode()]))})).SerializeToString() for text in texts]
    api = classify(inputs=tf.constant(examples))
    same = bool(tf.reduce_all(tf.abs(api["scores"] - out["probabilities"]) < 1e-5))
    print(f"classify signature (tf.Example in, classes/scores out): scores equal serve_text's: {same}")


if __name__ == "__main__":
    model = tf.saved_model.load(sys.argv[1])
    serve_text = model.signatures["serve_text"]
    if "classify" in model.signatures:
        show_classifier(serve_text, model.signatures["classify"])
    else:
        show_encoder(serve_text)
    try:
        serve_text(text_a=tf.constant([b"caf\xe9"]))
    except tf.errors.InvalidArgumentError as e:
        print("invalid UTF-8 refused:", e.message.splitlines()[-2].strip())
