"""optimizer.plan_cache: a repeated expression reuses its optimized plan, with the new call's
data and never the old one's (constants, shapes, aliasing and densities are in the key)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.optimizer import plan_cache


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


def test_clear_cache_forgets_plans() -> None:
    x = xp.asarray(_csr(4))
    np.asarray(x - 1.0)
    xp.clear_cache()
    m0 = plan_cache.STATS["misses"]
    np.asarray(xp.asarray(_csr(6)) - 1.0)
    assert plan_cache.STATS["misses"] == m0 + 1
