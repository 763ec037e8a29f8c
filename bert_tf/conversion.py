"""Converting a checkpoint of any readable format (`checkpoints.open_checkpoint`) into a bert_tf, HuggingFace
or KerasHub model directory (their codecs: bert_tf/formats/).

    convert("hf_minilm/", "out/", "keras_hub", config, vocab_file="hf_minilm/vocab.txt")

The output directory appears complete or not at all (`atomic_io.new_directory`); the weights are copied bit
for bit (only their layout changes: transposes, per-head reshapes).
"""

import os

from absl import logging

from bert_tf import atomic_io, model_types, run_directory
from bert_tf.checkpoint_names import OUTPUT_WEIGHTS
from bert_tf.checkpoints import check_fits, load_checkpoint, opened, save_checkpoint
from bert_tf.formats import huggingface, keras_hub
from bert_tf.tokenization import load_vocab

BERT_TF = "bert_tf"
OUTPUT_FORMATS = (BERT_TF, huggingface.HUGGINGFACE, keras_hub.KERAS_HUB)


def _hint(source):
    """The model type the source records itself (a HF `architectures`, a KerasHub task), or None."""
    if source.format == huggingface.HUGGINGFACE:
        return huggingface.model_type_of(source.config)
    if source.format == keras_hub.KERAS_HUB and OUTPUT_WEIGHTS in source.shapes:
        return model_types.CLASSIFIER  # read_preset reads no other task's head than a BertTextClassifier's
    return None


def _write_bert_tf(weights, config, directory, vocab_file):
    """bert_model.ckpt (config embedded), bert_config.json and vocab.txt in `directory`; the encoder must load
    from it."""
    prefix = os.path.join(directory, "bert_model.ckpt")
    save_checkpoint(weights, prefix, config)
    from bert_tf.modeling.encoder import BertEncoder  # the check needs a model

    load_checkpoint(BertEncoder(config), prefix)
    run_directory.write_config(directory, config)
    if vocab_file:
        with open(vocab_file, "rb") as f:
            atomic_io.write_file(os.path.join(directory, "vocab.txt"), f.read())
    return "bert_tf checkpoint"


def convert(path, output_dir, output_format, config, model_type=None, vocab_file=None, do_lower_case=True):
    """Converts the checkpoint at `path` (any `open_checkpoint` format, or an opened CheckpointSource) into
    `output_dir` in `output_format` (one of OUTPUT_FORMATS) and returns (model type, what was written: a class
    name or "bert_tf checkpoint").

    config: the model's BertConfig. model_type: one of `model_types.convertible()`, or None to infer it from the
      checkpoint's heads (`model_types.infer`). vocab_file: the vocab.txt (required for the
      HuggingFace and KerasHub formats, whose tokenizers need it). do_lower_case: the tokenizer's casing.
    ValueError (nothing written) for a head the format has no equivalent of, a missing head, labels that do
    not fit the head, weights or a vocab_file that do not fit `config`; OSError when output_dir exists and is
    not empty.
    """
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"output format {output_format!r}: expected one of {', '.join(OUTPUT_FORMATS)}")
    if output_format != BERT_TF and not vocab_file:
        raise ValueError(f"a {output_format} model needs the tokenizer's vocab.txt: pass vocab_file")
    atomic_io.check_new_directory(output_dir)  # before any weight is read
    source = opened(path)
    check_fits(config, source)
    if source.head is not None and model_type != model_types.ENCODER:
        raise ValueError(f"{source.path} has a {source.head['task_head']} task head ({source.head}), which only "
                         "bert_tf has: pass model_type=encoder to convert its encoder alone")
    model_type = model_type or model_types.infer(source.shapes, _hint(source), source.path)
    names = model_types.model_names(model_type, source.shapes, path=source.path)
    if vocab_file:
        config.check_vocab_size(len(load_vocab(vocab_file)), vocab_file)
    dropped = sorted(set(source.shapes) - set(names))
    if dropped:
        logging.info("Not part of a %s model, not converted: %s", model_type, ", ".join(dropped))
    weights = {name: source.read(name) for name in names}
    labels = source.labels if "label_list" in model_types.get(model_type).options else None
    if labels is not None and len(labels) != source.shapes[OUTPUT_WEIGHTS][0]:
        raise ValueError(f"{len(labels)} labels ({', '.join(labels[:5])}) for the head of {source.path}, which has "
                         f"{source.shapes[OUTPUT_WEIGHTS][0]} outputs")
    with atomic_io.new_directory(output_dir) as directory:
        if output_format == BERT_TF:
            written = _write_bert_tf(weights, config, directory, vocab_file)
        elif output_format == huggingface.HUGGINGFACE:
            written = huggingface.write_huggingface(weights, config, model_type, directory, vocab_file, labels,
                                                    do_lower_case)
        else:
            written = keras_hub.write_preset(weights, config, model_type, directory, vocab_file, do_lower_case)
        if labels and output_format != huggingface.HUGGINGFACE:  # HF's are config.json's id2label
            run_directory.write_labels(directory, labels)  # bert_tf and KerasHub folders: labels.txt
    logging.info("Converted the %s model %s (%s, %d tensors) into %s: %s", model_type, source.path, source.format,
                 len(names), output_dir, written)
    return model_type, written
