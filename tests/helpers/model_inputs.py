"""Random inputs for the encoder and the task models: random_inputs (segments 0 and 1), padded_inputs (any
shape, segment 0, one row mostly padding)."""

import numpy as np


def random_inputs(config, batch=13, seq=7, seed=0):
    """Encoder inputs int32 [batch, seq]: random ids below config.vocab_size on a random real length (>= 2 when
    seq allows), padding after it, segment 1 on the second half of the real tokens."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min(2, seq), seq + 1, size=batch)
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
    ids = rng.integers(1, config.vocab_size, size=(batch, seq)).astype(np.int32) * mask
    segments = ((np.arange(seq)[None, :] >= lengths[:, None] // 2) * mask).astype(np.int32)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def padded_inputs(config, shape, seed=0):
    """Encoder inputs int32 `shape` ([batch, seq], or [batch, choices, seq] for multiple choice) with random real
    lengths >= 2, the rest padding, the first row only 2 tokens (mostly padding), segment 0 throughout."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, shape[-1] + 1, size=shape[:-1])
    lengths.flat[0] = 2  # at least one row mostly padding
    mask = (np.arange(shape[-1]) < lengths[..., None]).astype(np.int32)
    return {"input_ids": (rng.integers(1, config.vocab_size, size=shape) * mask).astype(np.int32),
            "input_mask": mask, "segment_ids": np.zeros(shape, np.int32)}
