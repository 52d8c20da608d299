"""Degree-vector dot products of the estimates run without BLAS (issue 36): ``np.dot`` of
10k+ entries runs on OpenBLAS's thread pool, which stalled 20-30 ms per priced call next
to the kernels' threads. The sums are exact on integer degrees, and a counted product of
two different stored tensors prices itself without calling ``np.dot``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.engine.plan_cache import clear_plan_cache
from lazysparse.optimizer.degrees import dot_degrees
from tests.optimizer.skewed_data import community_terms


def test_dot_degrees_exact_on_degrees():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 1000, 50_000), rng.integers(0, 1000, 50_000)
    assert dot_degrees(a, b) == float(int((a * b).sum()))
    assert dot_degrees(a[:0], b[:0]) == 0.0


def test_pair_product_priced_without_np_dot(monkeypatch: pytest.MonkeyPatch):
    c = community_terms(2000, 12_000, 30_000, 3, seed=1)
    lc = xp.asarray(c)
    clear_plan_cache()

    def no_blas(*args, **kwargs):
        raise AssertionError("np.dot called while pricing a product")

    with monkeypatch.context() as m:
        m.setattr(np, "dot", no_blas)
        report = xp.explain(lc[:300] @ lc.T)
    assert "exact count" in str(report)  # the degree statistics were priced and counted
    got = xp.compute(lc[:300] @ lc.T)
    want = sp.csr_array(c[:300] @ c.T)
    np.testing.assert_allclose(xp.to_numpy(got), want.toarray())
