#!/usr/bin/env bash
# bert_tf's real jobs on a GPU (issue 57, scope 6: bench/gpu_jobs.py), for a host with JAX (CUDA 13), PyTorch and
# transformers, no TensorFlow and no network: installs the wheels in .whl/ (Keras, Grain, tensorboardX,
# google-crc32c, datasets and what they need that the host lacks) into its python, then runs the jobs with
# KERAS_BACKEND=jax within 9 minutes. `--prepare` (here, with pip access): those wheels for CPython 3.12 /
# manylinux x86_64 into .whl/ and the data into .gpu_jobs/ (carry both). `--dry_run`: tiny shapes on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
# The versions of this project's Python (datasets: the HF Trainer peer venv's, tools/peer_venvs.py).
WHEELS="keras==3.15.1 namex==0.1.0 optree==0.20.0 grain==0.2.18 array-record==0.8.6 portpicker==1.6.0
  tensorboardX==2.6.5 google-crc32c==1.9.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19"
if [ "${1:-}" = "--prepare" ]; then
  rm -rf .whl && mkdir -p .whl
  for wheel in $WHEELS; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      --platform any -d .whl "$wheel"
  done
  exec python3 -m bench.gpu_jobs --prepare
fi
if [ "${1:-}" != "--dry_run" ] && compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check .whl/*.whl
fi
export KERAS_BACKEND=jax
exec timeout 540 python3 -m bench.gpu_jobs "$@"
