"""engine.plan_cache: a repeated expression reuses its optimized plan, with the new call's
data and never the old one's (constants, shapes, aliasing and densities are in the key)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.engine import plan_cache


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR", raising=False)
    plan_cache.clear_plan_cache()


def _csr(seed: int, n: int = 30, density: float = 0.2) -> sp.csr_array:
    return sp.random_array((n, n), density=density, format="csr", random_state=seed)


def _stats() -> tuple[int, int]:
    return plan_cache.STATS["hits"], plan_cache.STATS["misses"]


def test_same_structure_hits_with_new_data() -> None:
    a, b, c, d = (_csr(i) for i in range(4))
    h0, m0 = _stats()
    r1 = np.asarray(xp.asarray(a) + xp.asarray(b))
    r2 = np.asarray(xp.asarray(c) + xp.asarray(d))
    h1, m1 = _stats()
    assert (h1 - h0, m1 - m0) == (1, 1)
    np.testing.assert_allclose(r1, (a + b).toarray())
    np.testing.assert_allclose(r2, (c + d).toarray())


def test_constants_aliasing_and_shapes_are_keyed() -> None:
    a, b = _csr(1), _csr(2)
    x, y = xp.asarray(a), xp.asarray(b)
    np.testing.assert_allclose(np.asarray(x * 3), a.toarray() * 3)
    np.testing.assert_allclose(np.asarray(x * 4), a.toarray() * 4)
    np.testing.assert_allclose(np.asarray(x + x), 2 * a.toarray())
    np.testing.assert_allclose(np.asarray(x + y), (a + b).toarray())
    e = _csr(5, n=40)
    np.testing.assert_allclose(np.asarray(xp.asarray(e) + xp.asarray(e.T.tocsr())),
                               (e + e.T).toarray())
    assert plan_cache.STATS["misses"] >= 5


def test_density_changes_the_key() -> None:
    sparse, dense = _csr(1, density=0.01), _csr(2, density=0.9)
    h0, m0 = _stats()
    for m in (sparse, dense):
        np.testing.assert_allclose(np.asarray(xp.asarray(m) * 2.0), m.toarray() * 2.0)
    assert _stats()[1] - m0 == 2


def test_cache_holds_no_data() -> None:
    x = xp.asarray(_csr(3))  # shares the (temporary) scipy arrays
    ref = weakref.ref(x.tensor().values)
    np.asarray(x * 2.0 + 1.0)
    del x
    gc.collect()
    assert ref() is None


def test_clear_cache_forgets_plans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a cache folder of its own: ``clear_cache`` deletes the disk cache, and the suite's
    shared one would otherwise be recompiled by every later test."""
    monkeypatch.setenv("LAZYSPARSE_CACHE_DIR", str(tmp_path))
    x = xp.asarray(_csr(4))
    np.asarray(x - 1.0)
    xp.clear_cache()
    m0 = plan_cache.STATS["misses"]
    np.asarray(xp.asarray(_csr(6)) - 1.0)
    assert plan_cache.STATS["misses"] == m0 + 1


def test_constants_of_one_class_share_a_plan_and_keep_their_values() -> None:
    """CG's ``x + alpha * p`` with a new ``alpha`` every iteration: one optimization, each
    call computed with its own constant."""
    p = np.linspace(-1.0, 1.0, 50)
    x = xp.asarray(np.zeros(50))
    h0, m0 = _stats()
    xn = np.zeros(50)
    for alpha in (0.25, 1.5, 3.75, 1e-3, 42.0):
        x = xp.compute(x + alpha * xp.asarray(p))
        xn = xn + alpha * p
        np.testing.assert_allclose(np.asarray(x), xn)
    h1, m1 = _stats()
    assert m1 - m0 == 1 and h1 - h0 == 4


@pytest.mark.parametrize("special", [0.0, 1.0, -1.0, np.nan, np.inf, -np.inf])
def test_special_constants_get_their_own_plan(special: float) -> None:
    """Values operator algebra treats specially are keyed by value: ``A * 0`` stays sparse,
    ``A + c`` keeps its fill, whatever was optimized before."""
    a = _csr(7)
    x = xp.asarray(a)
    with np.errstate(all="ignore"):
        for c in (2.5, special, 3.5):
            np.testing.assert_allclose(np.asarray(x * c + c), a.toarray() * c + c)
            np.testing.assert_allclose(np.asarray(xp.maximum(x, c)),
                                       np.maximum(a.toarray(), c))
    assert plan_cache.const_class(special) != plan_cache.const_class(2.5)
    assert plan_cache.const_class(2.5) == plan_cache.const_class(3.5)
    assert plan_cache.const_class(-2.5) != plan_cache.const_class(2.5)


def test_coinciding_constants_stay_correct() -> None:
    """Two constants of one class whose sum is 0 by coincidence: the plan optimized for
    another pair is reused and still gives the right values and fill."""
    a = _csr(8)
    x = xp.asarray(a)
    for c1, c2 in ((1.5, 2.5), (1.5, -1.5), (-2.0, 2.0), (0.5, 0.25)):
        r = (x + c1) + c2
        np.testing.assert_allclose(np.asarray(r), a.toarray() + c1 + c2)
        assert float(r.fill_value) == pytest.approx(c1 + c2)


def test_dense_fill_drift_shares_one_plan() -> None:
    """A dense iterate whose fill value drifts with the constants (``p = r + beta * p``
    with ``r`` from ``ones``) reuses one plan and one kernel."""
    r = xp.ones(64)
    p = xp.ones(64)
    pn = np.ones(64)
    h0, m0 = _stats()
    for beta in (0.5, 0.25, 0.125, 2.0, 3.0):
        p = xp.compute(r + beta * p)
        pn = 1.0 + beta * pn
        np.testing.assert_allclose(np.asarray(p), pn)
    assert _stats()[1] - m0 <= 2  # the first fill differs from the later ones at most once
