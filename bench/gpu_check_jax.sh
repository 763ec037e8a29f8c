#!/usr/bin/env bash
# The prepared JAX accelerator check of issue 42 (bench/gpu_check_jax.py), for a host with JAX and no TensorFlow
# and no network: installs the wheels in .whl/ (Keras and its small dependencies) into /tmp/site, then runs the
# check with KERAS_BACKEND=jax within 8 minutes. `--dry_run`: the tiny config on the CPU (tests run it).
# `--download_wheels` (here, with pip access): puts those wheels for CPython 3.12 / manylinux x86_64 into .whl/.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--download_wheels" ]; then
  for wheel in keras==3.15.1 namex==0.1.0 optree==0.20.0; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      --platform any -d .whl "$wheel"
  done
  exit 0
fi
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export KERAS_BACKEND=jax
exec timeout 480 python3 -m bench.gpu_check_jax "$@"
