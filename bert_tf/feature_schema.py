"""The feature names every part of bert_tf agrees on: model inputs, labels, pretraining and SQuAD record fields.

These are the original google-research/bert names (its TFRecords, its `model_fn` features), so records made
by the original train here and ours train there. The data code writes them, the models read them, the
training loop and the export signatures pass them through; each name is spelled here once. Pure Python, no
TensorFlow: data-creation worker processes import it.

Shapes: B examples, T = max_seq_length tokens, P = max_predictions_per_seq.

The contract is described in docs/DESIGN.md, section 3.2.
"""

# Model inputs, int [B, T] (int64 in TFRecords, int32 in the models).
INPUT_IDS = "input_ids"  # word-piece ids, [CLS] first, 0 ([PAD]) after the text
INPUT_MASK = "input_mask"  # 1 for real tokens, 0 for padding
SEGMENT_IDS = "segment_ids"  # 0 for the first text (and padding), 1 for the second
INPUT_NAMES = (INPUT_IDS, INPUT_MASK, SEGMENT_IDS)

# Fine-tuning labels.
LABEL_IDS = "label_ids"  # int [B] (class), float [B] (regression), int [B, T] (per token)
IGNORE_LABEL = -100  # a per-token label that no loss or metric counts ([CLS], [SEP], later word pieces, padding)
IS_REAL_EXAMPLE = "is_real_example"  # float/int [B]: 0 for padding examples that fill the last batch

# Pretraining records (the original create_pretraining_data.py).
MASKED_LM_POSITIONS = "masked_lm_positions"  # int [B, P]: positions of the masked tokens, 0-padded
MASKED_LM_IDS = "masked_lm_ids"  # int [B, P]: the original ids at those positions
MASKED_LM_WEIGHTS = "masked_lm_weights"  # float32 [B, P]: 1.0 for real predictions, 0.0 for padding
NEXT_SENTENCE_LABELS = "next_sentence_labels"  # int [B, 1]: 0 = the actual next segment, 1 = random
MASKED_LM_FEATURES = (MASKED_LM_POSITIONS, MASKED_LM_IDS, MASKED_LM_WEIGHTS)

# SQuAD records (the original run_squad.py), one per window of a context.
UNIQUE_IDS = "unique_ids"  # int [B]: the window's id, joins the logits back to the window
START_POSITIONS = "start_positions"  # int [B]: the answer's first token in the window (0: none)
END_POSITIONS = "end_positions"  # int [B]: its last token
IS_IMPOSSIBLE = "is_impossible"  # int [B]: 1 when the window holds no answer (SQuAD 2.0)
SPAN_LABELS = (START_POSITIONS, END_POSITIONS)
# ...and what post-processing needs (prediction records only).
EXAMPLE_INDEX = "example_index"  # int [B]: the question's index in the file
DOC_SPAN_INDEX = "doc_span_index"  # int [B]: the window's index among the question's windows
TOKENS = "tokens"  # bytes [B, T]: the window's word pieces
TOKEN_TO_ORIG_MAP = "token_to_orig_map"  # int [B, T]: index of each piece's word in the context, -1 outside
TOKEN_IS_MAX_CONTEXT = "token_is_max_context"  # int [B, T]: 1 where this window is the piece's best context

# Model outputs.
# The encoder's outputs are float32 [B, T, H] (the last LayerNorm's dtype) except the pooled output, which is in
# the compute dtype (bfloat16 / float16 under a mixed-precision policy); the task models' logits are float32.
SEQUENCE_OUTPUT = "sequence_output"  # [B, T, H]
POOLED_OUTPUT = "pooled_output"  # [B, H]
ENCODER_OUTPUTS = "encoder_outputs"  # list of L [B, T, H]
LAYER_FEATURES = "layer_features"  # float32 [B, T, K, H]: K chosen layers of a frozen encoder (feature-based)
MASKED_LM_LOGITS = "masked_lm_logits"  # float32 [B, P, V]
LM_LOGITS = "lm_logits"  # float32 [B, T, V]: at each position, the next token's (left-to-right pretraining)
NEXT_SENTENCE_LOGITS = "next_sentence_logits"  # float32 [B, 2]
START_LOGITS = "start_logits"  # float32 [B, T]
END_LOGITS = "end_logits"  # float32 [B, T]
