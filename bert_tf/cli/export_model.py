"""Export a BERT model as a SavedModel for TF Serving, or the encoder as a TF-Hub-style pair.

    python export_model.py --model_type=encoder --bert_config_file=$BERT_DIR/bert_config.json \
      --vocab_file=$BERT_DIR/vocab.txt --init_checkpoint=$BERT_DIR/bert_model.ckpt \
      --max_seq_length=128 --export_dir=/models/bert

writes `/models/bert/1/` (the next free version number on later runs) with the signatures `serving_default`
(int32 input_ids / input_mask / segment_ids), `serve_text` (raw `text_a`), `serve_text_pair` (`text_a`,
`text_b`) and `serve_examples` (serialized tf.train.Example with `text_a`, optional `text_b`); see
`bert_tf/export/serving.py`. Requests take any sequence length T up to --max_seq_length, and raw text is
padded to the request's longest input rounded up to 8 (`--pad_to_max_length`: always to --max_seq_length).
`--export_format=hub` (encoder only) writes `export_dir/preprocessor/` and
`export_dir/encoder/` instead, and `--export_format=tflite` writes `export_dir/model.tflite` for LiteRT
(batch 1: one raw string in, or ids with `--tflite_inputs=ids`; see bert_tf/export/tflite.py). Loading any
of them needs `import tensorflow_text`.

Precision (docs/export_and_serving.md says which to choose): `--export_dtype=bfloat16` stores the
variables in bfloat16 and runs the matmuls in it (LayerNorm, softmax and the outputs stay float32);
`--quantize=int8` stores the dense kernels as int8 with per-output-channel scales (a SavedModel dequantizes
them per call: smaller, not faster; a .tflite file gets LiteRT's dynamic-range int8 kernels: faster).

A fine-tuned task model exports from its fine-tuning --output_dir (the newest model.ckpt-N, whose embedded
config stands in for --bert_config_file):

    python export_model.py --model_type=classifier --init_checkpoint=/tmp/mrpc_output \
      --vocab_file=$BERT_DIR/vocab.txt --max_seq_length=128 --export_dir=/models/mrpc

classifier (run_classifier.py): logits, probabilities, label_id, label, and a `classify` signature for TF
Serving's Classify API (a regression model: score, and `regress`); ner (run_ner.py): logits, tag_ids,
tags; squad (run_squad.py): start/end logits and the best answer span, with `serve_text(question,
context)` and `serve_examples` over `question` / `context` features (see bert_tf/export/task_adapters.py);
embedder (sentence embeddings, e.g. of a sentence-transformers directory, whose pooling and normalization it
reads; else --pooling, --normalize): embeddings [B, H].

Every model variable must come from `--init_checkpoint` (Google, bert_tf or HuggingFace): an export never
serves randomly initialised weights.
"""

import os

from absl import flags, logging

from bert_tf import checkpoints, model_types
from bert_tf.cli import flag_checks, model_flags, scripting
from bert_tf.export import serving, serving_models
from bert_tf.tokenization import load_vocab

FLAGS = flags.FLAGS
model_flags.define("bert_config_file", "vocab_file", "do_lower_case", "init_checkpoint", "pooling", "normalize")
flags.adopt_module_key_flags(model_flags)  # its flags in --help, not only in --helpfull
flags.DEFINE_enum("model_type", "encoder", model_types.exportable(),
                  "What to export: the encoder (pooled/sequence outputs), a fine-tuned task model, or the "
                  "pretraining model (masked LM logits at every position, next sentence logits).")
flags.DEFINE_enum("export_format", "serving", ["serving", "hub", "tflite"],
                  "serving: export_dir/<version>/ for TF Serving; hub: export_dir/preprocessor/ and "
                  "export_dir/encoder/ (TF-Hub-style, encoder only); tflite: export_dir/model.tflite for "
                  "LiteRT (batch 1; see --tflite_inputs).")
flags.DEFINE_enum("export_dtype", "float32", serving_models.EXPORT_DTYPES,
                  "The dtype the SavedModel stores its variables and runs its matmuls in. bfloat16: half the "
                  "size, faster on CPUs with AVX512-BF16/AMX and on GPUs; LayerNorm and softmax stay float32.")
flags.DEFINE_enum("quantize", "none", ["none", *serving_models.QUANTIZATION_MODES],
                  "int8: serving: dense kernels stored as int8 with per-output-channel scales, dequantized to "
                  "--export_dtype per call (a smaller model, not a faster one); tflite: LiteRT's dynamic-range "
                  "int8 (int8 weights, activations quantized per call by its int8 kernels: the fast int8 route).")
flags.DEFINE_enum("tflite_inputs", "text", ["text", "text_pair", "ids"],
                  "tflite: text = one raw string `text_a` in, tokenized in the model (needs tensorflow-text's "
                  "LiteRT ops; squad: `question`, `context`); text_pair = `text_a` and `text_b` (a sentence-pair "
                  "classifier); ids = int32 input_ids, input_mask, segment_ids [1, T], builtin ops only.")
flags.DEFINE_integer("max_seq_length", 128, "The longest T of every signature: requests take any T up to it; "
                     "raw text longer than it is truncated.")
flags.DEFINE_bool("pad_to_max_length", False, "Pad raw-text and tf.Example requests to --max_seq_length (for "
                  "clients that need one fixed T) instead of to their longest input rounded up to 8.")
flags.DEFINE_string("export_dir", None, "Where to write the SavedModel(s).")
flags.DEFINE_list("label_list", None, "classifier and ner: the label names in label-id order; default: the "
                  "labels.txt the fine-tuning run wrote beside --init_checkpoint (run_classifier.py: the task's "
                  "labels, e.g. 0,1 for MRPC, or its --label_list; run_ner.py: the training file's tags, sorted, O "
                  "first). Not for a regression classifier.")
flags.DEFINE_integer("max_answer_length", 30, "squad: the longest answer span, in word pieces.")
for name in ("vocab_file", "init_checkpoint", "export_dir"):
    flags.mark_flag_as_required(name)


def main(_):
    logging.set_verbosity(logging.INFO)
    check_format_options()
    for name in serving_models.TASK_OPTIONS:
        types = serving_models.types_reading(name)
        if FLAGS[name].present and FLAGS.model_type not in types:
            raise ValueError(f"--{name} is for --model_type={' or '.join(types)}, not {FLAGS.model_type}")
    flag_checks.check_max_seq_length(segments=1)  # what serve_text packs
    source = model_flags.init_checkpoint()  # opened once: the config, the checks, labels and weights come from it
    config = checkpoints.config_of(source, FLAGS.bert_config_file)
    config.check_seq_length(FLAGS.max_seq_length)
    config.check_vocab_size(len(load_vocab(FLAGS.vocab_file)), FLAGS.vocab_file)
    model_flags.check_init_checkpoint(config)
    label_list = FLAGS.label_list
    if label_list is None and FLAGS.model_type in serving_models.types_reading("label_list"):
        label_list = source.labels
        if label_list is not None:
            logging.info("Labels of %s: %s", source.path, ", ".join(label_list))
    quantize = None if FLAGS.quantize == "none" else FLAGS.quantize
    embedder_options = None
    if FLAGS.model_type == "embedder":
        from bert_tf.formats.sentence_transformers import embedder_options as resolve

        embedder_options = resolve(source, FLAGS.pooling, FLAGS.normalize)
    model, adapter = serving_models.build_model(
        FLAGS.model_type, config, source, label_list, FLAGS.max_answer_length, FLAGS.export_dtype,
        quantize if FLAGS.export_format == "serving" else None,  # LiteRT quantizes in its converter
        embedder_options)
    if FLAGS.export_format == "hub":
        paths = serving.export_hub(model, FLAGS.vocab_file, FLAGS.do_lower_case, FLAGS.max_seq_length,
                                   FLAGS.export_dir)
    elif FLAGS.export_format == "tflite":
        from bert_tf.export import tflite  # the LiteRT converter is only needed here
        paths = [tflite.export_tflite(adapter, FLAGS.vocab_file, FLAGS.do_lower_case, FLAGS.max_seq_length,
                                      os.path.join(FLAGS.export_dir, "model.tflite"),
                                      "ids" if FLAGS.tflite_inputs == "ids" else "text", quantize,
                                      text_pair=FLAGS.tflite_inputs == "text_pair")]
    else:
        paths = [serving.export_serving(adapter, FLAGS.vocab_file, FLAGS.do_lower_case, FLAGS.max_seq_length,
                                        FLAGS.export_dir, FLAGS.pad_to_max_length)]
    for path in paths:
        logging.info("Wrote %s", path)


def check_format_options():
    """ValueError naming the flag when an option does not apply to --export_format / --model_type."""
    fmt = FLAGS.export_format
    if fmt == "hub" and FLAGS.model_type not in ("encoder", "embedder"):
        raise ValueError(f"--export_format=hub exports the encoder or the embedder, not "
                         f"--model_type={FLAGS.model_type}")
    if fmt == "hub" and (FLAGS.export_dtype != "float32" or FLAGS.quantize != "none"):
        raise ValueError("--export_format=hub is for fine-tuning (float32 trainable variables): --export_dtype "
                         "and --quantize are for --export_format=serving or tflite")
    if fmt != "serving" and FLAGS.pad_to_max_length:
        raise ValueError(f"--pad_to_max_length is for --export_format=serving, not {fmt}")
    if fmt == "tflite" and FLAGS.export_dtype != "float32":
        raise ValueError("--export_format=tflite has no bfloat16 export (LiteRT runs float32 or int8 on CPU): "
                         "use --quantize=int8 for a smaller, faster model")
    if fmt != "tflite" and FLAGS["tflite_inputs"].present:
        raise ValueError(f"--tflite_inputs is for --export_format=tflite, not {fmt}")


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
