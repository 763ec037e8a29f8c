"""Masked-LM masking with the original `create_pretraining_data.py` rules (BERT paper, section 3.1).

Per instance: `num_to_predict = min(max_predictions_per_seq, max(1, round(num_tokens * masked_lm_prob)))`
([CLS] and [SEP] count in `num_tokens` but are never masked); candidates are taken in random order, each
chosen token becomes [MASK] 80% of the time, a uniformly random vocab id 10%, itself 10%; positions are
sorted. Whole-word masking groups a token with its following "##" pieces (and, with a Chinese word
segmenter, the characters of a Chinese word: `chinese_words`) and skips a word that would exceed
`num_to_predict`.

`MaskingConfig` is shared by static masking here (pure Python, used in worker processes) and by the
in-graph dynamic masking of `bert_tf.data.pretraining.pipeline`.
"""

import dataclasses

SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]")


@dataclasses.dataclass(frozen=True)
class MaskingConfig:
    """What masking needs to know about the vocab and the flags.

    Attributes:
      masked_lm_prob: float in (0, 1].
      max_predictions_per_seq: int >= 1.
      vocab_size: random replacements are uniform over ids [0, vocab_size), as in the original.
      cls_id, sep_id, mask_id: ids of [CLS], [SEP], [MASK].
      continuation: None, or (whole-word masking) `bytes` of length vocab_size, 1 where the token starts
        with "##".
    """
    masked_lm_prob: float
    max_predictions_per_seq: int
    vocab_size: int
    cls_id: int
    sep_id: int
    mask_id: int
    continuation: bytes = None

    @classmethod
    def from_vocab(cls, vocab, masked_lm_prob, max_predictions_per_seq, do_whole_word_mask,
                   vocab_file="vocab"):
        """Builds the config from a token -> id mapping (`FullTokenizer.vocab`).

        Raises:
          ValueError: if [CLS], [SEP] or [MASK] is missing from the vocab, or a number is out of range.
        """
        missing = [token for token in SPECIAL_TOKENS if token not in vocab]
        if missing:
            raise ValueError(f"vocab {vocab_file} lacks {', '.join(missing)}; pretraining data needs "
                             f"{', '.join(SPECIAL_TOKENS)}")
        if not 0.0 < masked_lm_prob <= 1.0:
            raise ValueError(f"masked_lm_prob={masked_lm_prob} must be in (0, 1]")
        if max_predictions_per_seq < 1:
            raise ValueError(f"max_predictions_per_seq={max_predictions_per_seq} must be >= 1")
        vocab_size = max(vocab.values()) + 1
        continuation = None
        if do_whole_word_mask:
            flags = bytearray(vocab_size)
            for token, index in vocab.items():
                flags[index] = token.startswith("##")
            continuation = bytes(flags)
        return cls(masked_lm_prob, max_predictions_per_seq, vocab_size, vocab["[CLS]"], vocab["[SEP]"],
                   vocab["[MASK]"], continuation)


def num_to_predict(num_tokens, masked_lm_prob, max_predictions_per_seq):
    """The original's count: `min(max_predictions_per_seq, max(1, round(num_tokens * masked_lm_prob)))`
    with Python's round-half-to-even."""
    return min(max_predictions_per_seq, max(1, int(round(num_tokens * masked_lm_prob))))


@dataclasses.dataclass
class MaskedInstance:
    """The masked-LM part of one instance.

    Attributes:
      positions: sorted list of int, the masked positions (never [CLS]/[SEP]).
      labels: list of int, the original ids at `positions`.
      replaced_by_mask, replaced_by_random, kept: how many positions got each of the 80/10/10 outcomes.
    """
    positions: list
    labels: list
    replaced_by_mask: int
    replaced_by_random: int
    kept: int


def mask_tokens(ids, candidates, config, rng, continues=None):
    """Masks `ids` in place with the original's rules.

    Args:
      ids: list of int, a whole instance ([CLS] A [SEP] B [SEP]); changed in place.
      candidates: list of int, the positions that may be masked (all but [CLS]/[SEP]), ascending; the list
        is reordered.
      config: `MaskingConfig`.
      rng: `random.Random`.
      continues: None, or per position of `ids` True where the token continues the word before it although
        it is no "##" piece (a Chinese character inside a segmented word: `chinese_words`); read only with
        whole-word masking.

    Returns:
      `MaskedInstance`.

    The original shuffles the whole candidate list; drawing candidates one by one with a lazy
    Fisher-Yates shuffle gives the same distribution and stops as soon as enough are chosen.
    """
    target = num_to_predict(len(ids), config.masked_lm_prob, config.max_predictions_per_seq)
    random = rng.random
    if config.continuation is None:
        chosen = candidates
        for i in range(min(target, len(chosen))):
            j = i + int(random() * (len(chosen) - i))
            chosen[i], chosen[j] = chosen[j], chosen[i]
        chosen = chosen[:target]
    else:
        groups = []
        for position in candidates:
            # Like the original, a "##" piece joins the previous candidate even across a [SEP].
            if groups and (config.continuation[ids[position]] or continues is not None and continues[position]):
                groups[-1].append(position)
            else:
                groups.append([position])
        chosen = []
        for i in range(len(groups)):
            if len(chosen) >= target:
                break
            j = i + int(random() * (len(groups) - i))
            groups[i], groups[j] = groups[j], groups[i]
            if len(chosen) + len(groups[i]) <= target:  # a word that does not fit is skipped
                chosen.extend(groups[i])
    chosen.sort()
    labels = [ids[position] for position in chosen]
    by_mask = by_random = 0
    for position in chosen:
        if random() < 0.8:
            ids[position] = config.mask_id
            by_mask += 1
        elif random() >= 0.5:
            ids[position] = int(random() * config.vocab_size)
            by_random += 1
    return MaskedInstance(chosen, labels, by_mask, by_random, len(chosen) - by_mask - by_random)
