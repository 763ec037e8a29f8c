"""Extract per-token activations of chosen BERT layers as JSON lines (the original's flags and format).

    python extract_features.py --input_file=input.txt --output_file=output.jsonl \
      --vocab_file=$BERT_DIR/vocab.txt --bert_config_file=$BERT_DIR/bert_config.json \
      --init_checkpoint=$BERT_DIR/bert_model.ckpt --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8

A text longer than `--max_seq_length` is cut there (the original); with `--doc_stride=N` every line is read whole
through windows N word pieces apart, each piece's vector from the window where it has the most context.

`--init_checkpoint` may be a Google TF1 checkpoint, a bert_tf checkpoint or a HuggingFace directory /
model.safetensors; `--bert_config_file` may be a Google bert_config.json or a HF config.json.
"""

from absl import flags, logging

from bert_tf import BertConfig, BertEncoder
from bert_tf.checkpoints import load_checkpoint
from bert_tf.cli import flag_checks, model_flags, scripting
from bert_tf.data import windows
from bert_tf.extraction import FeatureExtractor, resolve_layers, write_features
from bert_tf.tokenization import FullTokenizer

FLAGS = flags.FLAGS
model_flags.define("bert_config_file", "init_checkpoint", "vocab_file", "do_lower_case")
flags.adopt_module_key_flags(model_flags)  # its flags in --help, not only in --helpfull
flags.DEFINE_string("input_file", None, "Text file, one example per line: `text` or `text_a ||| text_b`.")
flags.DEFINE_string("output_file", None, "JSON-lines output file.")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "Comma-separated layer indexes (-1 = last layer).")
flags.DEFINE_integer("max_seq_length", 128, "Maximum total tokens per example, [CLS]/[SEP] included; "
                     "longer inputs are truncated (unless --doc_stride is set).")
flags.DEFINE_integer("doc_stride", None, "Read each line whole: a text longer than max_seq_length becomes windows "
                     "of max_seq_length - 2 word pieces this many apart (1 <= N < max_seq_length - 2), each "
                     "piece's vector from the window where it has the most context. Single texts only.")
flags.DEFINE_integer("batch_size", 32, "Examples per forward pass (sorted by length, each batch cut to about its "
                     "longest).")
for name in ("input_file", "output_file", "bert_config_file", "init_checkpoint", "vocab_file"):
    flags.mark_flag_as_required(name)


def main(_):
    logging.set_verbosity(logging.INFO)
    flag_checks.check_at_least(1, "batch_size")
    flag_checks.check_max_seq_length(segments=1)
    if FLAGS.doc_stride is not None:
        windows.check_stride(FLAGS.max_seq_length - 2, FLAGS.doc_stride)
    config = BertConfig.from_json_file(FLAGS.bert_config_file)
    config.check_seq_length(FLAGS.max_seq_length)
    layers = resolve_layers(FLAGS.layers, config.num_hidden_layers)
    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    config.check_vocab_size(len(tokenizer.vocab), FLAGS.vocab_file)
    model_flags.check_init_checkpoint(config)
    flag_checks.check_input_file("input_file")
    flag_checks.check_output_file("output_file")
    flag_checks.check_outputs_not_inputs(flag_checks.paths_of("output_file"), flag_checks.paths_of(
        "input_file", "vocab_file", "bert_config_file", "init_checkpoint"))
    encoder = BertEncoder(config)
    load_checkpoint(encoder, FLAGS.init_checkpoint)
    extractor = FeatureExtractor(encoder, tokenizer, FLAGS.max_seq_length, layers, FLAGS.batch_size,
                                 FLAGS.doc_stride)
    count = write_features(extractor, FLAGS.input_file, FLAGS.output_file, FLAGS.batch_size)
    logging.info("Wrote features of %d examples to %s", count, FLAGS.output_file)


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
