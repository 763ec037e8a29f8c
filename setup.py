"""bert_tf: a faithful TensorFlow 2 / Keras 3 port of BERT."""
import setuptools

setuptools.setup(
    name="bert_tf",
    version="0.1.0",
    description="BERT (Devlin et al., 2019) for TensorFlow 2 / Keras 3: pretraining, fine-tuning, serving.",
    packages=setuptools.find_packages(include=["bert_tf", "bert_tf.*"]),
    python_requires=">=3.10",
    install_requires=[
        "tensorflow==2.21.*",
        "tensorflow-text==2.21.*",
        "keras>=3.15,<4",
        "absl-py",
        "safetensors",
        "numpy",
    ],
    extras_require={
        "tfds": ["tensorflow-datasets"],
        "test": ["pytest", "pytest-xdist", "tensorflow-datasets", "ruff==0.17.5"],  # ruff: `make lint`
        "bench": ["tokenizers"],  # HuggingFace tokenizers, for bench/bench_tokenizers.py only
    },
)
