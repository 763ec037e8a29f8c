"""Convert a BERT checkpoint between formats: Google TF1, HuggingFace, KerasHub and bert_tf, both ways.

    python convert_checkpoint.py --init_checkpoint=$HF_DIR --output_dir=converted/
    python convert_checkpoint.py --init_checkpoint=$BERT_DIR/bert_model.ckpt \
      --bert_config_file=$BERT_DIR/bert_config.json --output_dir=converted/
    python convert_checkpoint.py --init_checkpoint=sentiment_output/ --model_type=classifier \
      --vocab_file=$BERT_DIR/vocab.txt --output_format=huggingface --output_dir=sentiment_hf/
    python convert_checkpoint.py --init_checkpoint=$KERAS_HUB_PRESET --output_dir=converted/

--output_format=bert_tf (the default) writes `output_dir/bert_model.ckpt.{index,data-*}` (Google's variable
names, config embedded), `bert_config.json`, `vocab.txt` (when one is found beside the input or given) and a
task model's `labels.txt`. `huggingface` writes a directory that `transformers` loads with `from_pretrained`
(config.json, model.safetensors, vocab.txt, tokenizer_config.json, special_tokens_map.json); `keras_hub` a
preset that `keras_hub.models.BertBackbone.from_preset` (a classifier: `BertTextClassifier.from_preset`)
loads. --init_checkpoint takes any format (a KerasHub preset directory too). The output directory must not
exist or be empty; it appears complete or not at all.
"""


from absl import flags, logging

from bert_tf import checkpoints, model_types
from bert_tf.cli import model_flags, scripting
from bert_tf.conversion import OUTPUT_FORMATS, convert

FLAGS = flags.FLAGS
model_flags.define("init_checkpoint", "bert_config_file", "vocab_file", "do_lower_case")
flags.adopt_module_key_flags(model_flags)  # its flags in --help, not only in --helpfull
flags.DEFINE_string("output_dir", None, "Directory to write the converted model into (must not exist or be empty).")
flags.DEFINE_enum("output_format", "bert_tf", OUTPUT_FORMATS,
                  "bert_tf: a bert_tf checkpoint; huggingface: a transformers directory (from_pretrained); "
                  "keras_hub: a KerasHub preset (from_preset; the encoder and the classifier only).")
flags.DEFINE_enum("model_type", None, model_types.convertible(),
                  "What the checkpoint holds. Default: read from its heads (and a HuggingFace architectures / "
                  "KerasHub task); required for the classifier, ner and multiple_choice heads of bert_tf "
                  "fine-tuning output, which have the same variable names.")
flags.mark_flag_as_required("init_checkpoint")
flags.mark_flag_as_required("output_dir")


def main(_):
    logging.set_verbosity(logging.INFO)
    source = model_flags.init_checkpoint()  # opened once: the config, the checks and the conversion read this
    config = checkpoints.config_of(source, FLAGS.bert_config_file)  # the flag's, else the checkpoint's own
    vocab = FLAGS.vocab_file or source.vocab_file
    convert(source, FLAGS.output_dir, FLAGS.output_format, config, FLAGS.model_type, vocab,
            FLAGS.do_lower_case)


def console():
    """The command (see the module docstring): absl parses the flags and runs main. No lock on --output_dir:
    the converted folder appears whole by one rename, and a second conversion into it is refused."""
    scripting.run(main, lock_output=False)


if __name__ == "__main__":
    console()
