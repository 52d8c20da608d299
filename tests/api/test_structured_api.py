"""The namespace over structured storage (issue 16): indexing, element reads, setitem,
transposes and manipulation of dia/bsr/ell/rle arrays, against NumPy on the dense array."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lazysparse as xp

FORMATS = ("dia", "bsr", "ell", "rle")


def matrix() -> np.ndarray:
    d = np.diag(np.arange(1.0, 8.0), 1) + np.diag(np.arange(1.0, 9.0))
    d[3, 7] = 5.0
    d[5, 0:3] = 2.0  # a run
    return d


def stored(fmt: str) -> Any:
    a = xp.asformat(xp.asarray(matrix()), fmt)
    assert xp.compute(a).format == fmt
    return a


CASES: dict[str, tuple[Callable[[Any], Any], Callable[[np.ndarray], Any]]] = {
    "slice": (lambda a: a[2:6, 1:4], lambda d: d[2:6, 1:4]),
    "row": (lambda a: a[5], lambda d: d[5]),
    "element": (lambda a: xp.asarray(float(a[5, 1])), lambda d: np.asarray(d[5, 1])),
    "element_gap": (lambda a: xp.asarray(float(a[0, 6])), lambda d: np.asarray(d[0, 6])),
    "fancy": (lambda a: a[xp.asarray([5, 3, 5]), xp.asarray([1, 7, 2])],
              lambda d: d[[5, 3, 5], [1, 7, 2]]),
    "transpose": (lambda a: xp.permute_dims(a, (1, 0)), lambda d: d.T),
    "reshape": (lambda a: xp.reshape(a, (-1,)), lambda d: d.reshape(-1)),
    "concat": (lambda a: xp.concat([a, a], axis=1), lambda d: np.concatenate([d, d], 1)),
    "sort": (lambda a: xp.sort(a, axis=1), lambda d: np.sort(d, axis=1)),
    "argmax": (lambda a: xp.argmax(a, axis=1), lambda d: d.argmax(axis=1)),
    "nonzero": (lambda a: xp.stack(xp.nonzero(a)), lambda d: np.stack(np.nonzero(d))),
    "unique": (lambda a: xp.unique_values(a), lambda d: np.unique(d)),
    "mean": (lambda a: xp.mean(a, axis=0), lambda d: d.mean(axis=0)),
    "astype": (lambda a: xp.astype(a, xp.int32), lambda d: d.astype(np.int32)),
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_namespace_reads(fmt: str, case: str) -> None:
    f, ref = CASES[case]
    np.testing.assert_array_equal(np.asarray(f(stored(fmt))), ref(matrix()))


@pytest.mark.parametrize("fmt", FORMATS)
def test_setitem_keeps_format(fmt: str) -> None:
    """Stored positions are written in place (a run is split); new ones merge; the array
    stays in its format, in a loop that reads after each write."""
    a, d = stored(fmt), matrix()
    for k, (i, j, v) in enumerate([(2, 3, 7.0), (5, 1, -1.0), (0, 6, 4.0), (7, 7, 0.0)]):
        a[i, j] = v
        d[i, j] = v
        assert float(a[i, j]) == v
        np.testing.assert_array_equal(np.asarray(a), d, err_msg=f"after write {k}")
    a[1:3, :] = 9.0
    d[1:3, :] = 9.0
    np.testing.assert_array_equal(np.asarray(a), d)
    assert xp.compute(a).format == fmt
