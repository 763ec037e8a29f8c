"""bert_tf: a faithful TensorFlow 2 / Keras 3 port of BERT."""
import glob
import os

import setuptools

# Every module of bert_tf/cli/ with a console() is a command: run_classifier.py -> bert-tf-run-classifier.
COMMANDS = sorted(os.path.basename(path)[:-3] for path in glob.glob("bert_tf/cli/*.py")
                  if "\ndef console():" in open(path, encoding="utf-8").read())

setuptools.setup(
    name="bert_tf",
    version="0.1.0",
    description="BERT (Devlin et al., 2019) for TensorFlow 2 / Keras 3: pretraining, fine-tuning, serving.",
    packages=setuptools.find_packages(include=["bert_tf", "bert_tf.*"]),
    package_data={"bert_tf.configs": ["*.json"]},
    entry_points={"console_scripts": [f"bert-tf-{name.replace('_', '-')} = bert_tf.cli.{name}:console"
                                      for name in COMMANDS]},
    python_requires=">=3.10",
    # Without a backend: `pip install ".[tensorflow]"` (the README's install: TensorFlow's backend, tf.data, the
    # SavedModel export) or `pip install ".[jax]"` (every command but the export, no TensorFlow: README, Backends).
    install_requires=[
        "keras>=3.15,<4",
        "absl-py",
        "safetensors",
        "h5py",  # KerasHub presets (bert_tf/formats/keras_hub.py); Keras depends on it too
        "numpy",
        "google-crc32c>=1.5",  # CRC32C of the checkpoint bundles written without TensorFlow (formats/tensor_bundle.py)
        "tensorboardX>=2.6",  # TensorBoard summaries without TensorFlow (training/summaries.py)
    ],
    extras_require={
        # 2.20: tensorflow-tpu's newest (make test-tf2.20 runs the quick tier on it)
        "tensorflow": ["tensorflow>=2.20,<2.22", "tensorflow-text>=2.20,<2.22"],
        # grain: the input without TensorFlow (bert_tf/training/inputs.py); a GPU or TPU host's own jax plugin
        # (jax[cuda13], jax[tpu]) goes beside it
        "jax": ["jax>=0.6", "grain>=0.2.18,<0.3"],
        "tfds": ["tensorflow-datasets"],
        # jieba: create_pretraining_data.py --chinese_word_segmenter=jieba; nltk: the CMRC 2018 evaluation
        "chinese": ["jieba==0.42.1", "nltk==3.9.1"],
        # ruff: `make lint`; jax: the models on the JAX backend (tests/test_backends.py; tools/peer_venvs.JAX);
        # grain: the input without TensorFlow (bert_tf/data/pretraining/grain_input.py)
        "test": ["pytest", "pytest-xdist", "tensorflow-datasets", "ruff==0.17.5", "jax[cpu]==0.10.2", "jieba==0.42.1",
                 "nltk==3.9.1", "grain==0.2.18"],
        "bench": ["tokenizers"],  # HuggingFace tokenizers, for bench/bench_tokenizers.py only
    },
)
