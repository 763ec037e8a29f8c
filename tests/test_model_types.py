"""The model-type registry (bert_tf/model_types.py): every registered type's entry agrees with its model
(head names, builder, inference from a checkpoint's names), the registry reads without Keras or TensorFlow,
and a new type is one `register` call beside its model: export builds and serves it with nothing else."""

import os
import subprocess
import sys

import numpy as np
import pytest

from bert_tf import model_types, save_checkpoint
from bert_tf.checkpoints import open_checkpoint
from bert_tf.export import serving_models
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder
from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice
from bert_tf.modeling.tasks.pretrainer import BertPretrainer
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from tests.helpers.model_inputs import random_inputs

MODELS = {"encoder": BertEncoder, "pretrainer": BertPretrainer, "classifier": lambda c: BertClassifier(c, 3),
          "ner": lambda c: BertTokenClassifier(c, 5), "squad": BertSpanLabeler, "multiple_choice": BertMultipleChoice,
          "embedder": BertSentenceEmbedder}
SHARED_HEAD = ("classifier", "ner", "multiple_choice")  # the original's unscoped output_weights / output_bias


def saved(model, config, directory):
    """`model` built and saved as a bert_tf checkpoint in `directory`: (its canonical names, the opened source)."""
    model.build()
    prefix = str(directory / "model.ckpt-1")
    save_checkpoint(model, prefix, config)
    return set(model.checkpoint_variables()), open_checkpoint(prefix)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_each_entry_agrees_with_its_model(name, tiny_config, tmp_path):
    assert set(MODELS) == set(model_types.REGISTRY)
    model = MODELS[name](tiny_config)
    names, source = saved(model, tiny_config, tmp_path)
    kind = model_types.get(name)
    assert set(model_types.model_names(name, names)) == names  # the encoder and every head variable
    built = kind.build(tiny_config, source, {"label_list": None})
    assert type(built) is type(model)
    if name in model_types.convertible():
        assert model_types.infer(names, hint=name) == name
        if name in SHARED_HEAD:
            with pytest.raises(ValueError, match=r"has a task head \(output_weights\) that 3 model types share: "
                                                 r"pass model_type=classifier\|ner\|multiple_choice"):
                model_types.infer(names)
        else:
            assert model_types.infer(names) == name
    assert (name in model_types.exportable()) == (kind.adapter is not None)


def test_the_registry_reads_without_keras_or_tensorflow():
    """...and a factory asked for before the module that provides it is imported names that module."""
    code = ("import sys; from bert_tf import model_types; from bert_tf.formats import huggingface, keras_hub; "
            "print(sorted(m for m in ('keras', 'tensorflow') if m in sys.modules), model_types.convertible()); "
            "model_types.get('ner').build(None, None, {})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.stdout.split("]")[0] == "[", done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        "ValueError: model type 'ner' has no build yet: bert_tf.modeling.tasks.feature_tagger provides it when "
        "imported (bert_tf.export.serving_models imports every built-in type's)")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_export_has_every_factory_provided_once(name):
    kind = model_types.get(name)
    with pytest.raises(ValueError, match=f"model type '{name}': its build is already provided"):
        model_types.provide(name, build=kind.build)
    state = "already provided" if kind.adapter else "not declared"
    with pytest.raises(ValueError, match=f"model type '{name}': its adapter is {state}"):
        model_types.provide(name, adapter=kind.build)
    with pytest.raises(ValueError, match="model type 'no_such_type': expected one of"):
        model_types.provide("no_such_type", build=kind.build)


class ToyScorer(BertClassifier):
    """A new task model whose head lives under its own scope, as a new task's head would."""

    def checkpoint_variables(self):
        variables = super().checkpoint_variables()
        return {("cls/toy/" + n if not n.startswith("bert/") else n): v for n, v in variables.items()}


def test_a_registered_type_is_exported_with_nothing_else_changed(tiny_config, tmp_path):
    toy = ToyScorer(tiny_config, 2)
    names, source = saved(toy, tiny_config, tmp_path)
    model_types.register(model_types.ModelType(
        "toy_scorer", ("cls/toy/",), lambda config, source, options: ToyScorer(
            config, model_types.get("toy_scorer").head_size(source)),
        adapter=model_types.REGISTRY["classifier"].adapter, options=("label_list",)))
    try:
        with pytest.raises(ValueError, match="already registered"):
            model_types.register(model_types.get("toy_scorer"))
        assert model_types.model_names("toy_scorer", names) == sorted(names)
        model, adapter = serving_models.build_model("toy_scorer", tiny_config, source.path, label_list=["x", "y"])
        inputs = random_inputs(tiny_config, 4, 7)
        np.testing.assert_array_equal(model(inputs), toy(inputs))
        assert list(adapter.labels) == ["x", "y"] and "toy_scorer" in model_types.exportable()
    finally:
        del model_types.REGISTRY["toy_scorer"]
