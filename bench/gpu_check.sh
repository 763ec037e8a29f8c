#!/usr/bin/env bash
# The prepared GPU check of issue 21 (bench/gpu_check.py): BERT-Base pretraining steps and inference on a CUDA
# GPU, one JSON line per shape, within 8 minutes. `--dry_run`: the tiny config on the CPU (tests run it).
set -euo pipefail
cd "$(dirname "$0")/.."
exec timeout 480 python3 -m bench.gpu_check "$@"
