"""Regressions found by running scikit-learn's and scipy's own Array-API test suites with
lazysparse as the namespace (``benchmarks/client_suites.py``, docs/clients.md). Each case
is the client's call reduced to lazysparse alone, checked against NumPy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lazysparse as xp
from lazysparse.api.array import held_values

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


def test_held_reductions_of_earlier_iterations_are_not_walked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """scipy.stats.permutation_test(batch=1) collects one lazy statistic per resample and
    computes a fresh index each iteration: every compute walked the histories of the 64
    newest held statistics looking for shared history (1,000 resamples: 235 s). A held
    array built before every subquery of the plan cannot read one: it is ruled out by age,
    and the values stay NumPy's."""
    walks: list[object] = []
    original = held_values._reads_and_reduces

    def counting(root: Any, nodes: Any) -> bool:
        walks.append(root)
        return original(root, nodes)

    monkeypatch.setattr(held_values, "_reads_and_reduces", counting)
    rng = np.random.default_rng(0)
    a, b = rng.random(10), rng.random(10)
    x, y = xp.asarray(a), xp.asarray(b)
    stats, expected = [], []
    for i in range(20):
        perm = rng.permutation(10)
        stats.append(xp.mean(x[xp.asarray(perm)] * float(i)) - xp.mean(y))
        expected.append(np.mean(a[perm] * float(i)) - np.mean(b))
        # a fresh plan with an uncomputed part, computed while the statistics are held
        assert float(xp.sum(x + float(i))) == pytest.approx(np.sum(a + float(i)))
    assert walks == []
    np.testing.assert_allclose(np.asarray(xp.stack(stats)), np.array(expected), rtol=1e-12)


def test_held_value_sharing_history_still_found() -> None:
    """The age test keeps the gradient-descent case: ``w`` built before the loss is
    observed reads ``p``, which the loss's plan computes, so ``w`` is kept (SHARED)."""
    rng = np.random.default_rng(1)
    a, t = rng.random((30, 4)), rng.random(30)
    X, y = xp.asarray(a), xp.asarray(t)
    w = xp.zeros(4)
    wn = np.zeros(4)
    for _ in range(3):
        p = X @ w
        w = w - 0.1 * (X.T @ (p - y))
        assert held_values.KeepReason.SHARED.value in str(xp.explain(xp.sum((p - y) ** 2)))
        loss = float(xp.sum((p - y) ** 2))
        pn = a @ wn
        wn = wn - 0.1 * (a.T @ (pn - t))
        assert loss == pytest.approx(float(np.sum((pn - t) ** 2)), rel=1e-12)
    np.testing.assert_allclose(np.asarray(w), wn, rtol=1e-12)


def test_logspace_like_numpy() -> None:
    """scipy.differentiate's tests call ``xp.logspace`` (NumPy's, not the standard's)."""
    np.testing.assert_allclose(np.asarray(xp.logspace(-3, 0, 10)), np.logspace(-3, 0, 10))
    got = xp.logspace(0, 3, 4, base=2.0, endpoint=False, dtype=xp.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.logspace(0, 3, 4, base=2.0, endpoint=False),
                               rtol=1e-6)
    assert xp.logspace(0, 1, 0).shape == (0,)
