"""Export a BERT model as a SavedModel for TF Serving, or the encoder as a TF-Hub-style pair.

    python export_model.py --model_type=encoder --bert_config_file=$BERT_DIR/bert_config.json \
      --vocab_file=$BERT_DIR/vocab.txt --init_checkpoint=$BERT_DIR/bert_model.ckpt \
      --max_seq_length=128 --export_dir=/models/bert

writes `/models/bert/1/` (the next free version number on later runs) with the signatures `serving_default`
(int32 input_ids / input_mask / segment_ids), `serve_text` (raw `text_a`), `serve_text_pair` (`text_a`,
`text_b`) and `serve_examples` (serialized tf.train.Example with `text_a`, optional `text_b`); see
`bert_tf/export/serving.py`. `--export_format=hub` (encoder only) writes `export_dir/preprocessor/` and
`export_dir/encoder/` instead. Loading either needs `import tensorflow_text`.

A fine-tuned task model exports from its fine-tuning --output_dir (the newest model.ckpt-N, whose embedded
config stands in for --bert_config_file):

    python export_model.py --model_type=classifier --init_checkpoint=/tmp/mrpc_output \
      --vocab_file=$BERT_DIR/vocab.txt --max_seq_length=128 --export_dir=/models/mrpc

classifier (run_classifier.py): logits, probabilities, label_id, label, and a `classify` signature for TF
Serving's Classify API (a regression model: score, and `regress`); ner (run_ner.py): logits, tag_ids,
tags; squad (run_squad.py): start/end logits and the best answer span, with `serve_text(question,
context)` and `serve_examples` over `question` / `context` features (see bert_tf/export/task_adapters.py).

Every model variable must come from `--init_checkpoint` (Google, bert_tf or HuggingFace): an export never
serves randomly initialised weights.
"""

import os

from absl import flags, logging

import flag_checks
from bert_tf import BertConfig, BertEncoder, run_directory, scripting
from bert_tf.export import serving as export, task_adapters as export_tasks
from bert_tf.checkpoints import load_checkpoint, open_checkpoint
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier

FLAGS = flags.FLAGS
flags.DEFINE_enum("model_type", "encoder", ["encoder", "classifier", "squad", "ner", "pretrainer"],
                  "What to export: the encoder (pooled/sequence outputs), a fine-tuned task model, or the "
                  "pretraining model (masked LM logits at every position, next sentence logits).")
flags.DEFINE_enum("export_format", "serving", ["serving", "hub"],
                  "serving: export_dir/<version>/ for TF Serving; hub: export_dir/preprocessor/ and "
                  "export_dir/encoder/ (TF-Hub-style, encoder only).")
flags.DEFINE_string("bert_config_file", None, "bert_config.json (Google) or config.json (HuggingFace); default: "
                    "the config in --init_checkpoint (bert_tf checkpoints, e.g. a fine-tuning run's, embed theirs).")
flags.DEFINE_string("vocab_file", None, "The vocab.txt the model was trained with.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents (True for uncased models).")
flags.DEFINE_string("init_checkpoint", None, "Checkpoint with the weights (Google, bert_tf or HuggingFace), or a "
                    "fine-tuning --output_dir (its newest model.ckpt-N).")
flags.DEFINE_integer("max_seq_length", 128, "T of every signature: the packed length of raw text inputs.")
flags.DEFINE_string("export_dir", None, "Where to write the SavedModel(s).")
flags.DEFINE_list("label_list", None, "classifier and ner: the label names in label-id order; default: the "
                  "labels.txt the fine-tuning run wrote beside --init_checkpoint (run_classifier.py: the task's labels, "
                  "e.g. 0,1 for MRPC, or its --label_list; run_ner.py: the training file's tags, sorted, O first). "
                  "Not for a regression classifier.")
flags.DEFINE_integer("max_answer_length", 30, "squad: the longest answer span, in word pieces.")
for name in ("vocab_file", "init_checkpoint", "export_dir"):
    flags.mark_flag_as_required(name)

_NEXT_SENTENCE = "cls/seq_relationship/output_weights"
_POOLER = ("bert/pooler/",)
_HEADS = {"classifier": "output_weights", "ner": "output_weights", "squad": "cls/squad/output_weights"}
# Flags that only some model types read: giving one to another type is an error, not silently ignored.
_TASK_FLAGS = {"label_list": ("classifier", "ner"), "max_answer_length": ("squad",)}


def _head_size(source, model_type):
    """The number of outputs of the fine-tuned head of `model_type` in the checkpoint `source`."""
    name = _HEADS[model_type]
    if name not in source.shapes:
        raise ValueError(f"{source.path} has no {name}: not a fine-tuned {model_type} checkpoint (pass a "
                         "fine-tuning --output_dir or one of its model.ckpt-N as --init_checkpoint)")
    return source.shapes[name][0]


def _task_adapter(flag, adapter_class, model, value):
    """adapter_class(model, value); its ValueError (a bad --label_list / --max_answer_length) names the flag."""
    try:
        return adapter_class(model, value)
    except ValueError as e:
        raise ValueError(f"--{flag}: {e}") from None


def build_model(model_type, config, checkpoint, label_list=None, max_answer_length=30):
    """The Keras model and its serving adapter for `model_type`, with every weight loaded from `checkpoint`.

    label_list: the label names (classifier, ner; None for a regression classifier).
    max_answer_length: squad's longest answer span.
    """
    source = open_checkpoint(checkpoint)
    unused = ()  # variable name prefixes the checkpoint may lack: parts of the model that outputs never read
    if model_type == "encoder":
        model = BertEncoder(config)
        adapter = export.EncoderAdapter(model)
    elif model_type == "pretrainer":
        # MLM-only pretraining (no NSP head in the checkpoint) leaves the pooler untrained and unused.
        nsp = _NEXT_SENTENCE in source.shapes
        model = BertPretrainer(config, use_next_sentence_label=nsp)
        adapter, unused = export.PretrainerAdapter(model), () if nsp else _POOLER
    elif model_type == "classifier":
        model = BertClassifier(config, _head_size(source, model_type))
        adapter = _task_adapter("label_list", export_tasks.ClassifierAdapter, model, label_list)
    elif model_type == "ner":
        model = BertTokenClassifier(config, _head_size(source, model_type))
        adapter = _task_adapter("label_list", export_tasks.TokenClassifierAdapter, model, label_list)
        unused = _POOLER
    else:
        _head_size(source, model_type)
        model = BertSpanLabeler(config)
        adapter = _task_adapter("max_answer_length", export_tasks.SpanLabelerAdapter, model, max_answer_length)
        unused = _POOLER
    report = load_checkpoint(model, checkpoint)
    missing = [name for name in report.missing if not name.startswith(unused)]
    if missing:
        raise ValueError(f"{checkpoint} lacks {len(missing)} variable(s) of the {model_type} model "
                         f"({', '.join(missing[:5])}); the export would serve random weights")
    return model, adapter


def saved_labels(checkpoint):
    """The labels.txt that run_classifier.py / run_ner.py wrote beside `checkpoint` (a fine-tuning output
    dir or a model.ckpt-N in one), or None."""
    directory = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint)
    labels = run_directory.read_labels(directory)
    if labels is not None:
        logging.info("Labels from %s: %s", os.path.join(directory, run_directory.LABELS_FILE), ", ".join(labels))
    return labels


def read_config(config_file, checkpoint):
    """--bert_config_file if given, else the config embedded in (or beside, for HuggingFace) `checkpoint`."""
    if config_file:
        return BertConfig.from_json_file(config_file)
    source = open_checkpoint(checkpoint)
    if source.config is None:
        raise ValueError(f"{source.path} ({source.format} checkpoint) carries no config: pass --bert_config_file")
    return BertConfig.from_dict(source.config, source=source.path)


def main(_):
    logging.set_verbosity(logging.INFO)
    if FLAGS.export_format == "hub" and FLAGS.model_type != "encoder":
        raise ValueError(f"--export_format=hub exports the encoder only, not --model_type={FLAGS.model_type}")
    for name, model_types in _TASK_FLAGS.items():
        if FLAGS[name].present and FLAGS.model_type not in model_types:
            raise ValueError(f"--{name} is for --model_type={' or '.join(model_types)}, not {FLAGS.model_type}")
    flag_checks.check_max_seq_length(segments=1)  # what serve_text packs
    config = read_config(FLAGS.bert_config_file, FLAGS.init_checkpoint)
    config.check_seq_length(FLAGS.max_seq_length)
    label_list = FLAGS.label_list
    if label_list is None and FLAGS.model_type in _TASK_FLAGS["label_list"]:
        label_list = saved_labels(FLAGS.init_checkpoint)
    model, adapter = build_model(FLAGS.model_type, config, FLAGS.init_checkpoint, label_list,
                                 FLAGS.max_answer_length)
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
