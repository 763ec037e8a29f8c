"""Every output of bert_tf's models on real MiniLM weights, computed on the Keras backend of the process, so
that tests/test_backends.py can compare the backends output by output:

    python -m tests.helpers.backend_outputs make DIR        # TensorFlow: one checkpoint per model in DIR
    KERAS_BACKEND=jax python -m tests.helpers.backend_outputs run DIR OUT.npz

`make` loads the MiniLM encoder (its HuggingFace directory) into each task model, whose head is seeded
random, and saves it as a bert_tf checkpoint; `run` loads each checkpoint into the same model class on this
backend and writes {model/output path: float32 array} of one inference call on real text (the encoder's
every layer and attention probabilities included), and the pooled output of the encoder loaded straight from
the HuggingFace directory (`hf_encoder/pooled_output`).
"""

import os
import sys

import keras
import numpy as np

from bert_tf.checkpoints import config_of, load_checkpoint, save_checkpoint
from bert_tf.data.packing import pack_tokens
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder
from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice
from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from bert_tf.tokenization import FullTokenizer
from tools.pypi_data import minilm_dir

SEQ, CHOICES = 24, 2
MODELS = {
    "encoder": BertEncoder,
    "pretrainer": BertPretrainer,
    "classifier": lambda config: BertClassifier(config, 3),
    "classifier_bilstm": lambda config: BertClassifier(config, 3, task_head="bilstm", bilstm_size=8, bilstm_layers=1),
    "token_classifier": lambda config: BertTokenClassifier(config, 5),
    "span_labeler": BertSpanLabeler,
    "multiple_choice": BertMultipleChoice,
    "embedder": BertSentenceEmbedder,
}


def text_inputs():
    """Encoder inputs int32 [6, SEQ] of real sentence pairs (State of the Union lines, the MiniLM vocab)."""
    from tests.helpers.tokenizer_data import corpus_lines

    tokenizer = FullTokenizer(os.path.join(minilm_dir(), "vocab.txt"))
    lines = [line for line in corpus_lines() if len(line.split()) > 3][:12]
    packed = [pack_tokens(tokenizer.tokenize(a), tokenizer.tokenize(b), SEQ, tokenizer)
              for a, b in zip(lines[::2], lines[1::2])]
    return {name: np.asarray([getattr(p, name) for p in packed], np.int32)
            for name in ("input_ids", "input_mask", "segment_ids")}


def model_inputs(name, inputs):
    """What model `name` is called with."""
    if name == "pretrainer":
        positions = np.tile(np.array([[1, 3, 5]], np.int32), (len(inputs["input_ids"]), 1))
        return {**inputs, "masked_lm_positions": positions}
    if name == "multiple_choice":
        return {k: v.reshape(-1, CHOICES, SEQ) for k, v in inputs.items()}
    return inputs


def call(name, model, inputs):
    if name == "encoder":
        return model(inputs, training=False, output_attention_probs=True)
    return model(inputs, training=False)


def make(directory):
    """One bert_tf checkpoint per model in `directory`: MiniLM's encoder, a seeded random head."""
    config, inputs = config_of(minilm_dir()), text_inputs()
    for seed, (name, make_model) in enumerate(MODELS.items()):
        keras.utils.set_random_seed(seed)
        model = make_model(config)
        call(name, model, model_inputs(name, inputs))
        load_checkpoint(model, minilm_dir())
        save_checkpoint(model, os.path.join(directory, name, "model.ckpt"), config, model.head_options()
                        if hasattr(model, "head_options") else None)


def run(directory, output_file):
    """{model/output path: float32 array} of every model of `directory` on this backend, into `output_file`."""
    config, inputs, outputs = config_of(minilm_dir()), text_inputs(), {}
    for name, make_model in MODELS.items():
        model = make_model(config)
        call(name, model, model_inputs(name, inputs))
        report = load_checkpoint(model, os.path.join(directory, name, "model.ckpt"))
        assert not report.missing, (name, report.missing)
        for path, value in keras.tree.flatten_with_path(call(name, model, model_inputs(name, inputs))):
            key = "/".join([name, *map(str, path)])
            outputs[key] = keras.ops.convert_to_numpy(keras.ops.cast(value, "float32"))
    encoder = BertEncoder(config)
    encoder(inputs)
    load_checkpoint(encoder, minilm_dir())
    outputs["hf_encoder/pooled_output"] = keras.ops.convert_to_numpy(encoder(inputs)["pooled_output"])
    np.savez(output_file, **outputs)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        run(sys.argv[2], sys.argv[3])
