"""Runs KerasHub in its own pinned venv (never in bert_tf's Python): loads presets, computes their outputs, and
makes presets with KerasHub itself, for tests/test_interop.py.

    python keras_hub_client.py outputs PRESET_DIR INPUTS.npz OUTPUT.npz
        INPUTS.npz: int32 `token_ids`, `segment_ids`, `padding_mask` [B, T]. Writes float32
        `sequence_output` [B, T, H] and `pooled_output` [B, H] of `BertBackbone.from_preset(PRESET_DIR)`,
        and `logits` [B, C] of `BertTextClassifier.from_preset(PRESET_DIR)` when the preset has task.json.
    python keras_hub_client.py make HF_DIR PRESET_DIR [NUM_CLASSES]
        `BertBackbone.from_preset(HF_DIR)` and `BertTokenizer.from_preset(HF_DIR)` (KerasHub's own
        HuggingFace converters) saved with `save_to_preset`; with NUM_CLASSES, a `BertTextClassifier` on them
        (random head, seed 0) instead.

Only keras_hub, keras, numpy and the standard library are imported.
"""

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402


def outputs(preset, inputs_file, output_file):
    inputs = dict(np.load(inputs_file))
    backbone = keras_hub.models.BertBackbone.from_preset(preset)
    result = {name: np.asarray(value, np.float32) for name, value in backbone(inputs).items()}
    if os.path.isfile(os.path.join(preset, "task.json")):
        classifier = keras_hub.models.BertTextClassifier.from_preset(preset, preprocessor=None)
        result["logits"] = np.asarray(classifier(inputs), np.float32)
    np.savez(output_file, **result)


def make(hf_dir, preset, num_classes=None):
    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.BertBackbone.from_preset(hf_dir)
    tokenizer = keras_hub.models.BertTokenizer.from_preset(hf_dir)
    if num_classes is None:
        backbone.save_to_preset(preset)
        tokenizer.save_to_preset(preset)
        return
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=128)
    keras_hub.models.BertTextClassifier(backbone=backbone, num_classes=int(num_classes),
                                        preprocessor=preprocessor).save_to_preset(preset)


if __name__ == "__main__":
    {"outputs": outputs, "make": make}[sys.argv[1]](*sys.argv[2:])
