"""The canonical (Google) names of the encoder's and the heads' variables: the scopes every checkpoint
format is read into and the layers name their variables with (`checkpoint_variables()`).

A leaf module of the package, pure Python (no Keras, no TensorFlow, nothing of bert_tf): the models
(`bert_tf/modeling/`), the format codecs (`bert_tf/formats/`) and the model-type registry
(`bert_tf/model_types.py`) read these names, the codecs and the registry without building a model.
"""

ENCODER_SCOPE = "bert/"  # BertEncoder: embeddings, encoder layers, pooler
POOLER_SCOPE = "bert/pooler/"  # BertEncoder's pooler (Dense(H, tanh) on [CLS])
MASKED_LM_SCOPE = "cls/predictions/"  # MaskedLMHead (modeling/layers/pretraining_heads.py)
NEXT_SENTENCE_SCOPE = "cls/seq_relationship/"  # NextSentenceHead (modeling/layers/pretraining_heads.py)
SQUAD_SCOPE = "cls/squad/"  # BertSpanLabeler's head (modeling/tasks/span_labeler.py)
BILSTM_SCOPE = "bilstm/"  # a BiLSTM task head's variables, its output layer included (modeling/tasks/task_model.py)
# The original fine-tuning output layer (modeling/layers/output_head.py), unscoped: the classifier's, the
# NER tagger's and the multiple-choice model's heads all have these names.
OUTPUT_WEIGHTS, OUTPUT_BIAS = "output_weights", "output_bias"
