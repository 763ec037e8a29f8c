"""The kinds of BERT model a checkpoint can hold, told apart by their head variables (canonical names), and
the variables each kind is written with.

    model_type = infer_model_type(source)           # "classifier", ... or ValueError when it cannot tell
    names = model_names(model_type, source.shapes)  # the canonical names a converted model keeps
"""

ENCODER, PRETRAINER, CLASSIFIER, NER, SQUAD, MULTIPLE_CHOICE = (
    "encoder", "pretrainer", "classifier", "ner", "squad", "multiple_choice")
MODEL_TYPES = (ENCODER, PRETRAINER, CLASSIFIER, NER, SQUAD, MULTIPLE_CHOICE)

MASKED_LM_SCOPE = "cls/predictions/"
NEXT_SENTENCE_SCOPE = "cls/seq_relationship/"
SQUAD_SCOPE = "cls/squad/"  # BertSpanLabeler's head (modeling/tasks/span_labeler.py HEAD_SCOPE)
OUTPUT_WEIGHTS, OUTPUT_BIAS = "output_weights", "output_bias"  # the head of the classifier, NER, multiple choice
ENCODER_SCOPE, POOLER_SCOPE = "bert/", "bert/pooler/"
# The models whose head shares output_weights / output_bias: the names alone cannot tell them apart.
_SHARED_HEAD = (CLASSIFIER, NER, MULTIPLE_CHOICE)


def _head_scopes(model_type):
    """Name prefixes (or exact names) of the head variables of `model_type`."""
    return {ENCODER: (), PRETRAINER: (MASKED_LM_SCOPE, NEXT_SENTENCE_SCOPE), SQUAD: (SQUAD_SCOPE,),
            CLASSIFIER: (OUTPUT_WEIGHTS, OUTPUT_BIAS), NER: (OUTPUT_WEIGHTS, OUTPUT_BIAS),
            MULTIPLE_CHOICE: (OUTPUT_WEIGHTS, OUTPUT_BIAS)}[model_type]


def infer_model_type(names, hint=None, path="the checkpoint"):
    """The model type of a checkpoint with canonical tensor names `names`.

    hint: a model type that the checkpoint itself records (a HuggingFace `architectures`, a KerasHub task),
      used when the names fit it. ValueError when the heads are the shared `output_weights` and no hint
    says which model wrote them (pass --model_type then)."""
    names = set(names)
    if hint is not None and all(any(n.startswith(scope) for n in names) for scope in _head_scopes(hint)[:1]):
        return hint
    if any(n.startswith(SQUAD_SCOPE) for n in names):
        return SQUAD
    if any(n.startswith(MASKED_LM_SCOPE) for n in names):
        return PRETRAINER
    if OUTPUT_WEIGHTS in names:
        raise ValueError(f"{path} has a task head ({OUTPUT_WEIGHTS}) that run_classifier.py, run_ner.py and "
                         f"run_swag.py all write: pass --model_type={'|'.join(_SHARED_HEAD)}")
    return ENCODER


def model_names(model_type, names, pooler=True, path="the checkpoint"):
    """The canonical names of `names` that a `model_type` model is made of: the encoder (`bert/`, without the
    pooler when `pooler` is False) and the heads of that type. ValueError when the head is missing."""
    if model_type not in MODEL_TYPES:
        raise ValueError(f"model type {model_type!r}: expected one of {', '.join(MODEL_TYPES)}")
    scopes = _head_scopes(model_type)
    kept = sorted(n for n in names if (n.startswith(ENCODER_SCOPE) and (pooler or not n.startswith(POOLER_SCOPE)))
                  or n.startswith(scopes))
    if scopes and not any(n.startswith(scopes[0]) for n in kept):
        heads = sorted({n.split("/")[0] for n in names if not n.startswith(ENCODER_SCOPE)})
        raise ValueError(f"{path} has no {scopes[0]}* variables: not a {model_type} model (its heads: "
                         f"{', '.join(heads) or 'none'})")
    return kept
