"""Same computation, same schedule: every spelling of SDDMM, SpMV, Aᵀx, MTTKRP and triangle
counting compiles to the kernels of its reference spelling (structure from ``xp.explain``:
kernel count, per-loop iteration kind — a range, one driving sparse operand, a merge —
and result format), and computes the same values as NumPy."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp

N, K = 60, 5


def _csr(n: int, m: int, density: float, seed: int) -> sp.csr_array:
    return sp.csr_array(sp.random(n, m, density=density, random_state=seed, format="csr"))


def _loop_kinds(src: str) -> list[str]:
    """Iteration kind of each loop of the kernel's (first) chunk function."""
    body = src.split("def ", 2)[1] if src.count("def ") > 1 else src
    return re.findall(r"# loop \w+: (range|driver|merge)", body)


def _structure(expr: Any) -> tuple[int, list[str], str]:
    ex = xp.explain(expr)
    main = ex.kernels[-1]
    return len(ex.kernels), _loop_kinds(main.source), main.output_format.name


S_NP = _csr(N, N, 0.05, 0)
U_NP = np.random.default_rng(0).random((N, K))
V_NP = np.random.default_rng(1).random((N, K))
X_NP = np.random.default_rng(2).random(N)
SYM = ((S_NP + S_NP.T) > 0).astype(np.float64).tocsr()


def _sddmm() -> dict[str, Callable[[], Any]]:
    s, u, v = xp.asarray(S_NP), xp.asarray(U_NP), xp.asarray(V_NP)
    ed = xp.expand_dims
    return {
        "S * (U @ V.T)": lambda: s * (u @ v.T),
        "(U @ V.T) * S": lambda: (u @ v.T) * s,
        "einsum": lambda: xp.einsum("ij,ik,jk->ij", s, u, v),
        "tensordot": lambda: s * xp.tensordot(u, v, axes=([1], [1])),
        "broadcast None": lambda: xp.sum(s[:, :, None] * u[:, None, :] * v[None, :, :], axis=2),
        "expand_dims": lambda: xp.sum(ed(s, axis=2) * ed(u, axis=1) * ed(v, axis=0), axis=2),
        "where mask": lambda: xp.where(s != 0, u @ v.T, 0.0) * s,
        "transposed": lambda: (s.T * (v @ u.T)).T,
    }


def _spmv() -> dict[str, Callable[[], Any]]:
    a, x = xp.asarray(S_NP), xp.asarray(X_NP)
    return {
        "A @ x": lambda: a @ x,
        "matmul": lambda: xp.matmul(a, x),
        "einsum": lambda: xp.einsum("ij,j->i", a, x),
        "tensordot": lambda: xp.tensordot(a, x, axes=1),
        "broadcast None": lambda: xp.sum(a * x[None, :], axis=1),
        "expand_dims": lambda: xp.sum(a * xp.expand_dims(x, axis=0), axis=1),
        "vecdot": lambda: xp.vecdot(a, x),
        "x @ A.T": lambda: x @ a.T,
    }


def _atx() -> dict[str, Callable[[], Any]]:
    a, x = xp.asarray(S_NP), xp.asarray(X_NP)
    return {
        "A.T @ x": lambda: a.T @ x,
        "x @ A": lambda: x @ a,
        "matrix_transpose": lambda: xp.matrix_transpose(a) @ x,
        "einsum": lambda: xp.einsum("ij,i->j", a, x),
        "tensordot": lambda: xp.tensordot(x, a, axes=1),
        "broadcast None": lambda: xp.sum(a * x[:, None], axis=0),
        "expand_dims": lambda: xp.sum(a * xp.expand_dims(x, axis=1), axis=0),
    }


def _mttkrp() -> dict[str, Callable[[], Any]]:
    n = 12
    rng = np.random.default_rng(3)
    flat = np.unique(rng.integers(0, n**3, 150))
    ii, jj, kk = np.unravel_index(flat, (n, n, n))
    b = xp.reshape(xp.asarray(sp.coo_array((rng.random(flat.size), (ii, jj * n + kk)),
                                           shape=(n, n * n))), (n, n, n))
    c, d = xp.asarray(rng.random((n, K))), xp.asarray(rng.random((n, K)))
    ed = xp.expand_dims
    b = xp.compute(b)
    return {
        "einsum": lambda: xp.einsum("ijk,jr,kr->ir", b, c, d),
        "broadcast None": lambda: xp.sum(b[:, :, :, None] * c[None, :, None, :]
                                         * d[None, None, :, :], axis=(1, 2)),
        "expand_dims": lambda: xp.sum(ed(b, axis=3) * ed(ed(c, axis=0), axis=2)
                                      * ed(ed(d, axis=0), axis=0), axis=(1, 2)),
    }


def _triangles() -> dict[str, Callable[[], Any]]:
    a = xp.asarray(SYM)
    return {
        "sum(A * (A @ A))": lambda: xp.sum(a * (a @ a)),
        "sum((A @ A) * A)": lambda: xp.sum((a @ a) * a),
        "einsum": lambda: xp.einsum("ij,ik,kj->", a, a, a),
        "tensordot": lambda: xp.sum(a * xp.tensordot(a, a, axes=1)),
        "broadcast None": lambda: xp.sum(a[:, :, None] * a[None, :, :] * a[:, None, :]),
        "vecdot": lambda: xp.sum(xp.vecdot(a, a @ a)),
    }


COMPUTATIONS = {"sddmm": _sddmm, "spmv": _spmv, "atx": _atx, "mttkrp": _mttkrp,
                "triangles": _triangles}


@pytest.mark.parametrize("name", list(COMPUTATIONS))
def test_every_spelling_compiles_to_the_same_schedule(name: str) -> None:
    forms = COMPUTATIONS[name]()
    ref_name, ref_build = next(iter(forms.items()))
    want = _structure(ref_build())
    want_val = np.asarray(xp.compute(ref_build()))
    assert want[0] == 1, f"{ref_name}: {want}"
    for spelling, build in forms.items():
        got = _structure(build())
        assert got == want, f"{name}: {spelling!r} compiles to {got}, {ref_name!r} to {want}"
        np.testing.assert_allclose(np.asarray(xp.compute(build())), want_val, rtol=1e-12)


def test_sparse_results_stay_sparse_in_every_spelling() -> None:
    big = _csr(400, 400, 0.01, 9)
    s = xp.asarray(big)
    u = xp.asarray(np.random.default_rng(0).random((400, 4)))
    for build in (lambda: s * (u @ u.T), lambda: xp.where(s != 0, u @ u.T, 0.0) * s,
                  lambda: xp.sum(s[:, :, None] * u[:, None, :] * u[None, :, :], axis=2)):
        r = xp.compute(build())
        assert r.format == "csr" and r.nnz <= big.nnz


def test_the_mask_drives_the_loops_it_indexes() -> None:
    s, u, v = xp.asarray(S_NP), xp.asarray(U_NP), xp.asarray(V_NP)
    for expr in (xp.where(s != 0, u @ v.T, 0.0), xp.where(s != 0, u @ v.T, 0.0) * s):
        n_kernels, kinds, fmt = _structure(expr)
        assert n_kernels == 1 and kinds[:2] == ["range", "driver"] and fmt == "csr"
