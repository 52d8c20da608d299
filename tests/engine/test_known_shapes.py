"""A compute of a known shape from its root's key (``engine.known_shapes``, issue 34): the
key it builds is the plan cache's own, token for token; a repeated compute skips the plan
and the lookup and gives the full path's values bit for bit; every case it cannot prove
takes the full path. Results checked against NumPy/scipy."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.array.materialize import build_plan
from lazysparse.engine import executors, known_shapes, plan_cache
from lazysparse.engine.tiers import CompileMode, compile_mode_set

SK = importlib.import_module("lazysparse.logic.structural_key")

_RNG = np.random.default_rng(7)
_V, _P = _RNG.random(50), _RNG.random(50)
_M = _RNG.random((6, 5))
_S = sp.random_array((30, 20), density=0.2, format="csr", rng=_RNG)


def _exprs() -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """Expressions of several structures, with NumPy's answer."""
    v, p, m, s = xp.asarray(_V), xp.asarray(_P), xp.asarray(_M), xp.asarray(_S)
    i = xp.asarray(np.arange(50))
    col = xp.asarray(_M[:, :1])
    return {
        "axpy": (lambda: v + 0.5 * p, lambda: _V + 0.5 * _P),
        "shared operand": (lambda: v * v - v, lambda: _V * _V - _V),
        "constants of kinds": (lambda: (v * np.float32(2.0) + 3) * -0.0 + i * 2,
                               lambda: (_V * np.float32(2.0) + 3) * -0.0 + np.arange(50) * 2),
        "special constants": (lambda: v * 1.0 + (p - 0.0) * -1.0,
                              lambda: _V * 1.0 + (_P - 0.0) * -1.0),
        "sum": (lambda: xp.sum(v * p), lambda: (_V * _P).sum()),
        "column sum": (lambda: xp.sum(m * 2.0, axis=0), lambda: (_M * 2.0).sum(axis=0)),
        "broadcast": (lambda: m + col * 0.25, lambda: _M + _M[:, :1] * 0.25),
        "sparse scale": (lambda: s * 3.0 + s, lambda: (_S * 3.0 + _S).toarray()),
        "matvec": (lambda: s @ xp.asarray(_RNG.random(20) * 0 + 1.5),
                   lambda: _S @ np.full(20, 1.5)),
    }


@pytest.mark.parametrize("case", list(_exprs()))
def test_the_known_key_is_the_plan_caches_key(case: str) -> None:
    """``known_key`` of an uncomputed array is ``lookup``'s key of its one-array plan."""
    build, _ = _exprs()[case]
    y = build()
    found = known_shapes.known_key(y._expr, y.ndim)
    assert found is not None
    key, sk = found
    raw, inputs, nodes = plan_cache.plan_key(build_plan((y,)))
    assert key == ("cpu", raw)
    assert len(sk.data) == len(inputs)
    assert all(a is b for a, b in zip(sk.data, inputs, strict=True))
    assert sk.params == tuple(n.val for n in nodes)


class _Lookups:
    """Counts ``plan_cache.lookup`` calls of the compiled executor (the full path)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.n = 0
        real = executors.lookup

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.n += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(executors, "lookup", counted)


@pytest.mark.parametrize("case", list(_exprs()))
def test_a_repeated_compute_runs_its_program_without_a_plan(
        monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """The second compute of a shape reaches the cached program from the key (no lookup),
    counts its hit, and gives the full path's values bit for bit and NumPy's."""
    build, want = _exprs()[case]
    with compile_mode_set(CompileMode.SYNC):
        xp.compute(build())
    y = build()
    key = known_shapes.known_key(y._expr, y.ndim)[0]  # type: ignore[index]
    # formats exact counts decided: their verdicts are read per call, by the full path
    counted = isinstance(plan_cache._CACHE.get(key), plan_cache._Counted)
    assert counted is (case == "sparse scale")
    lookups = _Lookups(monkeypatch)
    hits = plan_cache.STATS["hits"]
    fast = np.asarray(xp.compute(y))
    assert lookups.n == counted and plan_cache.STATS["hits"] == hits + 1
    monkeypatch.setattr(SK, "FAST_PATH", False)  # the full path (keys walked)
    full = np.asarray(xp.compute(build()))
    assert lookups.n == counted + 1
    np.testing.assert_array_equal(fast, full)
    np.testing.assert_allclose(fast, want(), rtol=1e-12, atol=1e-12)


def _full_path_taken(monkeypatch: pytest.MonkeyPatch, fn: Callable[[], Any]) -> bool:
    lookups = _Lookups(monkeypatch)
    fn()
    monkeypatch.undo()
    return lookups.n > 0


def test_cases_it_cannot_prove_take_the_full_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another held uncomputed array (a value the compute may keep), the eager mode,
    another executor, a requested format and a new data class all take ``lookup``; the
    values stay NumPy's."""
    v, p = xp.asarray(_V), xp.asarray(_P)
    with compile_mode_set(CompileMode.SYNC):
        xp.compute(v + 0.5 * p)
    assert not _full_path_taken(monkeypatch, lambda: xp.compute(v + 0.5 * p))
    held = xp.sum(v * 3.0)  # uncomputed, held: a candidate the full path decides on
    assert _full_path_taken(monkeypatch, lambda: xp.compute(v + 0.5 * p))
    assert float(held) == pytest.approx((_V * 3.0).sum(), rel=1e-12)
    with compile_mode_set(CompileMode.EAGER):
        assert _full_path_taken(monkeypatch, lambda: xp.compute(v + 0.5 * p))
    assert _full_path_taken(monkeypatch, lambda: xp.compute(xp.asarray(_V[:7]) + 0.5 * p[:7]))
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR", "reference")
    ref = np.asarray(xp.compute(v + 0.5 * p))
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR")
    np.testing.assert_allclose(ref, _V + 0.5 * _P, rtol=1e-12)
    s = xp.asarray(_S)
    with compile_mode_set(CompileMode.SYNC):
        xp.compute(xp.asformat(s * 2.0, "csc"))
    assert _full_path_taken(monkeypatch, lambda: xp.compute(xp.asformat(s * 2.0, "csc")))
    got = xp.compute(xp.asformat(s * 2.0, "csc"))
    np.testing.assert_allclose(np.asarray(got), (_S * 2.0).toarray(), rtol=1e-12)


def test_a_cleared_plan_cache_is_missed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path reads the plan cache itself: once cleared, the next compute misses
    (and reads the plan from disk or optimizes it), as the full path would."""
    v, p = xp.asarray(_V), xp.asarray(_P)
    with compile_mode_set(CompileMode.SYNC):
        xp.compute(v - 0.5 * p)
        plan_cache.clear_plan_cache()
        misses = plan_cache.STATS["misses"]
        got = np.asarray(xp.compute(v - 0.5 * p))
    assert plan_cache.STATS["misses"] == misses + 1
    np.testing.assert_allclose(got, _V - 0.5 * _P, rtol=1e-12)
