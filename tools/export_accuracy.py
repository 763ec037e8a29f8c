"""What each export precision costs a fine-tuned classifier: dev-set accuracy of the float32, bfloat16 and int8
SavedModels (and the LiteRT files) made by export_model.py from one run_classifier.py output dir.

    python tools/make_finetuning_data.py sentiment /tmp/sentiment
    python run_classifier.py --task_name=sst-2 --data_dir=/tmp/sentiment --output_dir=/tmp/sentiment_output \
      --bert_config_file=$MINILM/config.json --vocab_file=$MINILM/vocab.txt --init_checkpoint=$MINILM \
      --do_train --do_eval --max_seq_length=64 --train_batch_size=32 --learning_rate=5e-5 --num_train_epochs=1
    python tools/export_accuracy.py --classifier_dir=/tmp/sentiment_output --vocab_file=$MINILM/vocab.txt \
      --dev_file=/tmp/sentiment/dev.tsv --max_seq_length=64 --work_dir=/tmp/export_accuracy

The dev file is a GLUE-style TSV with a header and `sentence` and `label` columns (SST-2's layout). Every
SavedModel is called through `serve_text` (raw sentences in, the in-graph tokenizer) in batches of 256 and
every .tflite file one sentence at a time through the LiteRT interpreter, as a client would; the label is
the argmax of the probabilities. Prints one line per export: accuracy, the change against float32 in
points, the largest |probability difference| against float32, the size on disk.
"""

import argparse
import csv
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# name: export_model.py flags
EXPORTS = {
    "float32": [],
    "bfloat16": ["--export_dtype=bfloat16"],
    "int8": ["--quantize=int8"],
    "bfloat16 + int8": ["--export_dtype=bfloat16", "--quantize=int8"],
    "tflite float32": ["--export_format=tflite"],
    "tflite int8": ["--export_format=tflite", "--quantize=int8"],
}


def read_dev(path):
    """(sentences, int labels) of a TSV with a header naming `sentence` and `label`."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows or not {"sentence", "label"} <= set(rows[0]):
        raise ValueError(f"{path}: expected a TSV with a header naming the columns sentence and label")
    return [row["sentence"] for row in rows], np.array([int(row["label"]) for row in rows])


def export(name, flags, args):
    """Runs export_model.py for one EXPORTS entry; returns the path of the SavedModel or .tflite file."""
    export_dir = os.path.join(args.work_dir, name.replace(" + ", "_").replace(" ", "_"))
    if not os.path.exists(export_dir):
        command = [sys.executable, "-m", "bert_tf.cli.export_model", "--model_type=classifier",
                   f"--init_checkpoint={args.classifier_dir}", f"--vocab_file={args.vocab_file}",
                   f"--max_seq_length={args.max_seq_length}", f"--export_dir={export_dir}", *flags]
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(f"{' '.join(command)} failed: {result.stderr[-2000:]}")
    tflite = os.path.join(export_dir, "model.tflite")
    return tflite if os.path.exists(tflite) else os.path.join(export_dir, "1")


def saved_model_probabilities(path, sentences):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (registers the tokenizer ops the SavedModel uses)
    serve_text = tf.saved_model.load(path).signatures["serve_text"]
    return np.concatenate([serve_text(text_a=tf.constant(sentences[i:i + 256]))["probabilities"].numpy()
                           for i in range(0, len(sentences), 256)])


def tflite_probabilities(path, sentences):
    import tensorflow_text

    # TensorFlow's bundled LiteRT interpreter (the public tf.lite.Interpreter takes no op registerers).
    from tensorflow.lite.python.interpreter import InterpreterWithCustomOps
    interpreter = InterpreterWithCustomOps(model_path=path,
                                           custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)
    runner = interpreter.get_signature_runner()
    (input_name,) = runner.get_input_details()
    return np.stack([runner(**{input_name: np.array([sentence])})["probabilities"][0] for sentence in sentences])


def size_mb(path):
    if os.path.isfile(path):
        return os.path.getsize(path) / 1e6
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files) / 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classifier_dir", required=True, help="a run_classifier.py --output_dir")
    parser.add_argument("--vocab_file", required=True)
    parser.add_argument("--dev_file", required=True, help="TSV with sentence and label columns")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--work_dir", required=True, help="where the exports are written (reused if present)")
    parser.add_argument("--exports", default=",".join(EXPORTS), help="comma list of: " + ", ".join(EXPORTS))
    args = parser.parse_args()
    sentences, labels = read_dev(args.dev_file)
    reference = None
    print(f"{len(sentences)} dev sentences from {args.dev_file}")
    for name in args.exports.split(","):
        path = export(name, EXPORTS[name], args)
        read = tflite_probabilities if path.endswith(".tflite") else saved_model_probabilities
        probabilities = read(path, sentences)
        accuracy = 100 * float(np.mean(probabilities.argmax(axis=1) == labels))
        if reference is None:
            reference = (accuracy, probabilities)
        print(f"{name:18s} accuracy {accuracy:6.2f}%  ({accuracy - reference[0]:+.2f} points vs the first)"
              f"  max |p - p_ref| {np.abs(probabilities - reference[1]).max():.4f}  {size_mb(path):6.1f} MB",
              flush=True)


if __name__ == "__main__":
    main()
