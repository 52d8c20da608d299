"""The api -> optimizer -> kernels wiring: the ``compiled`` executor and ``xp.explain``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api import execution
from lazysparse.optimizer import compiled_executor


def _csr(n: int, m: int, density: float, seed: int) -> sp.csr_array:
    return sp.random_array((n, m), density=density, format="csr", random_state=seed)


def test_compiled_is_the_default_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR", raising=False)
    assert execution.default_executor_name() == "compiled"
    assert execution.get_executor() is compiled_executor
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR", "reference")
    assert execution.get_executor() is not compiled_executor


def test_structural_cases_through_the_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR", "compiled")
    a, b, c = _csr(80, 80, 0.05, 0), _csr(80, 80, 0.05, 1), _csr(80, 80, 0.05, 2)
    u, v = np.random.default_rng(0).random((80, 4)), np.random.default_rng(1).random((80, 4))
    x = np.arange(80.0)
    A, B, C = xp.asarray(a), xp.asarray(b), xp.asarray(c)
    ad, bd, cd = a.toarray(), b.toarray(), c.toarray()
    U, V, X = xp.asarray(u), xp.asarray(v), xp.asarray(x)
    cases = [
        ((A + B) * C, (ad + bd) * cd),
        (A @ B, ad @ bd),
        (A.T @ X, ad.T @ x),
        (A * (U @ V.T), ad * (u @ v.T)),
        (xp.sum(A[:, :, None] * U[:, None, :] * V[None, :, :], axis=2), ad * (u @ v.T)),
        (xp.sum(A * (A @ A)), np.sum(ad * (ad @ ad))),
        (A + 1, ad + 1),
    ]
    for got, want in cases:
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)


def test_xp_explain_reports_gustavson() -> None:
    a, b = _csr(500, 500, 0.004, 3), _csr(500, 500, 0.004, 4)
    e = xp.explain(xp.asarray(a) @ xp.asarray(b))
    (k,) = e.kernels
    assert len(k.loop_order) == 3 and k.output_format.name == "csr"
    assert "def " in k.source and "optimized plan" in str(e)
    e2 = xp.explain(xp.asarray(a).T @ xp.asarray(np.ones(500)))
    assert len(e2.kernels) == 1  # no transposed copy of A


def test_explain_rejects_non_arrays() -> None:
    from lazysparse.optimizer import explain

    with pytest.raises(TypeError, match="lazysparse arrays"):
        explain(np.ones(3))
    with pytest.raises(TypeError, match="at least one"):
        explain()
