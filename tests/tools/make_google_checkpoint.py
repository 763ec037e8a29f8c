"""Converts a HuggingFace BERT directory into a checkpoint directory laid out like Google's released ones.

Input: `config.json`, `model.safetensors` (PyTorch `[out, in]` Linear weights, optional `bert.` prefix) and
`vocab.txt`. Output directory:

    bert_config.json                     Google's field names
    vocab.txt                            copied
    bert_model.ckpt.index                TF1 name-based checkpoint: `bert/embeddings/word_embeddings`,
    bert_model.ckpt.data-00000-of-00001  `bert/encoder/layer_N/attention/self/query/kernel` [H_in, H_out], ...,
                                         `cls/predictions/...`, `cls/seq_relationship/...` when the HF file has
                                         the pretraining heads; with optimizer slots also `<name>/adam_m`,
                                         `<name>/adam_v` and an int64 scalar `global_step`.

The name map below is written independently of bert_tf (which this file must never import), so that tests
using it check bert_tf's Google-checkpoint loader against a second implementation.

    python tests/tools/make_google_checkpoint.py HF_DIR OUTPUT_DIR [--no_optimizer_slots]
"""

import argparse
import json
import os
import re
import shutil
import tempfile

import numpy as np
from safetensors.numpy import load_file

CHECKPOINT_NAME = "bert_model.ckpt"

_L = r"encoder\.layer\.(\d+)\."
_G = r"bert/encoder/layer_\1/"
# (HF name regex, Google name template, transpose). HF names are matched after dropping a "bert." prefix;
# old HF files spell LayerNorm weight/bias as gamma/beta. Dense kernels are transposed ([out,in] -> [in,out]);
# embedding tables and NSP's output_weights [2, H] keep the PyTorch layout.
_RULES = [
    (r"embeddings\.word_embeddings\.weight", "bert/embeddings/word_embeddings", False),
    (r"embeddings\.position_embeddings\.weight", "bert/embeddings/position_embeddings", False),
    (r"embeddings\.token_type_embeddings\.weight", "bert/embeddings/token_type_embeddings", False),
    (r"embeddings\.LayerNorm\.(?:weight|gamma)", "bert/embeddings/LayerNorm/gamma", False),
    (r"embeddings\.LayerNorm\.(?:bias|beta)", "bert/embeddings/LayerNorm/beta", False),
    (_L + r"attention\.self\.(query|key|value)\.weight", _G + r"attention/self/\2/kernel", True),
    (_L + r"attention\.self\.(query|key|value)\.bias", _G + r"attention/self/\2/bias", False),
    (_L + r"attention\.output\.dense\.weight", _G + "attention/output/dense/kernel", True),
    (_L + r"attention\.output\.dense\.bias", _G + "attention/output/dense/bias", False),
    (_L + r"attention\.output\.LayerNorm\.(?:weight|gamma)", _G + "attention/output/LayerNorm/gamma", False),
    (_L + r"attention\.output\.LayerNorm\.(?:bias|beta)", _G + "attention/output/LayerNorm/beta", False),
    (_L + r"intermediate\.dense\.weight", _G + "intermediate/dense/kernel", True),
    (_L + r"intermediate\.dense\.bias", _G + "intermediate/dense/bias", False),
    (_L + r"output\.dense\.weight", _G + "output/dense/kernel", True),
    (_L + r"output\.dense\.bias", _G + "output/dense/bias", False),
    (_L + r"output\.LayerNorm\.(?:weight|gamma)", _G + "output/LayerNorm/gamma", False),
    (_L + r"output\.LayerNorm\.(?:bias|beta)", _G + "output/LayerNorm/beta", False),
    (r"pooler\.dense\.weight", "bert/pooler/dense/kernel", True),
    (r"pooler\.dense\.bias", "bert/pooler/dense/bias", False),
    (r"cls\.predictions\.transform\.dense\.weight", "cls/predictions/transform/dense/kernel", True),
    (r"cls\.predictions\.transform\.dense\.bias", "cls/predictions/transform/dense/bias", False),
    (r"cls\.predictions\.transform\.LayerNorm\.(?:weight|gamma)", "cls/predictions/transform/LayerNorm/gamma", False),
    (r"cls\.predictions\.transform\.LayerNorm\.(?:bias|beta)", "cls/predictions/transform/LayerNorm/beta", False),
    # HF ties cls.predictions.decoder.bias to cls.predictions.bias; a file may hold either or both.
    (r"cls\.predictions\.(?:decoder\.)?bias", "cls/predictions/output_bias", False),
    (r"cls\.seq_relationship\.weight", "cls/seq_relationship/output_weights", False),
    (r"cls\.seq_relationship\.bias", "cls/seq_relationship/output_bias", False),
]
# position_ids is a buffer; the MLM decoder weight is tied to the word embeddings (Google stores it once).
_IGNORED = re.compile(r"embeddings\.position_ids|cls\.predictions\.decoder\.weight")

_GOOGLE_CONFIG_DEFAULTS = {
    "attention_probs_dropout_prob": 0.1, "hidden_act": None, "hidden_dropout_prob": 0.1, "hidden_size": None,
    "initializer_range": 0.02, "intermediate_size": None, "max_position_embeddings": None,
    "num_attention_heads": None, "num_hidden_layers": None, "type_vocab_size": None, "vocab_size": None,
}


def google_config(hf_config):
    """Returns Google's bert_config.json dict (11 fields) from a HF BERT config.json dict."""
    missing = [k for k, v in _GOOGLE_CONFIG_DEFAULTS.items() if v is None and k not in hf_config]
    if missing:
        raise ValueError(f"config.json lacks {missing}; it has {sorted(hf_config)}")
    return {k: hf_config.get(k, default) for k, default in _GOOGLE_CONFIG_DEFAULTS.items()}


def google_variables(hf_tensors):
    """Maps HF tensors {name: array} to Google's {name: float32 array}; raises on unmapped tensors."""
    variables, unmapped = {}, []
    for hf_name, value in sorted(hf_tensors.items()):
        name = hf_name[len("bert."):] if hf_name.startswith("bert.") else hf_name
        if _IGNORED.fullmatch(name):
            continue
        for pattern, template, transpose in _RULES:
            match = re.fullmatch(pattern, name)
            if match:
                google_name = match.expand(template)
                value = np.ascontiguousarray(value.T if transpose else value, dtype=np.float32)
                if google_name in variables and not np.array_equal(variables[google_name], value):
                    raise ValueError(f"{hf_name} maps to {google_name}, already set to a different value")
                variables[google_name] = value
                break
        else:
            unmapped.append(hf_name)
    if unmapped:
        raise ValueError(f"no Google name for HF tensors {unmapped}")
    return variables


def _slot_values(shape, offset):
    """Deterministic, non-zero float32 values of `shape`, different for each variable `offset`."""
    size = int(np.prod(shape))
    return ((np.arange(size, dtype=np.float32) + offset) % 97 + 1).reshape(shape) * np.float32(1e-5)


def make_google_checkpoint(hf_dir, output_dir, with_optimizer_slots=True):
    """Writes a Google-format BERT checkpoint directory from the HF BERT directory `hf_dir`.

    `output_dir` must not exist or be empty; it is written in a temporary sibling directory, then renamed.
    Returns the checkpoint prefix `output_dir/bert_model.ckpt`.
    """
    import tensorflow as tf  # here, so that `--help` and the name map stay cheap to import

    output_dir = os.path.abspath(output_dir)
    if os.path.exists(output_dir) and os.listdir(output_dir):
        raise ValueError(f"output_dir={output_dir!r} exists and is not empty")
    with open(os.path.join(hf_dir, "config.json")) as f:
        config = google_config(json.load(f))
    variables = google_variables(load_file(os.path.join(hf_dir, "model.safetensors")))
    if with_optimizer_slots:
        for i, (name, value) in enumerate(sorted(variables.items())):
            variables[name + "/adam_m"] = _slot_values(value.shape, 2 * i)
            variables[name + "/adam_v"] = _slot_values(value.shape, 2 * i + 1) ** 2
        variables["global_step"] = np.array(1000, dtype=np.int64)

    parent = os.path.dirname(output_dir)
    os.makedirs(parent, exist_ok=True)
    tmp_dir = tempfile.mkdtemp(prefix=".tmp-google-ckpt-", dir=parent)
    try:
        os.chmod(tmp_dir, 0o755)  # mkdtemp makes it private; the result is an ordinary directory
        with open(os.path.join(tmp_dir, "bert_config.json"), "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")
        shutil.copyfile(os.path.join(hf_dir, "vocab.txt"), os.path.join(tmp_dir, "vocab.txt"))
        names = sorted(variables)
        # SaveV2 is the op tf.compat.v1.train.Saver runs: a name-based checkpoint whose keys are exactly
        # these names (no object graph), as in Google's releases; eager, so no graph constants or 2 GB limit.
        tf.raw_ops.SaveV2(prefix=os.path.join(tmp_dir, CHECKPOINT_NAME), tensor_names=names,
                          shape_and_slices=[""] * len(names), tensors=[variables[n] for n in names])
        if os.path.exists(output_dir):
            os.rmdir(output_dir)
        os.rename(tmp_dir, output_dir)
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    return os.path.join(output_dir, CHECKPOINT_NAME)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("hf_dir", help="HF BERT directory: config.json, model.safetensors, vocab.txt")
    parser.add_argument("output_dir", help="directory to create (must not exist or be empty)")
    parser.add_argument("--no_optimizer_slots", action="store_true",
                        help="omit <name>/adam_m, <name>/adam_v and global_step")
    args = parser.parse_args()
    prefix = make_google_checkpoint(args.hf_dir, args.output_dir, with_optimizer_slots=not args.no_optimizer_slots)
    print(prefix)


if __name__ == "__main__":
    main()
