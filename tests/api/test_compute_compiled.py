"""The lazy api-compute functions on the compiled executor (optimizer + kernels), against
NumPy: a representative subset, one sparse (csr/coo) and one dense operand each. The full
semantic matrix runs on the reference interpreter in the per-module test files."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lazysparse as xp
from tests.api.compute_helpers import lazy

_rng = np.random.default_rng(0)
a = _rng.standard_normal((12, 9))
a[a < 0.4] = 0
b = _rng.standard_normal((9, 7))
c = a > 0
m = a[:9, :9].copy()

CASES: dict[str, tuple[Callable[[Any, Any, Any], Any], Callable[[], Any]]] = {
    "sum_axis0": (lambda A, B, C: xp.sum(A, axis=0), lambda: a.sum(0)),
    "sum_all": (lambda A, B, C: xp.sum(A), lambda: a.sum()),
    "sum_keepdims": (lambda A, B, C: xp.sum(A, axis=1, keepdims=True),
                     lambda: a.sum(1, keepdims=True)),
    "prod": (lambda A, B, C: xp.prod(A, axis=1), lambda: a.prod(1)),
    "max": (lambda A, B, C: xp.max(A, axis=1), lambda: a.max(1)),
    "var": (lambda A, B, C: xp.var(A, axis=0, correction=1), lambda: a.var(0, ddof=1)),
    "argmax": (lambda A, B, C: xp.argmax(A, axis=1), lambda: a.argmax(1)),
    "argmin_flat": (lambda A, B, C: xp.argmin(A), lambda: a.argmin()),
    "where": (lambda A, B, C: xp.where(C, A, -1.0), lambda: np.where(c, a, -1.0)),
    "count_nonzero": (lambda A, B, C: xp.count_nonzero(A, axis=0),
                      lambda: np.count_nonzero(a, axis=0)),
    "any": (lambda A, B, C: xp.any(A, axis=0), lambda: a.any(0)),
    "matmul": (lambda A, B, C: xp.matmul(A, B), lambda: a @ b),
    "matvec": (lambda A, B, C: xp.matmul(A, lazy(b[:, 0])), lambda: a @ b[:, 0]),
    "vecdot": (lambda A, B, C: xp.vecdot(A, A), lambda: (a * a).sum(-1)),
    "matrix_transpose": (lambda A, B, C: xp.matrix_transpose(A), lambda: a.T),
    "einsum": (lambda A, B, C: xp.einsum("ij,jk->ki", A, B), lambda: np.einsum("ij,jk->ki", a, b)),
    "trace": (lambda A, B, C: xp.linalg.trace(lazy(m, "csr")), lambda: np.trace(m)),
    "vector_norm": (lambda A, B, C: xp.linalg.vector_norm(A, axis=1),
                    lambda: np.linalg.norm(a, axis=1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_matches_numpy(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR", "compiled")
    build, expected = CASES[name]
    out = build(lazy(a, "csr"), lazy(b), lazy(c, "coo"))
    exp = np.asarray(expected())
    got = np.asarray(out)
    assert got.shape == exp.shape
    np.testing.assert_allclose(got, exp, rtol=1e-10, atol=1e-12)
