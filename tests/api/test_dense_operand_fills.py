"""Sparse stays sparse next to dense operands (issue 22, docs/api.md "The fill rule"):
row/column scaling, reciprocal scaling with zero norms, masks and thresholds keep the sparse
operand's pattern, as scipy does, whatever the spelling; the compiled path, the reference
interpreter and the lazy metadata agree; at sizes where a dense result cannot fit, a child
process under an address-space cap runs them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.formats import set_densify_limit
from tests.conftest import slow_except

from .test_random_expressions import _executor


def _data(n: int = 300, m: int = 500, density: float = 0.01, seed: int = 0) -> sp.csr_array:
    """A CSR matrix with empty rows and columns and some negative entries."""
    rng = np.random.default_rng(seed)
    x = sp.random_array((n, m), density=density, format="csr", rng=rng,
                        data_sampler=lambda size: rng.standard_normal(size))
    x = x.tolil()
    x[:7] = 0
    x[:, :5] = 0
    x = x.tocsr()
    x.eliminate_zeros()
    return x


def _row_norms(xs: sp.csr_array) -> np.ndarray:
    return np.sqrt(np.asarray(xs.multiply(xs).sum(axis=1)).ravel())


def _check(r: xp.LazyArray, want: sp.csr_array | np.ndarray, *, sparse: bool = True) -> None:
    """Values as scipy/NumPy; stored entries no more than scipy's; fill metadata agrees."""
    r = xp.compute(r)
    want_dense = want.toarray() if sp.issparse(want) else np.asarray(want)
    np.testing.assert_allclose(np.asarray(r), want_dense, rtol=1e-12, equal_nan=True)
    assert r.fill_value == r.tensor().fill_value or (
        np.isnan(r.fill_value) and np.isnan(r.tensor().fill_value))
    if sparse:
        assert r.format != "dense", r.format
        assert r.fill_value == 0
        assert r.tensor().nnz <= want.nnz, (r.tensor().nnz, want.nnz)


SPELLINGS: dict[str, Callable[[xp.LazyArray, np.ndarray], xp.LazyArray]] = {
    "X / norms[:, None]": lambda X, nr: X / xp.asarray(nr)[:, None],
    "X / numpy norms[:, None]": lambda X, nr: X / nr[:, None],
    "xp.divide(X, reshape(norms))": lambda X, nr: xp.divide(X, xp.reshape(xp.asarray(nr),
                                                                         (-1, 1))),
    "X * (1 / norms)[:, None]": lambda X, nr: X * (1.0 / xp.asarray(nr))[:, None],
    "(1 / norms)[:, None] * X": lambda X, nr: (1.0 / xp.asarray(nr))[:, None] * X,
    "X * expand_dims(1 / norms)": lambda X, nr: X * xp.expand_dims(1.0 / xp.asarray(nr),
                                                                   axis=1),
}


@pytest.mark.parametrize("executor", [None, "reference"])
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_row_normalization_spellings(spelling: str, executor: str | None) -> None:
    xs = _data()
    norms = _row_norms(xs)
    safe = np.where(norms == 0, 1.0, norms)
    want = sp.csr_array(xs.multiply(1.0 / safe[:, None]))
    with _executor(executor):
        X = xp.asarray(xs)
        _check(SPELLINGS[spelling](X, safe), want)
        if "1 /" in spelling:  # zero norms: 1 / 0 = inf meets only empty rows
            with np.errstate(divide="ignore"):
                inv = 1.0 / norms
            want0 = sp.csr_array(xs.multiply(np.where(norms == 0, 0.0, inv)[:, None]))
            _check(SPELLINGS[spelling](X, norms), want0)


@pytest.mark.parametrize("executor", [None, "reference"])
def test_lazy_norms_from_the_data(executor: str | None) -> None:
    """norms built by xp from X (an axis reduction: dense, as NumPy's) with zero rows."""
    xs = _data()
    norms = _row_norms(xs)
    with _executor(executor):
        X = xp.asarray(xs)
        n = xp.sqrt(xp.sum(X * X, axis=1))
        assert n.full
        want = sp.csr_array(xs.multiply(1.0 / np.where(norms == 0, 1.0, norms)[:, None]))
        _check(X / n[:, None], want)
        _check(X / xp.where(n == 0, 1.0, n)[:, None], want)
        _check(X * (1.0 / n)[:, None], want)


@pytest.mark.parametrize("executor", [None, "reference"])
def test_graph_and_feature_scalings(executor: str | None) -> None:
    a = _data(400, 400, 0.01, seed=1)
    a = sp.csr_array(abs(a))
    deg = np.asarray(a.sum(axis=1)).ravel()
    xs = _data(seed=2)
    std = np.asarray(xs.power(2).mean(axis=0)).ravel() - np.asarray(xs.mean(axis=0)).ravel() ** 2
    std = np.sqrt(np.maximum(std, 0))
    with _executor(executor):
        A, X = xp.asarray(a), xp.asarray(xs)
        d = xp.sum(A, axis=1)
        _check(A / xp.where(d > 0, d, 1.0)[:, None],
               a.multiply(1.0 / np.where(deg > 0, deg, 1.0)[:, None]))
        _check(A / d[:, None], a.multiply(1.0 / np.where(deg > 0, deg, 1.0)[:, None]))
        with np.errstate(divide="ignore"):
            dinv = np.where(deg > 0, 1.0 / np.sqrt(deg), 0.0)
        dv = xp.asarray(dinv)
        _check(dv[:, None] * A * dv[None, :], sp.diags_array(dinv) @ a @ sp.diags_array(dinv))
        s = np.where(std == 0, 1.0, std)
        _check(X / xp.asarray(s)[None, :], xs.multiply(1.0 / s[None, :]))
        _check(X / xp.asarray(std)[None, :],  # a zero std meets only empty columns
               xs.multiply(1.0 / s[None, :]))


@pytest.mark.parametrize("executor", [None, "reference"])
def test_masks_and_thresholds(executor: str | None) -> None:
    xs = _data(seed=3)
    dense = np.arange(xs.shape[0] * xs.shape[1], dtype=float).reshape(xs.shape)
    dense[0, 0] = np.nan
    with _executor(executor):
        X = xp.asarray(xs)
        _check(xp.where(X != 0, xp.asarray(dense), 0.0),
               sp.csr_array(xs.astype(bool).multiply(dense)))
        _check(xp.where(X > 0.5, X, 0.0), sp.csr_array(xs.multiply(xs > 0.5)))
        _check(xp.maximum(X, 0.0), xs.maximum(0))
        _check(xp.minimum(X, 0.0), xs.minimum(0))
        _check(X * xp.asarray(dense), sp.csr_array(xs.multiply(np.nan_to_num(dense))))


@pytest.mark.parametrize("executor", [None, "reference"])
def test_dense_results_stay_dense(executor: str | None) -> None:
    xs = _data(40, 30, 0.1, seed=4)
    d = np.random.default_rng(0).standard_normal(xs.shape)
    with _executor(executor):
        X, D = xp.asarray(xs), xp.asarray(d)
        for r, want in ((X + D, xs.toarray() + d), (D / (X + 1.0), d / (xs.toarray() + 1))):
            assert r.full and r.fill_value == 0
            r = xp.compute(r)
            assert r.format == "dense"
            np.testing.assert_allclose(np.asarray(r), want)


def test_sparse_fill_ieee_where_nothing_is_stored() -> None:
    """Where no operand stores an entry the value is op(fills), as IEEE says."""
    a = xp.full(3, 0.0)
    b = xp.full(3, np.inf)
    np.testing.assert_array_equal(np.asarray(a * b), [np.nan] * 3)
    np.testing.assert_array_equal(np.asarray(a / a), [np.nan] * 3)


_CAPPED = textwrap.dedent("""
    import resource, sys
    import numpy as np, scipy.sparse as sp
    import lazysparse as xp

    def run(Xs, A):
        X = xp.asarray(Xs)
        norms = np.sqrt(np.asarray(Xs.multiply(Xs).sum(axis=1)).ravel())
        safe = np.where(norms == 0, 1.0, norms)
        out = {}
        out["X / norms[:, None]"] = X / xp.asarray(safe)[:, None]
        out["X * (1 / norms)[:, None]"] = X * (1.0 / xp.asarray(norms))[:, None]
        n = xp.sqrt(xp.sum(X * X, axis=1))
        out["X / lazy norms"] = X / n[:, None]
        std = np.sqrt(np.asarray(Xs.power(2).mean(axis=0)).ravel())
        out["X / std[None, :]"] = X / xp.asarray(std)[None, :]
        out["where(X != 0, norms, 0)"] = xp.where(X != 0, xp.asarray(norms)[:, None], 0.0)
        Ad = xp.asarray(A)
        deg = xp.sum(Ad, axis=1)
        out["A / deg[:, None]"] = Ad / deg[:, None]
        for name, r in out.items():
            r = xp.compute(r)
            nnz = r.tensor().nnz
            want = A.nnz if name.startswith("A ") else Xs.nnz
            assert r.format != "dense" and nnz <= want, (name, r.format, nnz, want)
            print(name, r.format, nnz)

    rng = np.random.default_rng(0)
    small = sp.random_array((50, 80), density=0.05, format="csr", rng=rng)
    run(small, sp.csr_array(small[:, :50]))              # compile before the cap
    n, m = int(sys.argv[1]), int(sys.argv[2])
    Xs = sp.random_array((n, m), density=1e6 / (n * m), format="csr", rng=rng)
    Xs = sp.csr_array(Xs.multiply(np.arange(n)[:, None] % 11 != 0))  # empty rows
    Xs.eliminate_zeros()
    A = sp.random_array((200_000, 200_000), density=4e-6, format="csr", rng=rng)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize"))
    cap = vm + int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    run(Xs, A)
    print("ok")
""")


@pytest.mark.slow  # a fresh process at the issue's sizes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc: Linux")
def test_issue_sizes_under_a_memory_cap() -> None:
    """20k x 50k with 1M stored (a dense result: 8 GB) and a 200k-node graph (320 GB dense),
    under an address-space cap of 3 GiB above the process's size after compiling."""
    env = dict(os.environ)
    env.pop("LAZYSPARSE_EXECUTOR", None)
    proc = subprocess.run([sys.executable, "-c", _CAPPED, "20000", "50000", str(3 << 30)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), (
        proc.stdout[-3000:] + proc.stderr[-3000:])


@pytest.mark.parametrize("fill", slow_except([0.0, 1.0], [1.0]))
def test_variance_of_sparse_data_stays_sparse(fill: float) -> None:
    """``xp.std(X, axis=0)`` sums the stored entries' squared deviations and adds the
    implicit ones' at once: no dense ``X - mean`` (a 200k x 50k text matrix runs in
    tests/workflows under a memory cap)."""
    xs = _data(seed=5)
    d = xs.toarray()
    x = xp.asarray(d, format="csr", fill_value=fill) if fill else xp.asarray(xs)
    for axis in (0, 1, None):
        for c in (0, 1):
            np.testing.assert_allclose(np.asarray(xp.std(x, axis=axis, correction=c)),
                                       np.std(d, axis=axis, ddof=c), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(np.asarray(xp.var(x, axis=0, keepdims=True)),
                               np.var(d, axis=0, keepdims=True), rtol=1e-10)
    # no dense X - mean: the variance runs with a limit below the dense matrix's size
    with set_densify_limit(d.size * 8 - 1):
        np.testing.assert_allclose(np.asarray(xp.var(x, axis=0)), np.var(d, axis=0),
                                   rtol=1e-10)


@pytest.mark.parametrize("spell", ["numpy scalar", "0-d array", "python float"])
def test_zero_d_thresholds_keep_the_pattern(spell: str) -> None:
    """A NumPy scalar or a stored 0-d array broadcast against a sparse matrix is a scalar
    of its dtype: ``X > t`` keeps ``X``'s pattern whatever the spelling of ``t`` (a
    threshold from ``np.percentile`` is a NumPy scalar), with NumPy 2's dtypes."""
    xs = sp.random_array((300, 200), density=0.02, format="csr", random_state=11,
                         dtype=np.float32)
    t_np = np.float64(np.percentile(xs.data, 60))
    t = {"numpy scalar": t_np, "0-d array": xp.asarray(t_np),
         "python float": float(t_np)}[spell]
    X = xp.asarray(xs)
    M = X > t
    assert M.format != "dense" and not M.full
    ref = xs > float(t_np)
    assert M.nnz == ref.nnz
    np.testing.assert_array_equal(np.asarray(M), ref.toarray())
    Y = X * (X > t)
    assert Y.nnz == xs.multiply(ref).nnz
    scaled = X * t
    want = np.float32 if spell == "python float" else np.float64  # NEP 50
    assert scaled.dtype == want and scaled.format != "dense"
    np.testing.assert_allclose(np.asarray(scaled), xs.toarray().astype(want) * t_np,
                               rtol=1e-6)


def test_fused_product_keeps_its_pattern_inside_a_division(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Hypothesis's example: ``D1 < (C1 * C2) / D0`` fused in one kernel. Where ``C2``
    stores and ``C1`` does not, the product is implicit (its pattern is the intersection),
    so the division's implicit numerator annihilates ``0 / 0`` to 0, as the reference
    interpreter says, not NaN."""
    D1 = xp.asarray(np.array([[0.0, -2.0, 0.0]]))
    C1 = xp.asarray(sp.coo_array(np.zeros((3, 3))))
    C2 = xp.asarray(sp.coo_array(np.array([[0, 0, 0], [0, 0, 0], [0, 0.5, 0]])))
    D0 = xp.asarray(np.zeros((3, 3)))

    def run() -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(xp.compute(xp.less(D1, xp.divide(xp.multiply(C1, C2), D0))))

    got = run()
    np.testing.assert_array_equal(got, np.tile([[False, True, False]], (3, 1)))
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR", "reference")
    np.testing.assert_array_equal(got, run())
