"""The api -> engine -> optimizer -> kernels wiring: the ``compiled`` executor and
``xp.explain``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse import engine
from lazysparse.engine import compiled_executor


def _csr(n: int, m: int, density: float, seed: int) -> sp.csr_array:
    return sp.random_array((n, m), density=density, format="csr", random_state=seed)


def test_compiled_is_the_default_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR", raising=False)
    assert engine.DEFAULT_EXECUTOR == "compiled"
    assert engine.get_executor() is compiled_executor
    assert engine.executor_for("cpu") is compiled_executor
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR", "reference")
    assert engine.get_executor() is engine.reference_executor
    assert engine.executor_for("cuda") is engine.cuda_executor  # whatever the variable says
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR", "nope")
    with pytest.raises(ValueError, match="not an executor"):
        engine.get_executor()


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
    with pytest.raises(TypeError, match="lazysparse arrays"):
        xp.explain(np.ones(3))
    with pytest.raises(TypeError, match="at least one"):
        xp.explain()
