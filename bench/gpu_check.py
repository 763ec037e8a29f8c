"""One prepared GPU check of bert_tf (issue 21): BERT-Base pretraining steps and encoder inference on a CUDA
GPU, one JSON line per shape, in under 8 minutes; run by bench/gpu_check.sh.

    bash bench/gpu_check.sh             # on a machine with a CUDA GPU
    bash bench/gpu_check.sh --dry_run   # anywhere: the tiny config, tiny shapes, on the CPU (what a test runs)

Shapes: the pretraining step (masked LM + next sentence, the real `loop.Trainer` step, AdamW, mixed bfloat16,
XLA on) at batch 64 and 256 x sequence 128 and 512 (20 / 80 predictions, the original's ratio), and encoder
inference (bfloat16, XLA on) at batch 1 and 64 x sequence 128. Each shape: `--warmup` untimed calls (XLA
compiles there), then `--steps` timed ones; the line gives their median, examples/s, tokens/s and MFU =
model FLOPs/s (`flops.training_flops_per_example`; inference a third of it) / the device's peak: the published
dense bfloat16 peak of the GPU when its name is in PUBLISHED_BF16_PEAKS, and always the matmul peak measured
here (`flops.measure_peak_flops`), so both MFUs are given. A shape that fails (e.g. out of memory) prints its
error in its line and the others go on.
"""

import argparse
import json
import sys

import numpy as np

# Dense (no sparsity) bfloat16 tensor-core peaks, FLOP/s, from the vendors' data sheets (SXM parts).
PUBLISHED_BF16_PEAKS = {"H200": 989.4e12, "H100": 989.4e12, "A100": 312e12, "L4": 121e12, "L40S": 362e12}
TRAIN_SHAPES = ((64, 128), (256, 128), (64, 512), (256, 512))
INFERENCE_SHAPES = ((1, 128), (64, 128))
DRY_TRAIN_SHAPES = ((2, 16), (4, 32))
DRY_INFERENCE_SHAPES = ((1, 16),)


def published_peak(device_name):
    """(GPU name, its published dense bf16 peak FLOP/s) for a device description, or (None, None)."""
    for name, peak in PUBLISHED_BF16_PEAKS.items():
        if name in device_name.upper():
            return name, peak
    return None, None


def parse_arguments(argv, description):
    """The flags of this check and of gpu_check_jax.py: --dry_run, --warmup, --steps."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--dry_run", action="store_true", help="tiny config and shapes on the CPU")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per shape (XLA compiles there)")
    parser.add_argument("--steps", type=int, default=5, help="timed calls per shape (their median is reported)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_arguments(argv, __doc__.split("\n\n")[0])

    import tensorflow as tf

    from bench.bench_models import bert_tf_step, load_config, random_inputs
    from bench.harness import timed_calls
    from bert_tf.config import BertConfig
    from bert_tf.training import flops as model_flops

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus and not args.dry_run:
        sys.exit("gpu_check: TensorFlow sees no GPU (tf.config.list_physical_devices('GPU') is empty); "
                 "--dry_run runs the tiny check on the CPU")
    device = "/CPU:0" if args.dry_run else "/GPU:0"
    name = "CPU" if args.dry_run else tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")
    config, _ = load_config("tiny" if args.dry_run else "base")
    bert_config = BertConfig.from_dict(config)
    gpu, published = published_peak(name)
    measured = model_flops.measure_peak_flops(device, "bfloat16")
    train_shapes, inference_shapes = ((DRY_TRAIN_SHAPES, DRY_INFERENCE_SHAPES) if args.dry_run
                                      else (TRAIN_SHAPES, INFERENCE_SHAPES))
    cases = [("train", b, t) for b, t in train_shapes] + [("inference", b, t) for b, t in inference_shapes]
    for task, batch_size, seq_length in cases:
        num_predictions = max(1, round(0.15625 * seq_length))  # 20 at 128, 80 at 512
        line = {"task": task, "batch": batch_size, "seq": seq_length, "dtype": "bfloat16", "xla": True,
                "device": name, "config": "tiny" if args.dry_run else "base"}
        try:
            case = {"task": task, "dtype": "bfloat16", "xla": True, "batch_size": batch_size}
            features = random_inputs(batch_size, seq_length, num_predictions, config["vocab_size"])
            with tf.device(device):
                seconds = float(np.median(timed_calls(bert_tf_step(case, bert_config, features), args.warmup,
                                                      args.steps)))
            flops = model_flops.training_flops_per_example(bert_config, seq_length, num_predictions)
            if task == "inference":
                flops = model_flops.training_flops_per_example(bert_config, seq_length, 0) / 3
            achieved = flops * batch_size / seconds
            line.update(ms=round(seconds * 1e3, 3), examples_per_s=round(batch_size / seconds, 2),
                        tokens_per_s=round(batch_size * seq_length / seconds, 1),
                        mfu_published=round(achieved / published, 4) if published else None,
                        published_peak=published, published_peak_of=gpu,
                        mfu_measured=round(achieved / measured, 4), measured_peak=round(measured, 1))
        except Exception as e:  # one shape failing (out of memory, say) must not lose the others
            line["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
