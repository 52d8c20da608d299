"""Per-call cost of a repeated expression (issue 34), as a deterministic count: the Python
function calls one repeated ``xp.compute`` makes, counted with ``sys.setprofile``. A
regression that puts a history walk, an inference or a plan rebuild back on the path of a
known shape adds calls and fails here; no timing is asserted. Every result is checked
against NumPy/scipy on the same data."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp


def python_calls(fn: Callable[[], Any]) -> int:
    """The Python function calls of one call of ``fn`` (the fewest of three, after two
    warm-up calls: a cache cleared by an earlier test fills again first)."""
    fn()
    fn()
    counts = []
    for _ in range(3):
        n = 0

        def count(_frame: Any, event: str, _arg: Any) -> None:
            nonlocal n
            if event == "call":
                n += 1

        was_enabled = gc.isenabled()
        gc.disable()  # a collection's callbacks are not the expression's cost
        sys.setprofile(count)
        try:
            fn()
        finally:
            sys.setprofile(None)
            if was_enabled:
                gc.enable()
        counts.append(n)
    return min(counts)


_RNG = np.random.default_rng(34)
_VN, _PN = _RNG.random(1000), _RNG.random(1000)
_BN, _CN = _RNG.random(100), _RNG.random(100)
_SA = sp.random_array((100, 100), density=0.05, format="csr", rng=_RNG)
_SB = sp.random_array((100, 100), density=0.05, format="csr", rng=_RNG)


def _cases() -> dict[str, tuple[Callable[[], Any], Callable[[], Any], int]]:
    """Each case: (the user's call, NumPy/scipy's answer, its call budget). The budgets sit
    about 5% above what the code reaches (170, 179, 190, 235, 226 calls on CPython 3.11
    with ``LAZYSPARSE_COMPILE=sync``, after the environment settings parsed once per value,
    the builders' counted history extents and the NumPy runner's direct array-and-constant
    ufunc calls; 182, 191, 206, 245, 236 before them; 181, 190, 205, 244, 235 after the
    kernels' host facts, the NumPy runner's decoded folds, the contraction's cached
    inference and the recipes' input slots; 194, 219, 228, 332, 258 before them; 296,
    318, 306, 367, 337 before precomputed subquery keys; the first commit measured made
    435, 437, 425, 417, 394: benchmarks/results/per-call-2026-12-01.md)."""
    v, p = xp.asarray(_VN), xp.asarray(_PN)
    b, c = xp.asarray(_BN), xp.asarray(_CN)
    A, B = xp.asarray(_SA), xp.asarray(_SB)
    return {
        "v + 0.5 * p": (lambda: xp.compute(v + 0.5 * p), lambda: _VN + 0.5 * _PN, 179),
        "sum(b * c)": (lambda: xp.compute(xp.sum(b * c)), lambda: (_BN * _CN).sum(), 188),
        "float(sum(v * 2.0))": (lambda: float(xp.sum(v * 2.0)), lambda: (_VN * 2.0).sum(),
                                200),
        "A @ b": (lambda: xp.compute(A @ b), lambda: _SA @ _BN, 247),
        "A + B": (lambda: xp.compute(A + B), lambda: (_SA + _SB).toarray(), 237),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_repeated_compute_stays_within_its_call_budget(case: str) -> None:
    run, expected, budget = _cases()[case]
    got = run()
    np.testing.assert_allclose(got if isinstance(got, float) else np.asarray(got), expected(),
                               rtol=1e-12)
    calls = python_calls(run)
    assert calls <= budget, f"{case}: {calls} Python calls per repeated compute (budget {budget})"


def test_the_count_grows_with_the_expression() -> None:
    """The counter is not blind: one more operation per compute counts more calls."""
    v, p = xp.asarray(_VN), xp.asarray(_PN)
    one = python_calls(lambda: xp.compute(v + 0.5 * p))
    assert python_calls(lambda: xp.compute(v + 0.5 * p - 0.25 * p)) > one
