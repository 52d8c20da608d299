"""Regressions found by running scikit-learn's and scipy's own Array-API test suites with
lazysparse as the namespace (``benchmarks/client_suites.py``, docs/clients.md). Each case
is the client's call reduced to lazysparse alone, checked against NumPy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lazysparse as xp

_AXIS_CALLS: list[tuple[str, Callable[[Any], Any], Callable[[np.ndarray], Any]]] = [
    ("moveaxis", lambda x: xp.moveaxis(x, 10, 0), lambda a: np.moveaxis(a, 10, 0)),
    ("moveaxis-neg", lambda x: xp.moveaxis(x, 0, -3), lambda a: np.moveaxis(a, 0, -3)),
    ("sum", lambda x: xp.sum(x, axis=2), lambda a: np.sum(a, axis=2)),
    ("expand_dims", lambda x: xp.expand_dims(x, axis=5), lambda a: np.expand_dims(a, 5)),
    ("flip", lambda x: xp.flip(x, axis=-4), lambda a: np.flip(a, axis=-4)),
]


@pytest.mark.parametrize("name,call,ref", _AXIS_CALLS, ids=[c[0] for c in _AXIS_CALLS])
def test_axis_out_of_bounds_is_numpys_axis_error(
    name: str, call: Callable[[Any], Any], ref: Callable[[np.ndarray], Any]
) -> None:
    """scipy.stats matches NumPy's wording ("axis 10 is out of bounds for array of
    dimension 1"); the error is NumPy's AxisError, an IndexError and a ValueError."""
    a = np.arange(6.0).reshape(2, 3)
    with pytest.raises(np.exceptions.AxisError) as expected:
        ref(a)
    with pytest.raises(np.exceptions.AxisError) as got:
        call(xp.asarray(a))
    assert isinstance(got.value, IndexError) and isinstance(got.value, ValueError)
    wording = str(expected.value).split(": ")[-1]
    assert wording in str(got.value)
