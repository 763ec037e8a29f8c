"""The kinds of BERT model, in one registry: per type its head variables, HuggingFace class, KerasHub task,
the export options it reads, and the factories of its Keras model and serving adapter.

    model_type = model_types.get("classifier")
    model = model_type.build(config, source, options)      # source: an opened CheckpointSource
    adapter = model_type.adapter(model, options)             # export/serving.py's ServingAdapter
    model_types.infer(source.shapes, hint, source.path)      # the type a checkpoint's heads say
    model_types.register(ModelType("my_task", ...))          # a new task: its model's files and this call

Every command and codec reads the types here: `convert_checkpoint.py --model_type` offers the ones with a
HuggingFace class, `export_model.py --model_type` the ones with a serving adapter, the codecs map their own
class and task names through it. The module is pure Python and imports nothing of bert_tf but
`checkpoint_names` (the codecs read it without Keras or TensorFlow). The registry holds names and factories
that the lower layers provide, never imports of them: the built-in types are declared here without their
factories, and the modules that define them provide those when imported (`provide`): each model's module
(`modeling/encoder.py`, `modeling/tasks/*.py`) its `build`, `export/serving.py` and `export/task_adapters.py`
the `adapter`s. `export/serving_models.py` imports them all; a factory called before its module is imported
is a ValueError naming that module.
"""

import dataclasses
from typing import Callable

from bert_tf.checkpoint_names import (
    BILSTM_SCOPE,
    ENCODER_SCOPE,
    MASKED_LM_SCOPE,
    NEXT_SENTENCE_SCOPE,
    OUTPUT_BIAS,
    OUTPUT_WEIGHTS,
    POOLER_SCOPE,
    SQUAD_SCOPE,
)

ENCODER, PRETRAINER, CLASSIFIER, NER, SQUAD, MULTIPLE_CHOICE, EMBEDDER = (
    "encoder", "pretrainer", "classifier", "ner", "squad", "multiple_choice", "embedder")


@dataclasses.dataclass(frozen=True)
class ModelType:
    """One kind of model.

    name: what `--model_type` calls it.
    heads: name prefixes of its head variables beyond the encoder (a scope such as `cls/squad/`, or the
      unscoped output layer's `output_weights`, `output_bias`); a checkpoint of this type has a variable under
      the first. () for the encoder alone.
    build: (config, source, options) -> the Keras model, built for the checkpoint `source` (a CheckpointSource:
      its head sizes and embedded head options) with the export `options` dict. A built-in type's is provided
      by its model's module (`provide`).
    adapter: (model, options) -> its serving adapter (bert_tf/export/, which provides the built-in types'); None:
      export_model.py cannot serve it.
    options: the export options (`export_model.py` flags) it reads; the others are refused for it.
    reads_pooler: whether its outputs read `bert/pooler/` (otherwise an export may lack the pooler).
    huggingface_class: (transformers class, whether that class has the pooler, the encoder's name prefix);
      None: not written as a HuggingFace model.
    keras_hub_task: the KerasHub class it is written as and read from (BertBackbone, BertTextClassifier); None:
      KerasHub has no such BERT task.
    """
    name: str
    heads: tuple
    build: Callable
    adapter: Callable = None
    options: tuple = ()
    reads_pooler: bool = True
    huggingface_class: tuple = None
    keras_hub_task: str = None

    def head_size(self, source):
        """The number of outputs of this type's fine-tuned output layer in `source` (its linear head, or the
        head its embedded options describe); ValueError when the checkpoint has none."""
        scope = self.heads[0] if self.heads[0].endswith("/") else ""  # the unscoped output layer: none
        bilstm = (source.head or {}).get("task_head") == "bilstm"  # other head options keep the linear layer
        name = scope + (BILSTM_SCOPE if bilstm else "") + OUTPUT_WEIGHTS
        if name not in source.shapes:
            raise ValueError(f"{source.path} has no {name}: not a fine-tuned {self.name} checkpoint (pass a "
                             "fine-tuning output_dir or one of its model.ckpt-N as init_checkpoint)")
        return source.shapes[name][0]

    def unused_variables(self, source):
        """Name prefixes of the variables its outputs never read for the checkpoint `source` (an export may
        lack them): the pooler, where unread (or untrained: an MLM-only pretrainer has no NSP head)."""
        reads_pooler = self.reads_pooler and (self.name != PRETRAINER or has_next_sentence(source))
        return () if reads_pooler else (POOLER_SCOPE,)


def has_next_sentence(source):
    """Whether the checkpoint `source` has a (trained) next sentence head: an MLM-only pretrainer has none."""
    return NEXT_SENTENCE_SCOPE + OUTPUT_WEIGHTS in source.shapes


class _Absent:
    """The factory of a built-in type until `module` provides it (`provide`, when that module is imported)."""

    def __init__(self, kind, factory, module):
        self.kind, self.factory, self.module = kind, factory, module

    def __call__(self, *args, **kwargs):
        raise ValueError(f"model type {self.kind!r} has no {self.factory} yet: {self.module} provides it when "
                         "imported (bert_tf.export.serving_models imports every built-in type's)")

    def __repr__(self):
        return f"<{self.kind} {self.factory}: provided by {self.module}>"


REGISTRY = {}
_OUTPUT_LAYER = (OUTPUT_WEIGHTS, OUTPUT_BIAS)  # the original's unscoped fine-tuning output layer


def register(model_type):
    """Adds `model_type` (a ModelType) to the registry; ValueError when its name is taken."""
    if model_type.name in REGISTRY:
        raise ValueError(f"model type {model_type.name!r} is already registered")
    REGISTRY[model_type.name] = model_type
    return model_type


def provide(name, build=None, adapter=None):
    """Gives the declared type `name` its factories `build` and/or `adapter` (ModelType's fields): what the
    module defining a built-in type's model (its build) or serving adapter calls when imported. ValueError
    for an unknown name, or a factory that is not awaited (already provided, or no adapter declared)."""
    model_type = get(name)
    factories = {field: factory for field, factory in (("build", build), ("adapter", adapter)) if factory}
    for field in factories:
        if not isinstance(getattr(model_type, field), _Absent):
            state = "already provided" if getattr(model_type, field) else "not declared"
            raise ValueError(f"model type {name!r}: its {field} is {state}")
    REGISTRY[name] = dataclasses.replace(model_type, **factories)
    return REGISTRY[name]


def _declared(name, heads, build_module, adapter_module=None, **fields):
    """A built-in type whose build `build_module` provides, and its serving adapter `adapter_module` (None:
    not served)."""
    adapter = adapter_module and _Absent(name, "adapter", adapter_module)
    return ModelType(name, heads, _Absent(name, "build", build_module), adapter, **fields)


_TASKS, _SERVING, _ADAPTERS = "bert_tf.modeling.tasks.", "bert_tf.export.serving", "bert_tf.export.task_adapters"
for _type in (
        _declared(ENCODER, (), "bert_tf.modeling.encoder", _SERVING, huggingface_class=("BertModel", True, ""),
                  keras_hub_task="BertBackbone"),
        _declared(PRETRAINER, (MASKED_LM_SCOPE, NEXT_SENTENCE_SCOPE), _TASKS + "pretrainer", _SERVING,
                  huggingface_class=("BertForPreTraining", True, "bert.")),
        _declared(CLASSIFIER, _OUTPUT_LAYER, _TASKS + "document_classifier", _ADAPTERS, options=("label_list",),
                  huggingface_class=("BertForSequenceClassification", True, "bert."),
                  keras_hub_task="BertTextClassifier"),
        _declared(NER, _OUTPUT_LAYER, _TASKS + "feature_tagger", _ADAPTERS, options=("label_list",),
                  reads_pooler=False, huggingface_class=("BertForTokenClassification", False, "bert.")),
        _declared(SQUAD, (SQUAD_SCOPE,), _TASKS + "span_labeler", _ADAPTERS, options=("max_answer_length",),
                  reads_pooler=False, huggingface_class=("BertForQuestionAnswering", False, "bert.")),
        _declared(MULTIPLE_CHOICE, _OUTPUT_LAYER, _TASKS + "multiple_choice",
                  huggingface_class=("BertForMultipleChoice", True, "bert.")),
        _declared(EMBEDDER, (), _TASKS + "embedder", _ADAPTERS, options=("pooling", "normalize"),
                  reads_pooler=False)):
    register(_type)


def get(name):
    """The registered ModelType `name`; ValueError listing the registered ones otherwise."""
    if name not in REGISTRY:
        raise ValueError(f"model type {name!r}: expected one of {', '.join(REGISTRY)}")
    return REGISTRY[name]


def convertible():
    """The names of the types a checkpoint is converted as (they have a HuggingFace class)."""
    return tuple(name for name, model_type in REGISTRY.items() if model_type.huggingface_class)


def exportable():
    """The names of the types export_model.py serves (they have a serving adapter: provided, or declared and
    provided by bert_tf/export/ when imported)."""
    return tuple(name for name, model_type in REGISTRY.items() if model_type.adapter)


def _has_head(model_type, names):
    return any(name.startswith(model_type.heads[0]) for name in names)


def infer(names, hint=None, path="the checkpoint"):
    """The convertible model type of a checkpoint with canonical tensor names `names`: the one whose first
    head variable it has, else the encoder.

    hint: a type the checkpoint itself records (a HuggingFace `architectures`, a KerasHub task), used when
    the names have its head. ValueError when several types share the head variables it has (the original's
    unscoped `output_weights`: classifier, NER, multiple choice) and no hint says which."""
    names = set(names)
    if hint is not None and (not get(hint).heads or _has_head(get(hint), names)):
        return hint
    found = [name for name in convertible() if REGISTRY[name].heads and _has_head(REGISTRY[name], names)]
    if len(found) > 1:
        raise ValueError(f"{path} has a task head ({REGISTRY[found[0]].heads[0]}) that {len(found)} model types "
                         f"share: pass model_type={'|'.join(found)}")
    return found[0] if found else ENCODER


def model_names(name, names, pooler=True, path="the checkpoint"):
    """The canonical names of `names` that a model of type `name` is made of: the encoder (`bert/`, without the
    pooler when `pooler` is False) and its heads. ValueError when the head is missing."""
    model_type = get(name)
    heads = model_type.heads
    kept = sorted(n for n in names if (n.startswith(ENCODER_SCOPE) and (pooler or not n.startswith(POOLER_SCOPE)))
                  or n.startswith(heads))
    if heads and not _has_head(model_type, kept):
        found = sorted({n.split("/")[0] for n in names if not n.startswith(ENCODER_SCOPE)})
        raise ValueError(f"{path} has no {heads[0]}* variables: not a {name} model (its heads: "
                         f"{', '.join(found) or 'none'})")
    return kept



def of_huggingface_class(class_name):
    """The type whose HuggingFace class is `class_name`, or None."""
    return next((name for name, model_type in REGISTRY.items()
                 if model_type.huggingface_class and model_type.huggingface_class[0] == class_name), None)


def of_keras_hub_task(class_name):
    """The type whose KerasHub class is `class_name` (e.g. "BertTextClassifier"), or None."""
    return next((name for name, model_type in REGISTRY.items() if model_type.keras_hub_task == class_name), None)
