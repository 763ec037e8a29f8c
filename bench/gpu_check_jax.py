"""One prepared check of bert_tf on a JAX accelerator (issue 42), for a host with JAX and no TensorFlow (the
device tool's H200: CUDA 13, Python 3.12, JAX, no network); run by bench/gpu_check_jax.sh, which installs the
wheels it carries (Keras and its small dependencies) first. One JSON line per shape, then a comparison with
NVIDIA's published figures, in under 8 minutes.

    bash bench/gpu_check_jax.sh --download_wheels   # here, with pip access: Keras's wheels into .whl/
    bash bench/gpu_check_jax.sh                     # there: the check
    bash bench/gpu_check_jax.sh --dry_run           # anywhere: the tiny config, tiny shapes, on the CPU

It measures: the device's bf16 matmul peak (`flops.measure_jax_peak_flops`); the pretraining step of
BERT-Base and BERT-Large (masked LM + next sentence, the JAX loop's own update `jax_step.TrainStep`: AdamW,
gradients clipped to norm 1.0, mixed bfloat16) at sequence 128 and 512 (20 / 80 predictions), at the largest
batch of BATCHES that runs (an out-of-memory batch is reported and the next smaller tried); BERT-Base encoder
inference (bfloat16) at batch 1, 8 and 64 x sequence 128. Each shape: `--warmup` untimed calls (XLA compiles
there), then `--steps` timed ones; the line gives their median, examples/s, tokens/s and MFU against the
measured peak and, when the device is in gpu_check.PUBLISHED_BF16_PEAKS, the published one.

NVIDIA's figures (their BERT for TensorFlow 2 results): BERT-Large pretraining on 8x A100-80GB, mixed
precision, 3,799 sequences/s at 128 and 650 at 512 (per GPU: an eighth); BERT-Base inference on one A100, fp16,
batch 8, sequence 128: 1,786 sequences/s. The last line sets this device's figures beside them.
"""

import json
import sys

import numpy as np

from bench.harness import timed_calls

TRAIN_SHAPES = (("base", 128), ("base", 512), ("large", 128), ("large", 512))
BATCHES = {128: (512, 256, 128, 64, 32), 512: (128, 64, 32, 16, 8)}
INFERENCE_BATCHES = (1, 8, 64)
DRY_TRAIN_SHAPES = (("tiny", 16), ("tiny", 32))
DRY_BATCHES = {16: (8, 4), 32: (4, 2)}
NVIDIA = {("large", 128): 3799 / 8, ("large", 512): 650 / 8, ("inference", 8, 128): 1786.0}


def shape_call(task, config, batch_size, seq_length):
    """bench_models.py's bert_tf-on-JAX callable of this shape (mixed bfloat16): the JAX loop's update
    (`jax_step.TrainStep`) or the encoder's forward pass; a fresh model each time, so a batch that did not fit
    leaves nothing behind."""
    from bench.bench_models import bert_tf_jax_step, random_inputs

    features = random_inputs(batch_size, seq_length, predictions(seq_length), config.vocab_size)
    return bert_tf_jax_step({"task": task, "dtype": "bfloat16"}, config, features)


def predictions(seq_length):
    return max(1, round(0.15625 * seq_length))  # 20 at 128, 80 at 512: the original's ratio


def measure(line, config, batch_size, seq_length, flops, args, peaks):
    """Fills `line` with the timing of `shape_call` at this shape (median of the timed calls) and its MFUs."""
    call = shape_call(line["task"], config, batch_size, seq_length)
    seconds = float(np.median(timed_calls(call, args.warmup, args.steps)))
    achieved = flops * batch_size / seconds
    line.update(batch=batch_size, ms=round(seconds * 1e3, 3), examples_per_s=round(batch_size / seconds, 2),
                tokens_per_s=round(batch_size * seq_length / seconds, 1),
                mfu_measured=round(achieved / peaks["measured"], 4),
                mfu_published=round(achieved / peaks["published"], 4) if peaks["published"] else None)


def emit(line):
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def main(argv=None):
    from bench.gpu_check import parse_arguments, published_peak
    args = parse_arguments(argv, __doc__.split("\n\n")[0])

    import jax
    import keras

    from bench.bench_models import load_config
    from bert_tf.config import BertConfig
    from bert_tf.training.flops import measure_jax_peak_flops, training_flops_per_example

    if keras.backend.backend() != "jax":
        sys.exit("gpu_check_jax: set KERAS_BACKEND=jax (bench/gpu_check_jax.sh does)")
    device = jax.devices()[0]
    if device.platform == "cpu" and not args.dry_run:
        sys.exit("gpu_check_jax: JAX sees no accelerator (jax.devices() is CPU only); --dry_run runs the tiny "
                 "check on the CPU")
    name = getattr(device, "device_kind", device.platform)
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    gpu, published = published_peak(name)
    peaks = {"measured": measure_jax_peak_flops("bfloat16"), "published": published}
    emit({"device": name, "platform": device.platform, "jax": jax.__version__, "keras": keras.__version__,
          "measured_bf16_peak": round(peaks["measured"], 1), "published_bf16_peak": published,
          "published_peak_of": gpu})
    configs = {key: BertConfig.from_dict(load_config(key)[0]) for key in ("tiny", "base", "large")}
    best = {}
    for config_name, seq_length in DRY_TRAIN_SHAPES if args.dry_run else TRAIN_SHAPES:
        config = configs[config_name]
        flops = training_flops_per_example(config, seq_length, predictions(seq_length))
        for batch_size in (DRY_BATCHES if args.dry_run else BATCHES)[seq_length]:
            line = {"task": "train", "config": config_name, "seq": seq_length, "batch": batch_size,
                    "dtype": "bfloat16"}
            try:
                measure(line, config, batch_size, seq_length, flops, args, peaks)
            except Exception as e:  # out of memory: the next smaller batch
                line["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
                emit(line)
                continue
            emit(line)
            best[config_name, seq_length] = line["examples_per_s"]
            break
    inference_config = "tiny" if args.dry_run else "base"
    seq_length = 16 if args.dry_run else 128
    flops = training_flops_per_example(configs[inference_config], seq_length, 0) / 3
    for batch_size in INFERENCE_BATCHES:
        line = {"task": "inference", "config": inference_config, "seq": seq_length, "dtype": "bfloat16"}
        try:
            measure(line, configs[inference_config], batch_size, seq_length, flops, args, peaks)
            best["inference", batch_size, seq_length] = line["examples_per_s"]
        except Exception as e:
            line.update(batch=batch_size, error=f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
        emit(line)
    comparison = {f"{k[0]} {k[1]}x{k[2]}" if k[0] == "inference" else f"train {k[0]} seq {k[1]}":
                  {"this_device_per_s": best.get(k), "nvidia_per_gpu_per_s": round(v, 1),
                   "ratio": round(best[k] / v, 3) if k in best else None} for k, v in NVIDIA.items()}
    emit({"comparison_with_nvidia": comparison, "tensorflow_imported": "tensorflow" in sys.modules,
          "shapes_measured": len(best), "dry_run": args.dry_run})


if __name__ == "__main__":
    main()
