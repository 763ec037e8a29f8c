"""The kinds of BERT model, in one registry: per type its Keras model, head variables, HuggingFace class,
KerasHub task, serving adapter and the export options it reads.

    model_type = model_types.get("classifier")
    model = model_type.build(config, source, options)      # source: an opened CheckpointSource
    adapter = model_type.adapter(model, options)             # export/serving.py's ServingAdapter
    model_types.infer(source.shapes, hint, source.path)      # the type a checkpoint's heads say
    model_types.register(ModelType("my_task", ...))          # a new task: its model's files and this call

Every command and codec reads the types here: `convert_checkpoint.py --model_type` offers the ones with a
HuggingFace class, `export_model.py --model_type` the ones with a serving adapter, the codecs map their own
class and task names through it. The module is pure Python (the codecs read it without Keras or
TensorFlow): the model classes and adapters are imported when a model is built.
"""

import dataclasses
from typing import Callable

from bert_tf.modeling.checkpoint_names import (
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
      its head sizes and embedded head options) with the export `options` dict.
    adapter: (model, options) -> its serving adapter (bert_tf/export/); None: export_model.py cannot serve it.
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
        name = scope + (BILSTM_SCOPE if source.head else "") + OUTPUT_WEIGHTS
        if name not in source.shapes:
            raise ValueError(f"{source.path} has no {name}: not a fine-tuned {self.name} checkpoint (pass a "
                             "fine-tuning output_dir or one of its model.ckpt-N as init_checkpoint)")
        return source.shapes[name][0]

    def unused_variables(self, source):
        """Name prefixes of the variables its outputs never read for the checkpoint `source` (an export may
        lack them): the pooler, where unread (or untrained: an MLM-only pretrainer has no NSP head)."""
        reads_pooler = self.reads_pooler and (self.name != PRETRAINER or _has_next_sentence(source))
        return () if reads_pooler else (POOLER_SCOPE,)


def _has_next_sentence(source):
    return NEXT_SENTENCE_SCOPE + OUTPUT_WEIGHTS in source.shapes


def _encoder(config, source, options):
    from bert_tf.modeling.encoder import BertEncoder

    return BertEncoder(config)


def _pretrainer(config, source, options):
    from bert_tf.modeling.tasks.pretrainer import BertPretrainer, pretraining_objective

    return BertPretrainer(config, objective=pretraining_objective(config, _has_next_sentence(source)))


def _classifier(config, source, options):
    from bert_tf.modeling.tasks.classifier import BertClassifier

    return BertClassifier(config, REGISTRY[CLASSIFIER].head_size(source), **(source.head or {}))


def _tagger(config, source, options):
    from bert_tf.modeling.tasks.feature_tagger import BertFeatureTagger
    from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier

    head = source.head or {}
    tagger = BertFeatureTagger if "feature_layers" in head else BertTokenClassifier
    return tagger(config, REGISTRY[NER].head_size(source), **head)


def _span_labeler(config, source, options):
    from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler

    REGISTRY[SQUAD].head_size(source)  # a fine-tuned span head, or a ValueError naming its absence
    return BertSpanLabeler(config, **(source.head or {}))


def _multiple_choice(config, source, options):
    from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice

    return BertMultipleChoice(config, **(source.head or {}))


def _embedder(config, source, options):
    from bert_tf.formats import sentence_transformers
    from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder

    chosen = {name: options[name] for name in ("pooling", "normalize") if options.get(name) is not None}
    settings = {**sentence_transformers.DEFAULTS, **chosen}
    return BertSentenceEmbedder(config, settings["pooling"], settings["normalize"])


def _adapter(class_name, option=None):
    """(model, options) -> bert_tf.export's `class_name`(model[, options[option]]); its ValueError (a bad label
    list, max_answer_length) names the option."""

    def make(model, options):
        from bert_tf.export import serving, task_adapters

        adapter_class = getattr(serving, class_name, None) or getattr(task_adapters, class_name)
        if option is None:
            return adapter_class(model)
        try:
            return adapter_class(model, options.get(option))
        except ValueError as e:
            raise ValueError(f"{option}: {e}") from None

    return make


REGISTRY = {}
_OUTPUT_LAYER = (OUTPUT_WEIGHTS, OUTPUT_BIAS)  # the original's unscoped fine-tuning output layer


def register(model_type):
    """Adds `model_type` (a ModelType) to the registry; ValueError when its name is taken."""
    if model_type.name in REGISTRY:
        raise ValueError(f"model type {model_type.name!r} is already registered")
    REGISTRY[model_type.name] = model_type
    return model_type


for _type in (
        ModelType(ENCODER, (), _encoder, _adapter("EncoderAdapter"), huggingface_class=("BertModel", True, ""),
                  keras_hub_task="BertBackbone"),
        ModelType(PRETRAINER, (MASKED_LM_SCOPE, NEXT_SENTENCE_SCOPE), _pretrainer, _adapter("PretrainerAdapter"),
                  huggingface_class=("BertForPreTraining", True, "bert.")),
        ModelType(CLASSIFIER, _OUTPUT_LAYER, _classifier, _adapter("ClassifierAdapter", "label_list"),
                  ("label_list",), huggingface_class=("BertForSequenceClassification", True, "bert."),
                  keras_hub_task="BertTextClassifier"),
        ModelType(NER, _OUTPUT_LAYER, _tagger, _adapter("TokenClassifierAdapter", "label_list"), ("label_list",),
                  reads_pooler=False, huggingface_class=("BertForTokenClassification", False, "bert.")),
        ModelType(SQUAD, (SQUAD_SCOPE,), _span_labeler,
                  _adapter("SpanLabelerAdapter", "max_answer_length"), ("max_answer_length",), reads_pooler=False,
                  huggingface_class=("BertForQuestionAnswering", False, "bert.")),
        ModelType(MULTIPLE_CHOICE, _OUTPUT_LAYER, _multiple_choice,
                  huggingface_class=("BertForMultipleChoice", True, "bert.")),
        ModelType(EMBEDDER, (), _embedder, _adapter("EmbedderAdapter"), ("pooling", "normalize"),
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
    """The names of the types export_model.py serves (they have a serving adapter)."""
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
