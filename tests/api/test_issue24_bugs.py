"""Regressions of issue 24 (bugs met running scipy and xarray on lazysparse), each checked
against NumPy on the dense equivalent."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lazysparse as xp


def _np_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(np.asarray(k) if isinstance(k, xp.LazyArray) else k for k in key)


_ELLIPSIS_KEYS = [
    (xp.asarray([0, 2]), ...),
    (np.array([0, 2]), ...),
    ([0, 2], ...),
    (..., xp.asarray([0, 3])),
    (..., np.array([3, 0, 3])),
    (0, ..., xp.asarray([1, 2])),
    (xp.asarray([1]), ..., 2),
    (np.array([True, False, True]), ...),
    (..., xp.asarray([True, False, False, True])),
    (xp.asarray(np.zeros(3, bool)), ...),
    (xp.asarray([], dtype=xp.int64), ...),
    (..., None, xp.asarray([0])),
]


@pytest.mark.parametrize("fmt", ["dense", "coo"])
@pytest.mark.parametrize("key", _ELLIPSIS_KEYS, ids=range(len(_ELLIPSIS_KEYS)))
def test_index_array_with_ellipsis(fmt: str, key: tuple[Any, ...]) -> None:
    """`x[xp.asarray([0, 2]), ...]` used to compare the index array with `==` while
    looking for the ellipsis ("truth value of an array ... is ambiguous")."""
    a = np.where(np.arange(36).reshape(3, 3, 4) % 3 == 0, 0.0, np.arange(36.0).reshape(3, 3, 4))
    x = xp.asarray(a) if fmt == "dense" else xp.asarray(a, format=fmt)
    np.testing.assert_array_equal(np.asarray(x[key]), a[_np_key(key)])


@pytest.mark.parametrize("key", _ELLIPSIS_KEYS[:8], ids=range(8))
def test_setitem_index_array_with_ellipsis(key: tuple[Any, ...]) -> None:
    a = np.arange(36.0).reshape(3, 3, 4)
    x = xp.asarray(a)
    x[key] = -1.0
    a[_np_key(key)] = -1.0
    np.testing.assert_array_equal(np.asarray(x), a)


def test_two_ellipses_still_an_index_error() -> None:
    with pytest.raises(IndexError):
        xp.asarray(np.ones((2, 2)))[..., xp.asarray([0]), ...]
