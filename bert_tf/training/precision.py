"""The numeric precision of a run: Keras' global mixed-precision policy, and the seed of its weights."""

import keras

# --mixed_precision / PretrainingOptions.mixed_precision -> Keras' policy. float16 needs loss scaling
# (`optimization.create_optimizer(..., loss_scaling=True)`); bfloat16 does not.
POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def set_policy(precision, seed=None):
    """Seeds Keras (weights, dropout) with `seed` when given and sets the global policy of `precision` (a key
    of POLICIES); returns the policy name ("float32", "mixed_bfloat16" or "mixed_float16")."""
    if precision not in POLICIES:
        raise ValueError(f"mixed_precision={precision!r}: expected one of {', '.join(POLICIES)}")
    if seed is not None:
        keras.utils.set_random_seed(seed)
    keras.mixed_precision.set_global_policy(POLICIES[precision])
    return POLICIES[precision]
