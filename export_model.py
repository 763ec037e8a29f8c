"""Export a BERT model as a SavedModel for TF Serving, or the encoder as a TF-Hub-style pair.

    python export_model.py --model_type=encoder --bert_config_file=$BERT_DIR/bert_config.json \
      --vocab_file=$BERT_DIR/vocab.txt --init_checkpoint=$BERT_DIR/bert_model.ckpt \
      --max_seq_length=128 --export_dir=/models/bert

writes `/models/bert/1/` (the next free version number on later runs) with the signatures `serving_default`
(int32 input_ids / input_mask / segment_ids), `serve_text` (raw `text_a`), `serve_text_pair` (`text_a`,
`text_b`) and `serve_examples` (serialized tf.train.Example with `text_a`, optional `text_b`); see
`bert_tf/export.py`. `--export_format=hub` (encoder only) writes `export_dir/preprocessor/` and
`export_dir/encoder/` instead. Loading either needs `import tensorflow_text`.

Every model variable must come from `--init_checkpoint` (Google, bert_tf or HuggingFace): an export never
serves randomly initialised weights.
"""

from absl import flags, logging

from bert_tf import BertConfig, BertEncoder, export, scripting
from bert_tf.checkpoints import load_checkpoint, open_checkpoint
from bert_tf.modeling.models import BertPretrainer

FLAGS = flags.FLAGS
flags.DEFINE_enum("model_type", "encoder", ["encoder", "classifier", "squad", "ner", "pretrainer"],
                  "What to export: the encoder (pooled/sequence outputs), a fine-tuned task model, or the "
                  "pretraining model (masked LM logits at every position, next sentence logits).")
flags.DEFINE_enum("export_format", "serving", ["serving", "hub"],
                  "serving: export_dir/<version>/ for TF Serving; hub: export_dir/preprocessor/ and "
                  "export_dir/encoder/ (TF-Hub-style, encoder only).")
flags.DEFINE_string("bert_config_file", None, "bert_config.json (Google) or config.json (HuggingFace).")
flags.DEFINE_string("vocab_file", None, "The vocab.txt the model was trained with.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents (True for uncased models).")
flags.DEFINE_string("init_checkpoint", None, "Checkpoint with the weights (Google, bert_tf or HuggingFace).")
flags.DEFINE_integer("max_seq_length", 128, "T of every signature: the packed length of raw text inputs.")
flags.DEFINE_string("export_dir", None, "Where to write the SavedModel(s).")
for name in ("bert_config_file", "vocab_file", "init_checkpoint", "export_dir"):
    flags.mark_flag_as_required(name)

_NEXT_SENTENCE = "cls/seq_relationship/output_weights"


def build_model(model_type, config, checkpoint):
    """The Keras model and its serving adapter for `model_type`, with every weight loaded from `checkpoint`."""
    if model_type == "encoder":
        model = BertEncoder(config)
        adapter, unused = export.EncoderAdapter(model), ()
    elif model_type == "pretrainer":
        # MLM-only pretraining (no NSP head in the checkpoint) leaves the pooler untrained and unused.
        nsp = _NEXT_SENTENCE in open_checkpoint(checkpoint).shapes
        model = BertPretrainer(config, use_next_sentence_label=nsp)
        adapter, unused = export.PretrainerAdapter(model), () if nsp else ("bert/pooler/",)
    else:
        raise ValueError(f"--model_type={model_type} cannot be exported yet (its serving adapter lands with "
                         "the task model); exportable now: encoder, pretrainer")
    report = load_checkpoint(model, checkpoint)
    missing = [name for name in report.missing if not name.startswith(unused)]
    if missing:
        raise ValueError(f"{checkpoint} lacks {len(missing)} variable(s) of the {model_type} model "
                         f"({', '.join(missing[:5])}); the export would serve random weights")
    return model, adapter


def main(_):
    logging.set_verbosity(logging.INFO)
    if FLAGS.export_format == "hub" and FLAGS.model_type != "encoder":
        raise ValueError(f"--export_format=hub exports the encoder only, not --model_type={FLAGS.model_type}")
    config = BertConfig.from_json_file(FLAGS.bert_config_file)
    config.check_seq_length(FLAGS.max_seq_length)
    model, adapter = build_model(FLAGS.model_type, config, FLAGS.init_checkpoint)
    if FLAGS.export_format == "hub":
        paths = export.export_hub(model, FLAGS.vocab_file, FLAGS.do_lower_case, FLAGS.max_seq_length,
                                  FLAGS.export_dir)
    else:
        paths = [export.export_serving(adapter, FLAGS.vocab_file, FLAGS.do_lower_case, FLAGS.max_seq_length,
                                       FLAGS.export_dir)]
    for path in paths:
        logging.info("Wrote %s", path)


if __name__ == "__main__":
    scripting.run(main)
