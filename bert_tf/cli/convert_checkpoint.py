"""Convert a Google TF1 BERT checkpoint or a HuggingFace BERT directory into a bert_tf checkpoint.

    python convert_checkpoint.py --init_checkpoint=$HF_DIR --output_dir=converted/
    python convert_checkpoint.py --init_checkpoint=$BERT_DIR/bert_model.ckpt \
      --bert_config_file=$BERT_DIR/bert_config.json --output_dir=converted/

Writes `output_dir/bert_model.ckpt.{index,data-*}` (Google's variable names, config embedded),
`output_dir/bert_config.json` and, when one is found beside the input or given, `output_dir/vocab.txt`.
"""

import os

from absl import flags, logging

from bert_tf import BertConfig, atomic_io, run_directory
from bert_tf.checkpoints import convert_checkpoint, open_checkpoint
from bert_tf.cli import model_flags, scripting

FLAGS = flags.FLAGS
model_flags.define("init_checkpoint", "bert_config_file", "vocab_file")
flags.adopt_module_key_flags(model_flags)  # its flags in --help, not only in --helpfull
flags.DEFINE_string("output_dir", None, "Directory to write the converted checkpoint into.")
flags.mark_flag_as_required("init_checkpoint")
flags.mark_flag_as_required("output_dir")


def _beside_input(name):
    path = FLAGS.init_checkpoint
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    candidate = os.path.join(directory, name)
    return candidate if os.path.isfile(candidate) else None


def main(_):
    logging.set_verbosity(logging.INFO)
    if FLAGS.bert_config_file:
        config = BertConfig.from_json_file(FLAGS.bert_config_file)
        model_flags.check_init_checkpoint(config)
    else:
        source = open_checkpoint(FLAGS.init_checkpoint)
        config_file = _beside_input("bert_config.json") or _beside_input("config.json")
        if source.config is not None:
            config = BertConfig.from_dict(source.config, source=FLAGS.init_checkpoint)
        elif config_file:
            config = BertConfig.from_json_file(config_file)
        else:
            raise ValueError(f"{FLAGS.init_checkpoint}: no config found beside it; pass --bert_config_file")
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    names = convert_checkpoint(FLAGS.init_checkpoint, os.path.join(FLAGS.output_dir, "bert_model.ckpt"), config)
    run_directory.write_config(FLAGS.output_dir, config)
    vocab = FLAGS.vocab_file or _beside_input("vocab.txt")
    if vocab:
        with open(vocab, "rb") as f:
            atomic_io.write_file(os.path.join(FLAGS.output_dir, "vocab.txt"), f.read())
    logging.info("Converted %d tensors into %s", len(names), FLAGS.output_dir)


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
