"""The `extended` tier (pytest.ini): cases that `make test-all` runs and `make test` leaves out, so that
`make test` stays under 20 minutes on the slowest 2-core machine seen. A family of cases keeps its first ones
in `make test`; the rest of it, and whole-tool checks (benchmark dry runs, each command's --help, the README's
command lines), run in `make test-all` only."""

import pytest


def first_in_make_test(values, count, ids=None):
    """`values` (a list, or the sorted keys of a dict; a tuple for several argument names) as pytest params
    with `ids`: the first `count` run in `make test`, the others are marked `extended`."""
    values = sorted(values) if isinstance(values, dict) else list(values)
    ids = ids or [None] * len(values)
    return [pytest.param(*(value if isinstance(value, tuple) else (value,)), id=name,
                         marks=() if i < count else pytest.mark.extended)
            for i, (value, name) in enumerate(zip(values, ids))]
