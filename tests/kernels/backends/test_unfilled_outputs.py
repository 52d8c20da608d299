"""Outputs allocated without a fill pass (``cpu_host.uninitialized``: maps whose every loop
is a full range, scalar accumulators) are written in full: with the allocation poisoned
(NaN, an integer's max, True), every result still equals NumPy's, so no entry was left to
the allocator. The random-expression corpus runs under the poison too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.kernels.backends.numba import cpu_host
from tests.api import test_random_expressions as corpus

RNG = np.random.default_rng(11)
N = 40_000  # above the NumPy runner's bound (2**14 points): the compiled kernels run


def _poisoned(n: int, dtype: Any) -> np.ndarray:
    d = np.dtype(dtype)
    value = (np.nan if d.kind in "fc" else True if d.kind == "b" else np.iinfo(d).max)
    return np.full(n, value, dtype=d)


@pytest.fixture
def poison(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def tracked(n: int, dtype: Any) -> np.ndarray:
        calls.append(n)
        return _poisoned(n, dtype)

    monkeypatch.setattr(cpu_host, "uninitialized", tracked)
    return calls  # type: ignore[return-value]


V = RNG.standard_normal(N)
W = RNG.standard_normal(N)
M = RNG.standard_normal((200, 150))
S = sp.random_array((200, 150), density=0.1, format="csr", rng=4).toarray()
I8 = RNG.integers(-50, 50, N).astype(np.int8)

CASES: list[tuple[str, Callable[[Any], Any]]] = [
    ("axpy", lambda ns: ns["v"] + 0.5 * ns["w"]),
    ("exp chain", lambda ns: ns["np"].exp(ns["v"]) * ns["w"] - 1.0),
    ("int8 map", lambda ns: ns["i8"] * 3 + 1),
    ("bool map", lambda ns: (ns["v"] > 0) & (ns["w"] < 0.5)),
    ("dense 2-d", lambda ns: ns["m"] * 2.0 - ns["m"].T.T),
    ("transposed", lambda ns: ns["m"].T + 1.0),
    ("row broadcast", lambda ns: ns["m"] + ns["m"][0][None, :]),
    ("outer", lambda ns: ns["v"][:200, None] * ns["w"][None, :150]),
    ("sparse + dense", lambda ns: ns["s"] + ns["m"]),
    ("where sparse", lambda ns: ns["np"].where(ns["s"] > 0, ns["m"], -1.0)),
    ("dot", lambda ns: ns["np"].sum(ns["v"] * ns["w"])),
    ("row sums", lambda ns: ns["np"].sum(ns["m"] * ns["m"], axis=1)),
]


def _spaces() -> tuple[dict[str, Any], dict[str, Any]]:
    lazy = {"np": xp, "v": xp.asarray(V), "w": xp.asarray(W), "m": xp.asarray(M),
            "s": xp.asarray(S, format="csr"), "i8": xp.asarray(I8)}
    ref = {"np": np, "v": V, "w": W, "m": M, "s": S, "i8": I8}
    return lazy, ref


@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_every_entry_is_written(poison: list[int], name: str, fn: Callable[[Any], Any]) -> None:
    lazy, ref = _spaces()
    got = np.asarray(xp.compute(fn(lazy)))
    with np.errstate(all="ignore"):
        want = np.asarray(fn(ref))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)


def test_maps_skip_the_fill_pass(poison: list[int]) -> None:
    """The axpy's output is allocated unfilled (and still right under the poison)."""
    v, w = xp.asarray(V), xp.asarray(W)
    before = len(poison)
    np.testing.assert_allclose(np.asarray(xp.compute(v + 0.5 * w)), V + 0.5 * W)
    assert len(poison) == before + 1


@pytest.mark.slow
def test_random_expressions_under_the_poison(poison: list[int]) -> None:
    corpus.test_random_expression_matches_numpy_and_oracle()
