"""Python-side packing of token segments into BERT inputs, as the original scripts build their features.

`BertPacker` in `bert_tf.tokenization.in_graph` does the same in the graph; the two give the same ids.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class PackedInput:
    """One packed example.

    Attributes:
      tokens: `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` (after truncation, without padding).
      input_ids, input_mask, segment_ids: lists of int, each `max_seq_length` long: the token ids then 0s;
        1 on the tokens then 0s; 0 up to and including the first [SEP], 1 after it, 0 on padding.
    """

    tokens: list
    input_ids: list
    input_mask: list
    segment_ids: list


def check_max_seq_length(max_seq_length, segments):
    """ValueError unless `max_seq_length` holds [CLS] and, for each of the `segments` texts of an example (1:
    single texts, 2: pairs), a word piece and its [SEP]: >= 3 for single texts, >= 5 for pairs. A shorter
    length packs examples without any text (truncation keeps max_seq_length - 2 pieces of a single text,
    max_seq_length - 3 of a pair)."""
    what = "the text and [SEP]" if segments == 1 else f"each of the {segments} texts and a [SEP] after each"
    if max_seq_length < 1 + 2 * segments:
        raise ValueError(f"max_seq_length={max_seq_length} must be >= {1 + 2 * segments} (room for [CLS], a word "
                         f"piece of {what})")


def truncation_note(truncated, total, what, max_seq_length):
    """The start of a log line about truncation: "412 of 500 examples (82%) are longer than max_seq_length=8"."""
    return f"{truncated} of {total} {what} ({truncated / total:.0%}) are longer than max_seq_length={max_seq_length}"


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Truncates two lists in place until len(tokens_a) + len(tokens_b) <= max_length.

    One token at a time is removed from the end of the longer list (from tokens_b when they are equally
    long), as in the original: a short segment keeps all of its tokens.
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def pack_tokens(tokens_a, tokens_b, max_seq_length, tokenizer):
    """Packs word pieces into `[CLS] A [SEP] (B [SEP])` ids, zero-padded to `max_seq_length`.

    Args:
      tokens_a: list of str, the first segment's word pieces (not modified).
      tokens_b: list of str or None, the second segment's.
      max_seq_length: total length; a single segment is cut to max_seq_length - 2 tokens, a pair is
        truncated with `truncate_seq_pair` to max_seq_length - 3.
      tokenizer: a `FullTokenizer` (its `convert_tokens_to_ids` is used).

    Returns:
      A `PackedInput`.

    Raises:
      ValueError: if max_seq_length leaves no room for [CLS] and the [SEP]s (< 2, or < 3 for a pair).
    """
    specials = 2 if tokens_b is None else 3
    if max_seq_length < specials:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for [CLS] and "
                         f"{specials - 1} [SEP]; expected >= {specials}")
    tokens_a = list(tokens_a)
    if tokens_b is None:
        del tokens_a[max_seq_length - specials:]
        tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
        segment_ids = [0] * len(tokens)
    else:
        tokens_b = list(tokens_b)
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - specials)
        tokens = ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"]
        segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
    padding = [0] * (max_seq_length - len(tokens))
    return PackedInput(
        tokens=tokens,
        input_ids=tokenizer.convert_tokens_to_ids(tokens) + padding,
        input_mask=[1] * len(tokens) + padding,
        segment_ids=segment_ids + padding)
