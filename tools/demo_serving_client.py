"""Queries an exported SavedModel with raw sentences the way a serving process would: it imports only
tensorflow and tensorflow_text (run it with `python -I`), never bert_tf.

    python -I tools/demo_serving_client.py EXPORT_DIR/1

An encoder export: cosine similarities of mean-pooled sentence vectors, with the texts they compare. A
classifier export: each sentence's label and probabilities, from `serve_text` and from TF Serving's
`classify` signature (tf.Example input), against the label each sentence's writer meant. Its line
`similarity: ...` or `served: ...` is the demo's summary of the stage.
"""

import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the WordPiece op the graph uses)

ENCODER_TEXTS = ["The Congress shall assemble at least once in every year.", "Congress meets every year.",
                 "I like bananas.", "", "東京 😀"]
COMPARED = 3  # the first three: a sentence, a paraphrase, an unrelated one
# Each with the label its writer meant ("1" positive, "0" negative; None: none, the empty text).
CLASSIFIER_TEXTS = [("An absolute delight from start to finish.", "1"), ("A tedious, joyless mess.", "0"),
                    ("Not the best film of the year, but a warm and funny one.", "1"), ("", None)]
SENTIMENT = {"0": "negative", "1": "positive"}


def two(value):
    """`value` to 2 decimals, without the sign of a rounded -0.00."""
    return f"{value:.2f}".replace("-0.00", "0.00")


def show_encoder(served):
    out = served(text_a=tf.constant(ENCODER_TEXTS))
    mask = tf.cast(out["input_mask"], tf.float32)[..., None]
    vectors = tf.math.l2_normalize(tf.reduce_sum(out["sequence_output"] * mask, 1) / tf.reduce_sum(mask, 1), -1)
    tokens = out["input_mask"].numpy().sum(1).tolist()
    print("texts (tokens: [CLS] and [SEP] included):")
    for k, (text, count) in enumerate(zip(ENCODER_TEXTS, tokens), 1):
        print(f"  T{k} {text!r:60} {count} tokens")
    similarity = tf.matmul(vectors[:COMPARED], vectors[:COMPARED], transpose_b=True).numpy()
    print(f"cosine similarity of mean-pooled outputs (T1-T{COMPARED}):")
    print("      " + "".join(f"{f'T{k}':>6}" for k in range(1, COMPARED + 1)))
    for k, row in enumerate(similarity, 1):
        print(f"  T{k:<3}" + "".join(f"{two(value):>6}" for value in row))
    print(f"similarity: paraphrase T1~T2 {two(similarity[0, 1])}, unrelated T1~T3 {two(similarity[0, 2])}")


def show_classifier(served, classify):
    texts = [text for text, _ in CLASSIFIER_TEXTS]
    out = served(text_a=tf.constant(texts))
    right = meant_count = 0
    print("serve_text: raw sentences in; label and [P(negative), P(positive)] out, against the meant label:")
    for (text, meant), label, probabilities in zip(CLASSIFIER_TEXTS, out["label"].numpy(),
                                                   out["probabilities"].numpy()):
        label = label.decode()
        shown = ", ".join(f"{p:.3f}" for p in probabilities)
        verdict = "(no intended label)"
        if meant is not None:
            meant_count += 1
            right += label == meant
            verdict = "right" if label == meant else f"WRONG (meant {SENTIMENT.get(meant, meant)})"
        print(f"  {text!r:60} {SENTIMENT.get(label, label)} [{shown}]  {verdict}")
    examples = [tf.train.Example(features=tf.train.Features(feature={"text_a": tf.train.Feature(
        bytes_list=tf.train.BytesList(value=[text.encode()]))})).SerializeToString() for text in texts]
    api = classify(inputs=tf.constant(examples))
    same = bool(tf.reduce_all(tf.abs(api["scores"] - out["probabilities"]) < 1e-5))
    print(f"classify signature (tf.Example in, classes/scores out): scores equal serve_text's: {same}")
    print(f"served: {len(texts)} raw sentences, {right}/{meant_count} labels as meant; "
          f"classify scores {'=' if same else '!='} serve_text's")


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
