"""A corpus of workflows written the way users write NumPy/scipy.sparse code.

Each workflow is three plain functions over one seeded data set:

* ``data(size) -> dict`` builds the inputs with NumPy/scipy (empty rows and columns,
  zero norms and degrees, isolated and dangling nodes, negative values included);
* ``scipy_version(data) -> dict`` is the computation in scipy.sparse + NumPy idiom;
* ``lazy_version(data) -> dict`` is the same computation written as a NumPy user writes
  it with ``import lazysparse as xp`` (variables rebound in loops, ``float()`` inside
  loops, NumPy vectors and lazysparse vectors as operands, no ``xp.compute`` unless the
  workflow is the "computed" variant of a loop).

Both return the same keys; ``compare`` checks every key (``check_sparse`` for a scipy sparse
reference: values, fill value, stored-entry count and sparse format; ``check_dense`` for
NumPy arrays and scalars). ``WORKFLOWS`` maps each name to a :class:`Workflow`, callable as
``workflow(size) -> None`` (raises ``AssertionError`` on a mismatch), with its ``small``,
``large`` and ``bench`` sizes. ``tests/workflows/test_workflows.py`` runs every workflow at
its small size in-process and the large sizes in a child process under an address-space
cap (``tests/workflows/run_capped.py``); ``benchmarks/bench_workflows.py`` times the two
versions against each other.

Nothing here densifies a large result: dense comparisons run only below
``DENSE_CHECK_ELEMENTS`` elements, sparse results are compared as scipy arrays.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

import lazysparse as xp
from tests.optimizer.skewed_data import chung_lu, zipf_terms

RTOL = 1e-6  # float64 results
DENSE_CHECK_ELEMENTS = 4_000_000  # results up to this size are also compared densely


# ============================================================================== sizes

@dataclass(frozen=True)
class Size:
    """``n`` rows (documents, nodes, samples; the grid side for grid workflows), ``m``
    columns (terms, features) and about ``per_row`` stored entries per row."""

    n: int
    m: int = 0
    per_row: float = 5.0

    def __str__(self) -> str:
        dims = f"{self.n:,}x{self.m:,}" if self.m else f"n={self.n:,}"
        return f"{dims}, {self.per_row:g}/row"


@dataclass(frozen=True)
class Family:
    small: Size
    large: Size
    bench: Size


# large sizes: a dense n x m (n x n) intermediate is >= 16 GiB as float64 (>= 2 GiB as bool)
TEXT = Family(Size(2_000, 800, 5), Size(200_000, 100_000, 5), Size(200_000, 100_000, 5))
GRAPH = Family(Size(1_500, per_row=4), Size(200_000, per_row=5), Size(200_000, per_row=5))
ML = Family(Size(2_000, 300, 8), Size(200_000, 50_000, 8), Size(200_000, 50_000, 8))
GRID = Family(Size(30), Size(450), Size(450))  # n = side; side**2 unknowns
SYSTEM = Family(Size(1_500, per_row=4), Size(200_000, per_row=5), Size(200_000, per_row=5))


# ============================================================================== data

@functools.lru_cache(maxsize=4)
def term_counts(size: Size, seed: int) -> sp.csr_array:
    """A document-term count matrix: Zipf-like term frequencies, ~5 % empty documents
    (document 2 and the last one always), 10 % of the terms (and the last one) never used,
    counts >= 1 stored as float64."""
    rng = np.random.default_rng(seed)
    n, m = size.n, size.m
    lengths = rng.poisson(size.per_row, n)
    lengths[rng.random(n) < 0.05] = 0
    lengths[[2, -1]] = 0
    used = rng.permutation(m - 1)[: int(0.9 * (m - 1))]
    p = 1.0 / (np.arange(used.size) + 10.0) ** 1.1
    cols = used[rng.choice(used.size, int(lengths.sum()), p=p / p.sum())]
    rows = np.repeat(np.arange(n), lengths)
    vals = rng.geometric(0.6, rows.size).astype(np.float64)
    c = sp.coo_array((vals, (rows, cols)), shape=(n, m)).tocsr()
    c.sum_duplicates()
    c.sort_indices()
    return c


@functools.lru_cache(maxsize=4)
def features(size: Size, seed: int) -> sp.csr_array:
    """A sample-feature matrix with positive and negative values (normal, per-column
    scales), ~5 % empty rows (row 2 and the last always), 10 % empty columns."""
    rng = np.random.default_rng(seed)
    n, m = size.n, size.m
    lengths = rng.poisson(size.per_row, n)
    lengths[rng.random(n) < 0.05] = 0
    lengths[[2, -1]] = 0
    used = rng.permutation(m - 1)[: int(0.9 * (m - 1))]
    rows = np.repeat(np.arange(n), lengths)
    cols = used[rng.integers(0, used.size, rows.size)]
    scale = np.exp(rng.normal(0.0, 0.5, m))
    vals = rng.normal(0.0, 1.0, rows.size) * scale[cols]
    x = sp.coo_array((vals, (rows, cols)), shape=(n, m)).tocsr()
    x.sum_duplicates()
    x.sort_indices()
    return x


@functools.lru_cache(maxsize=4)
def digraph(size: Size, seed: int, dangling: float = 0.0) -> sp.csr_array:
    """A weighted directed graph (weights in [0.5, 1.5)) without self-loops: ~5 % isolated
    nodes (no edge in or out; node 1 and the last always) and a ``dangling`` fraction of
    nodes with in-edges but no out-edge."""
    rng = np.random.default_rng(seed)
    n = size.n
    e = int(n * size.per_row)
    rows, cols = rng.integers(0, n, e), rng.integers(0, n, e)
    isolated = rng.random(n) < 0.05
    isolated[[1, -1]] = True
    no_out = isolated | (rng.random(n) < dangling)
    keep = ~no_out[rows] & ~isolated[cols] & (rows != cols)
    rows, cols = rows[keep], cols[keep]
    flat = np.unique(rows * n + cols)
    rows, cols = flat // n, flat % n
    a = sp.csr_array((rng.random(flat.size) + 0.5, (rows, cols)), shape=(n, n))
    a.sort_indices()
    return a


@functools.lru_cache(maxsize=4)
def undirected(size: Size, seed: int) -> sp.csr_array:
    """A weighted undirected graph (symmetric, isolated nodes)."""
    a = digraph(size, seed)
    s = (a + a.T).tocsr()
    s.sort_indices()
    return s


@functools.lru_cache(maxsize=2)
def knn_graph(size: Size, seed: int) -> sp.csr_array:
    """A directed k-nearest-neighbour-like graph over points on a line: each node links
    to ``per_row`` nearby nodes with weight exp(-distance) (the same weight both ways when
    both links exist, so ``maximum(K, K.T)`` is a union); ~5 % outliers have no links."""
    rng = np.random.default_rng(seed)
    n, k = size.n, int(size.per_row)
    x = np.sort(rng.random(n))
    rows = np.repeat(np.arange(n), k)
    cols = rows + rng.integers(1, 3 * k, rows.size) * rng.choice([-1, 1], rows.size)
    outlier = rng.random(n) < 0.05
    outlier[[0, -1]] = True
    keep = (cols >= 0) & (cols < n)
    keep[keep] &= ~outlier[rows[keep]] & ~outlier[cols[keep]]
    flat = np.unique(rows[keep] * n + cols[keep])
    rows, cols = flat // n, flat % n
    w = np.exp(-np.abs(x[rows] - x[cols]) * n / 10)
    a = sp.csr_array((w, (rows, cols)), shape=(n, n))
    a.sort_indices()
    return a


@functools.lru_cache(maxsize=2)
def diag_dominant(size: Size, seed: int) -> sp.csr_array:
    """A strictly diagonally dominant matrix: signed off-diagonal entries (some rows and
    columns have none) plus a diagonal larger than each row's absolute sum."""
    off = digraph(size, seed).copy()
    rng = np.random.default_rng(seed + 1)
    off.data *= rng.choice([-1.0, 1.0], off.data.size)
    d = abs(off).sum(axis=1) + 1.0 + rng.random(size.n)
    a = (off + sp.diags_array(d)).tocsr()
    a.sort_indices()
    return a


def tridiag(s: int) -> sp.csr_array:
    """The 1-D second-difference matrix ``tridiag(-1, 2, -1)`` (s x s)."""
    return sp.diags_array([-np.ones(s - 1), 2 * np.ones(s), -np.ones(s - 1)],
                          offsets=[-1, 0, 1], format="csr")


def laplacian_2d(s: int) -> sp.csr_array:
    """The 5-point Laplacian on an s x s grid: ``kron(I, T) + kron(T, I)``."""
    t, i = tridiag(s), sp.eye_array(s, format="csr")
    return (sp.kron(i, t) + sp.kron(t, i)).tocsr()


# ============================================================================== checks

def _dense_ok(shape: tuple[int, ...]) -> bool:
    return math.prod(shape) <= DENSE_CHECK_ELEMENTS


def _atol(ref: Any, atol: float | None) -> float:
    """Default absolute floor: 1e-12 of the reference's largest magnitude (cancellation)."""
    if atol is not None:
        return atol
    data = ref.data if sp.issparse(ref) else np.asarray(ref)
    finite = np.abs(data[np.isfinite(data)]) if data.size else data
    return 1e-12 * float(finite.max()) if finite.size else 0.0


def check_sparse(label: str, r: Any, ref: Any, *, rtol: float = RTOL,
                 atol: float | None = None, nnz_factor: float = 1.0,
                 dense_past: float | None = None) -> None:
    """``r`` (a lazysparse array) equals the scipy sparse ``ref``: same shape, a sparse
    format, fill value 0, at most ``nnz_factor`` x scipy's stored-entry count, no NaN, and
    the same values (compared as sparse matrices; also densely when small). With
    ``dense_past`` (issue 36: a result past the break-even density is stored dense), a
    reference denser than it must come back dense, one sparser must stay sparse."""
    assert isinstance(r, xp.LazyArray), f"{label}: expected a lazysparse array, got {type(r)}"
    ref = sp.csr_array(ref)
    assert tuple(r.shape) == ref.shape, f"{label}: shape {r.shape}, scipy's {ref.shape}"
    xp.compute(r)
    size = math.prod(ref.shape)
    if dense_past is not None and np.count_nonzero(ref.data) > dense_past * size:
        assert r.format == "dense", (
            f"{label}: result is {r.format}, scipy's has {ref.nnz:,} of {size:,} entries "
            f"(past {dense_past:g}: dense)")
        _assert_sparse_close(label, sp.csr_array(xp.to_scipy(r)), ref, rtol, _atol(ref, atol))
        return
    assert r.format != "dense", (
        f"{label}: result is dense ({r.shape}), scipy's is sparse "
        f"({ref.nnz:,} stored of {size:,})")
    fill = r.fill_value
    assert fill == 0, f"{label}: fill value {fill!r}; scipy's implicit entries are 0"
    got = xp.to_scipy(r)
    stored = got.nnz
    assert stored <= nnz_factor * ref.nnz, (
        f"{label}: {stored:,} stored entries, scipy stores {ref.nnz:,}"
        + (f" (allowed {nnz_factor}x)" if nnz_factor != 1 else ""))
    got = sp.csr_array(got)  # sums duplicates
    _assert_sparse_close(label, got, ref, rtol, _atol(ref, atol))
    if _dense_ok(ref.shape):
        np.testing.assert_allclose(np.asarray(r), ref.toarray(), rtol=rtol,
                                   atol=_atol(ref, atol), err_msg=f"{label} (dense)")


def _assert_sparse_close(label: str, got: sp.csr_array, ref: sp.csr_array, rtol: float,
                         atol: float) -> None:
    def num(a: sp.csr_array) -> sp.csr_array:
        return a.astype(np.float64) if a.dtype.kind in "biu" else a

    g, w = num(got), num(ref)
    bad = ~np.isfinite(g.data)
    if bad.any() and np.isfinite(w.data).all():
        k = int(np.flatnonzero(bad)[0])
        i = int(np.searchsorted(g.indptr, k, side="right") - 1)
        raise AssertionError(f"{label}: stored {g.data[k]} at ({i}, {g.indices[k]}); "
                             f"scipy has {w[i, g.indices[k]]}")
    viol = (abs(g - w) - rtol * abs(w)).tocoo()
    if viol.nnz == 0:
        return
    data = np.where(np.isnan(viol.data), np.inf, viol.data)
    k = int(np.argmax(data))
    if data[k] > atol:
        i, j = int(viol.coords[0][k]), int(viol.coords[1][k])
        raise AssertionError(f"{label}: values differ at ({i}, {j}): lazysparse {g[i, j]!r}, "
                             f"scipy {w[i, j]!r} (rtol {rtol:g}, atol {atol:g})")


def check_dense(label: str, r: Any, ref: Any, *, rtol: float = RTOL,
                atol: float | None = None) -> None:
    """``r`` (a lazysparse array, a NumPy array, a float or a list of them) has ``ref``'s
    shape and values."""
    if isinstance(r, (list, tuple)):
        r = np.asarray([np.asarray(v) for v in r])
    got, want = np.asarray(r), np.asarray(ref)
    assert got.shape == want.shape, f"{label}: shape {got.shape}, reference {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=_atol(want, atol), err_msg=label)


def compare(name: str, got: dict[str, Any], want: dict[str, Any],
            nnz_factor: dict[str, float], rtol: dict[str, float],
            dense_past: dict[str, float] | None = None) -> None:
    assert got.keys() == want.keys(), f"{name}: keys {sorted(got)} vs {sorted(want)}"
    for key, ref in want.items():
        label, tol = f"{name}: {key}", rtol.get(key, RTOL)
        if sp.issparse(ref):
            check_sparse(label, got[key], ref, rtol=tol, nnz_factor=nnz_factor.get(key, 1.0),
                         dense_past=(dense_past or {}).get(key))
        else:
            check_dense(label, got[key], ref, rtol=tol)


# ============================================================================== registry

@dataclass(frozen=True)
class Workflow:
    """One workflow; calling it with a size runs both versions and compares them."""

    name: str
    family: Family
    data: Callable[[Size], dict[str, Any]]
    scipy_version: Callable[[dict[str, Any]], dict[str, Any]]
    lazy_version: Callable[[dict[str, Any]], dict[str, Any]]
    nnz_factor: dict[str, float] = field(default_factory=dict)
    rtol: dict[str, float] = field(default_factory=dict)
    large_size: Size | None = None  # overrides the family's large size
    note: str = ""
    # results stored dense past this density of scipy's (``check_sparse``), by key
    dense_past: dict[str, float] = field(default_factory=dict)

    @property
    def small(self) -> Size:
        return self.family.small

    @property
    def large(self) -> Size:
        return self.large_size or self.family.large

    @property
    def bench(self) -> Size:
        return self.large_size or self.family.bench

    def __call__(self, size: Size) -> None:
        d = self.data(size)
        want = self.scipy_version(d)
        got = self.lazy_version(d)
        compare(self.name, got, want, self.nnz_factor, self.rtol, self.dense_past)


WORKFLOWS: dict[str, Workflow] = {}


def register(name: str, family: Family, data: Callable[[Size], dict[str, Any]],
             scipy_version: Callable[[dict[str, Any]], dict[str, Any]],
             lazy_version: Callable[[dict[str, Any]], dict[str, Any]], **kw: Any) -> None:
    assert name not in WORKFLOWS, name
    WORKFLOWS[name] = Workflow(name, family, data, scipy_version, lazy_version, **kw)


def lazy_outputs(result: dict[str, Any]) -> list[Any]:
    """The lazysparse arrays among a lazy version's results (for ``xp.compute``)."""
    return [v for v in result.values() if isinstance(v, xp.LazyArray)]


def row_sums(a: Any) -> np.ndarray:
    return np.asarray(a.sum(axis=1)).ravel()


def col_sums(a: Any) -> np.ndarray:
    return np.asarray(a.sum(axis=0)).ravel()


def safe_inverse(v: np.ndarray) -> np.ndarray:
    """1 / v with 0 where v is 0."""
    return np.divide(1.0, v, out=np.zeros_like(v, dtype=np.float64), where=v != 0)


# ============================================================================== text

def text_data(size: Size) -> dict[str, Any]:
    return {"C": term_counts(size, 1)}


def _idf(df: Any, n: int) -> Any:
    return np.log((1 + n) / (1 + df)) + 1  # sklearn's smooth idf


# --- TF-IDF: idf from document frequencies, columns scaled
def tfidf_scipy(d):
    C = d["C"]
    df = col_sums(C > 0)
    idf = _idf(df, C.shape[0])
    return {"df": df, "tfidf": C.multiply(idf[None, :]).tocsr()}


def tfidf_lazy(d):
    X = xp.asarray(d["C"])
    n = X.shape[0]
    df = xp.sum(X > 0, axis=0)
    idf = xp.log((1 + n) / (1 + df)) + 1
    return {"df": df, "tfidf": X * idf[None, :]}


register("text_tfidf", TEXT, text_data, tfidf_scipy, tfidf_lazy)


# --- TF-IDF then row L2 normalization (zero norms replaced by 1), lazysparse norms
def tfidf_l2_scipy(d):
    C = d["C"]
    T = C.multiply(_idf(col_sums(C > 0), C.shape[0])[None, :]).tocsr()
    norms = np.sqrt(row_sums(T.multiply(T)))
    norms[norms == 0] = 1.0
    return {"norms": norms, "Tn": T.multiply(1.0 / norms[:, None]).tocsr()}


def tfidf_l2_lazy(d):
    X = xp.asarray(d["C"])
    n = X.shape[0]
    idf = xp.log((1 + n) / (1 + xp.sum(X > 0, axis=0))) + 1
    T = X * idf[None, :]
    norms = xp.sqrt(xp.sum(T * T, axis=1))
    norms = xp.where(norms == 0, 1.0, norms)
    return {"norms": norms, "Tn": T / norms[:, None]}


register("text_tfidf_l2", TEXT, text_data, tfidf_l2_scipy, tfidf_l2_lazy)


# --- row L2 normalization with NumPy norms: X / norms[:, None], norms a NumPy vector
def l2_numpy_scipy(d):
    C = d["C"]
    norms = np.sqrt(row_sums(C.multiply(C)))
    norms[norms == 0] = 1.0
    return {"Xn": C.multiply(1.0 / norms[:, None]).tocsr()}


def l2_numpy_lazy(d):
    C = d["C"]
    norms = np.sqrt(row_sums(C.multiply(C)))  # computed by the user with scipy
    norms[norms == 0] = 1.0
    X = xp.asarray(C)
    return {"Xn": X / norms[:, None]}


register("text_l2_numpy_norms", TEXT, text_data, l2_numpy_scipy, l2_numpy_lazy)


# --- row L1 normalization with keepdims: X / sum(X, axis=1, keepdims=True)
def l1_scipy(d):
    C = d["C"]
    s = row_sums(C)
    s[s == 0] = 1.0
    return {"P": C.multiply(1.0 / s[:, None]).tocsr()}


def l1_lazy(d):
    X = xp.asarray(d["C"])
    s = xp.sum(X, axis=1, keepdims=True)
    return {"P": X / xp.where(s == 0, 1.0, s)}


register("text_l1_keepdims", TEXT, text_data, l1_scipy, l1_lazy)


# --- X * (1.0 / norms)[:, None] with empty documents: 1/0 = inf multiplies no stored
# entry, so (as in scipy's X.multiply) empty rows stay empty and nothing is NaN
def l2_inverse_scipy(d):
    C = d["C"]
    norms = np.sqrt(row_sums(C.multiply(C)))
    with np.errstate(divide="ignore"):
        inv = 1.0 / norms
    return {"Xn": C.multiply(inv[:, None]).tocsr()}


def l2_inverse_lazy(d):
    X = xp.asarray(d["C"])
    norms = xp.linalg.vector_norm(X, axis=1)
    return {"Xn": X * (1.0 / norms)[:, None]}


def l2_inverse_numpy_lazy(d):
    C = d["C"]
    norms = np.sqrt(row_sums(C.multiply(C)))
    with np.errstate(divide="ignore"):
        inv = 1.0 / norms  # inf for the empty documents
    X = xp.asarray(C)
    return {"Xn": X * inv[:, None]}


register("text_l2_inverse_inf", TEXT, text_data, l2_inverse_scipy, l2_inverse_lazy)
register("text_l2_inverse_inf_numpy", TEXT, text_data, l2_inverse_scipy, l2_inverse_numpy_lazy)


# --- binarization: X > 0, its counts, a binary bag of words
def binarize_scipy(d):
    C = d["C"]
    B = C > 0
    return {"B": B, "terms_per_doc": row_sums(B), "docs_per_term": col_sums(B),
            "Xb": B.astype(np.float64), "repeated_terms": row_sums(C > 1)}


def binarize_lazy(d):
    X = xp.asarray(d["C"])
    B = X > 0
    return {"B": B, "terms_per_doc": xp.sum(B, axis=1), "docs_per_term": xp.sum(B, axis=0),
            "Xb": xp.astype(B, xp.float64), "repeated_terms": xp.sum(X > 1, axis=1)}


register("text_binarize_counts", TEXT, text_data, binarize_scipy, binarize_lazy)


# --- n-grams: unigram and bigram counts side by side, min_df filtering, binary counts
def ngram_data(size: Size) -> dict[str, Any]:
    return {"C1": term_counts(size, 1), "C2": term_counts(size, 2)}


def ngram_scipy(d):
    C = sp.hstack([d["C1"], d["C2"]], format="csr")
    df = col_sums(C > 0)
    keep = np.flatnonzero(df >= 2)
    Cf = C[:, keep]
    Bf = (Cf > 0).astype(np.float64)
    return {"df": df, "Cf": Cf, "Bf": Bf, "features_per_doc": row_sums(Bf)}


def ngram_lazy(d):
    X = xp.concat([xp.asarray(d["C1"]), xp.asarray(d["C2"])], axis=1)
    df = xp.sum(X > 0, axis=0)
    keep = np.flatnonzero(np.asarray(df) >= 2)
    Xf = X[:, keep]
    Bf = xp.astype(Xf > 0, xp.float64)
    return {"df": df, "Cf": Xf, "Bf": Bf, "features_per_doc": xp.sum(Bf, axis=1)}


register("text_ngrams_min_df", TEXT, ngram_data, ngram_scipy, ngram_lazy)


# --- cosine similarity of the first k documents against all, top-k per row
K_QUERY, TOP = 6, 10  # document 2 (empty) is among the queries


def cosine_scipy(d):
    C = d["C"]
    norms = np.sqrt(row_sums(C.multiply(C)))
    Xn = C.multiply(1.0 / np.where(norms > 0, norms, 1.0)[:, None]).tocsr()
    S = (Xn[:K_QUERY] @ Xn.T).tocsr()
    top = np.stack([np.sort(S[[i]].toarray().ravel())[::-1][:TOP] for i in range(K_QUERY)])
    return {"S": S, "top": top}


def cosine_lazy(d):
    X = xp.asarray(d["C"])
    norms = xp.linalg.vector_norm(X, axis=1)
    Xn = X / xp.where(norms > 0, norms, 1.0)[:, None]
    S = Xn[:K_QUERY] @ Xn.T
    tops = []
    for i in range(K_QUERY):
        row = S[i]
        order = xp.argsort(row, descending=True)[:TOP]
        tops.append(xp.take(row, order))
    return {"S": S, "top": xp.stack(tops)}


register("text_cosine_topk", TEXT, text_data, cosine_scipy, cosine_lazy)


# --- sublinear tf (1 + log tf on stored counts) and log1p, times idf
def sublinear_scipy(d):
    C = d["C"]
    idf = _idf(col_sums(C > 0), C.shape[0])
    L = C.copy()
    L.data = 1.0 + np.log(L.data)
    P = C.copy()
    P.data = np.log1p(P.data)
    return {"sublinear": L.multiply(idf[None, :]).tocsr(),
            "log1p": P.multiply(idf[None, :]).tocsr()}


def sublinear_lazy(d):
    X = xp.asarray(d["C"])
    n = X.shape[0]
    idf = xp.log((1 + n) / (1 + xp.sum(X > 0, axis=0))) + 1
    tf = xp.where(X > 0, 1.0 + xp.log(X), 0.0)
    return {"sublinear": tf * idf[None, :], "log1p": xp.log1p(X) * idf[None, :]}


register("text_sublinear_tf", TEXT, text_data, sublinear_scipy, sublinear_lazy)


# ============================================================================== graphs

def digraph_data(size: Size) -> dict[str, Any]:
    return {"G": digraph(size, 5, dangling=0.05)}


def undirected_data(size: Size) -> dict[str, Any]:
    return {"G": undirected(size, 6)}


# --- degrees
def degree_scipy(d):
    G = d["G"]
    out = row_sums(G)
    return {"out": out, "in": col_sums(G), "neighbours": np.diff(G.indptr),
            "isolated": float(np.sum((out == 0) & (col_sums(G) == 0)))}


def degree_lazy(d):
    A = xp.asarray(d["G"])
    out, inn = xp.sum(A, axis=1), xp.sum(A, axis=0)
    return {"out": out, "in": inn, "neighbours": xp.count_nonzero(A, axis=1),
            "isolated": float(xp.sum((out == 0) & (inn == 0)))}


register("graph_degree", GRAPH, digraph_data, degree_scipy, degree_lazy)


# --- random-walk matrix A / deg[:, None], isolated nodes: deg 0 -> 1 (both spellings)
def random_walk_scipy(d):
    G = d["G"]
    deg = row_sums(G)
    P = (sp.diags_array(1.0 / np.where(deg > 0, deg, 1.0)) @ G).tocsr()
    return {"P": P, "P_numpy_deg": P, "row_sums": row_sums(P)}


def random_walk_lazy(d):
    G = d["G"]
    A = xp.asarray(G)
    deg = xp.sum(A, axis=1)
    P = A / xp.where(deg > 0, deg, 1)[:, None]
    deg_np = row_sums(G)
    deg_np[deg_np == 0] = 1
    return {"P": P, "P_numpy_deg": A / deg_np[:, None], "row_sums": xp.sum(P, axis=1)}


register("graph_random_walk", GRAPH, digraph_data, random_walk_scipy, random_walk_lazy)


# --- symmetric normalization D^-1/2 A D^-1/2, written dinv[:, None] * A * dinv[None, :]
def sym_norm_scipy(d):
    G = d["G"]
    dinv = np.sqrt(safe_inverse(row_sums(G)))
    Dh = sp.diags_array(dinv)
    return {"dinv": dinv, "N": (Dh @ G @ Dh).tocsr()}


def sym_norm_lazy(d):
    A = xp.asarray(d["G"])
    deg = xp.sum(A, axis=1)
    dinv = 1.0 / xp.sqrt(deg)
    dinv[deg == 0] = 0.0
    return {"dinv": dinv, "N": dinv[:, None] * A * dinv[None, :]}


register("graph_sym_norm", GRAPH, undirected_data, sym_norm_scipy, sym_norm_lazy)


# --- Laplacian D - A with D built by scipy from the degrees and passed in
def laplacian_diags_scipy(d):
    G = d["G"]
    L = (sp.diags_array(row_sums(G)) - G).tocsr()
    return {"L": L, "Lv": L @ np.linspace(0.0, 1.0, G.shape[0])}


def laplacian_diags_lazy(d):
    A = xp.asarray(d["G"])
    deg = xp.sum(A, axis=1)
    D = sp.diags_array(np.asarray(deg))  # the user builds the diagonal with scipy
    L = D - A
    return {"L": L, "Lv": L @ xp.linspace(0.0, 1.0, A.shape[0])}


# explicit zeros: D stores a 0 for each isolated node (sp.diags_array keeps them) and
# scipy's subtraction drops those results; with ~5 % isolated nodes and ~10 entries per
# row this is far below 1.5x
register("graph_laplacian_diags", GRAPH, undirected_data, laplacian_diags_scipy,
         laplacian_diags_lazy, nnz_factor={"L": 1.5})


# --- Laplacians from xp.eye: D - A and the normalized I - D^-1/2 A D^-1/2
def laplacian_eye_scipy(d):
    G = d["G"]
    deg = row_sums(G)
    Dh = sp.diags_array(np.sqrt(safe_inverse(deg)))
    return {"L": (sp.diags_array(deg) - G).tocsr(),
            "Lsym": (sp.eye_array(G.shape[0]) - Dh @ G @ Dh).tocsr()}


def laplacian_eye_lazy(d):
    A = xp.asarray(d["G"])
    n = A.shape[0]
    deg = xp.sum(A, axis=1)
    I = xp.eye(n)  # noqa: E741
    L = deg[:, None] * I - A
    dinv = xp.where(deg > 0, 1.0 / xp.sqrt(xp.where(deg > 0, deg, 1.0)), 0.0)
    return {"L": L, "Lsym": I - dinv[:, None] * A * dinv[None, :]}


# explicit zeros: deg * I is 0 on the diagonal of isolated nodes (see graph_laplacian_diags)
register("graph_laplacian_eye", GRAPH, undirected_data, laplacian_eye_scipy,
         laplacian_eye_lazy, nnz_factor={"L": 1.5})


# --- PageRank by power iteration (dangling nodes spread their rank evenly)
ALPHA, PR_ITERS = 0.85, 12


def pagerank_scipy(d):
    G = d["G"]
    n = G.shape[0]
    deg = row_sums(G)
    P = (sp.diags_array(safe_inverse(deg)) @ G).tocsr()
    dangling = (deg == 0).astype(np.float64)
    x, errs = np.full(n, 1.0 / n), []
    for _ in range(PR_ITERS):
        x_old = x
        x = ALPHA * (P.T @ x) + (ALPHA * (dangling @ x) + (1 - ALPHA)) / n
        errs.append(float(np.abs(x - x_old).sum()))
    return {"x": x, "errs": np.array(errs), "total": float(x.sum())}


def _pagerank_lazy(d, computed: bool):
    A = xp.asarray(d["G"])
    n = A.shape[0]
    deg = xp.sum(A, axis=1)
    P = A / xp.where(deg > 0, deg, 1.0)[:, None]
    dangling = xp.astype(deg == 0, xp.float64)
    x, errs = xp.full(n, 1.0 / n), []
    for _ in range(PR_ITERS):
        x_old = x
        x = ALPHA * (P.T @ x) + (ALPHA * xp.vecdot(dangling, x) + (1 - ALPHA)) / n
        if computed:
            x = xp.compute(x)
        errs.append(float(xp.sum(xp.abs(x - x_old))))
    return {"x": x, "errs": errs, "total": float(xp.sum(x))}


register("graph_pagerank_natural", GRAPH, digraph_data, pagerank_scipy,
         functools.partial(_pagerank_lazy, computed=False))
register("graph_pagerank_computed", GRAPH, digraph_data, pagerank_scipy,
         functools.partial(_pagerank_lazy, computed=True))


# --- semi-supervised label propagation: F = where(labeled, Y0, P @ F)
LP_ITERS, CLASSES = 10, 3


def label_data(size: Size) -> dict[str, Any]:
    G = undirected(size, 6)
    rng = np.random.default_rng(7)
    n = G.shape[0]
    labeled = rng.random(n) < 0.1
    Y0 = np.zeros((n, CLASSES))
    Y0[labeled, rng.integers(0, CLASSES, n)[labeled]] = 1.0
    return {"G": G, "labeled": labeled, "Y0": Y0}


def label_scipy(d):
    G, labeled, Y0 = d["G"], d["labeled"], d["Y0"]
    P = (sp.diags_array(safe_inverse(row_sums(G))) @ G).tocsr()
    F = Y0
    for _ in range(LP_ITERS):
        F = np.where(labeled[:, None], Y0, P @ F)
    return {"F": F, "pred": np.argmax(F, axis=1)}


def _label_lazy(d, computed: bool):
    A = xp.asarray(d["G"])
    Y0 = d["Y0"]  # a NumPy array, used as an operand as is
    deg = xp.sum(A, axis=1)
    P = A / xp.where(deg > 0, deg, 1.0)[:, None]
    labeled = xp.asarray(d["labeled"])
    F = xp.asarray(Y0)
    for _ in range(LP_ITERS):
        F = xp.where(labeled[:, None], Y0, P @ F)
        if computed:
            F = xp.compute(F)
    return {"F": F, "pred": xp.argmax(F, axis=1)}


register("graph_label_propagation_natural", GRAPH, label_data, label_scipy,
         functools.partial(_label_lazy, computed=False))
register("graph_label_propagation_computed", GRAPH, label_data, label_scipy,
         functools.partial(_label_lazy, computed=True))


# --- kNN graph symmetrization
def knn_data(size: Size) -> dict[str, Any]:
    return {"K": knn_graph(size, 8)}


register("graph_knn_maximum", GRAPH, knn_data,
         lambda d: {"S": d["K"].maximum(d["K"].T).tocsr()},
         lambda d: (lambda A: {"S": xp.maximum(A, A.T)})(xp.asarray(d["K"])))
register("graph_knn_mean", GRAPH, knn_data,
         lambda d: {"S": ((d["K"] + d["K"].T) / 2).tocsr()},
         lambda d: (lambda A: {"S": (A + A.T) / 2})(xp.asarray(d["K"])))


# --- power iteration for the leading eigenvector of a symmetric graph
POWER_ITERS = 15


def power_scipy(d):
    G = d["G"]
    n = G.shape[0]
    v, lams = np.ones(n) / math.sqrt(n), []
    for _ in range(POWER_ITERS):
        w = G @ v
        lam = float(np.linalg.norm(w))
        v = w / lam
        lams.append(lam)
    return {"v": v, "lams": np.array(lams)}


def _power_lazy(d, computed: bool):
    A = xp.asarray(d["G"])
    n = A.shape[0]
    v, lams = xp.ones(n) / math.sqrt(n), []
    for _ in range(POWER_ITERS):
        w = A @ v
        lam = float(xp.linalg.vector_norm(w))
        v = w / lam
        if computed:
            v = xp.compute(v)
        lams.append(lam)
    return {"v": v, "lams": lams}


register("graph_power_iteration_natural", GRAPH, undirected_data, power_scipy,
         functools.partial(_power_lazy, computed=False))
register("graph_power_iteration_computed", GRAPH, undirected_data, power_scipy,
         functools.partial(_power_lazy, computed=True))


# --- common neighbours of a few query nodes (an isolated one included) with every node
def common_scipy(d):
    G = d["G"]
    B = (G > 0).astype(np.float64)
    q = np.array([0, 1, 3, 5, G.shape[0] - 1])
    return {"CN": (B[q] @ B).tocsr()}


def common_lazy(d):
    A = xp.asarray(d["G"])
    B = xp.astype(A > 0, xp.float64)
    q = np.array([0, 1, 3, 5, A.shape[0] - 1])
    return {"CN": B[q] @ B}


register("graph_common_neighbours", GRAPH, undirected_data, common_scipy, common_lazy)


# ============================================================================== ML

def ml_data(size: Size) -> dict[str, Any]:
    X = features(size, 3)
    rng = np.random.default_rng(4)
    w_true = rng.normal(0.0, 1.0, X.shape[1])
    y = ((X @ w_true + rng.normal(0.0, 0.1, X.shape[0])) > 0).astype(np.float64)
    return {"X": X, "y": y}


# --- logistic regression, full-batch gradient descent
LR, STEPS = 0.5, 6


def logreg_scipy(d):
    X, y = d["X"], d["y"]
    n, m = X.shape
    w, losses = np.zeros(m), []
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-(X @ w)))
        w = w - LR * (X.T @ (p - y)) / n
        losses.append(float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))))
    return {"w": w, "losses": np.array(losses)}


def _logreg_lazy(d, computed: bool):
    X = xp.asarray(d["X"])
    y = d["y"] if not computed else xp.asarray(d["y"])  # NumPy and lazysparse labels
    n, m = X.shape
    w, losses = xp.zeros(m), []
    for _ in range(STEPS):
        p = 1 / (1 + xp.exp(-(X @ w)))
        w = w - LR * (X.T @ (p - y)) / n
        if computed:
            w = xp.compute(w)
        losses.append(float(-xp.mean(y * xp.log(p) + (1 - y) * xp.log(1 - p))))
    return {"w": w, "losses": losses}


register("ml_logreg_natural", ML, ml_data, logreg_scipy,
         functools.partial(_logreg_lazy, computed=False))
register("ml_logreg_computed", ML, ml_data, logreg_scipy,
         functools.partial(_logreg_lazy, computed=True))


# --- linear regression, gradient steps with the loss observed each step
LIN_LR = 0.2


def linreg_scipy(d):
    X, y = d["X"], d["y"]
    n, m = X.shape
    w, mse = np.zeros(m), []
    for _ in range(STEPS):
        r = X @ w - y
        mse.append(float(r @ r) / n)
        w = w - LIN_LR * (X.T @ r) / n
    return {"w": w, "mse": np.array(mse)}


def linreg_lazy(d):
    X, y = xp.asarray(d["X"]), xp.asarray(d["y"])
    n, m = X.shape
    w, mse = xp.zeros(m), []
    for _ in range(STEPS):
        r = X @ w - y
        mse.append(float(xp.vecdot(r, r)) / n)
        w = w - LIN_LR * (X.T @ r) / n
    return {"w": w, "mse": mse}


register("ml_linreg_gd", ML, ml_data, linreg_scipy, linreg_lazy)


# --- feature scaling by the column standard deviation (zeros replaced by 1)
def std_scipy(d):
    X = d["X"]
    mean = col_sums(X) / X.shape[0]
    var = np.maximum(col_sums(X.multiply(X)) / X.shape[0] - mean**2, 0.0)
    std = np.sqrt(var)
    std[std == 0] = 1.0
    return {"std": std, "Xs": X.multiply(1.0 / std[None, :]).tocsr()}


def std_lazy(d):
    X = xp.asarray(d["X"])
    std = xp.std(X, axis=0)
    std = xp.where(std == 0, 1.0, std)
    return {"std": std, "Xs": X / std[None, :]}


register("ml_standard_scale", ML, ml_data, std_scipy, std_lazy)


# --- max-abs scaling
def maxabs_scipy(d):
    X = d["X"]
    s = abs(X).max(axis=0).toarray().ravel()
    s[s == 0] = 1.0
    return {"scale": s, "Xs": X.multiply(1.0 / s[None, :]).tocsr()}


def maxabs_lazy(d):
    X = xp.asarray(d["X"])
    s = xp.max(xp.abs(X), axis=0)
    s = xp.where(s == 0, 1.0, s)
    return {"scale": s, "Xs": X / s[None, :]}


register("ml_maxabs_scale", ML, ml_data, maxabs_scipy, maxabs_lazy)


# --- thresholding: X * (X > t) and where(X > t, X, 0)
THRESH = 0.5

register("ml_threshold_mask", ML, ml_data,
         lambda d: {"Xt": d["X"].multiply(d["X"] > THRESH).tocsr()},
         lambda d: (lambda X: {"Xt": X * (X > THRESH)})(xp.asarray(d["X"])))
register("ml_threshold_where", ML, ml_data,
         lambda d: {"Xt": d["X"].multiply(d["X"] > THRESH).tocsr()},
         lambda d: (lambda X: {"Xt": xp.where(X > THRESH, X, 0.0)})(xp.asarray(d["X"])))

# --- ReLU of a matrix with negative values
register("ml_relu", ML, ml_data,
         lambda d: {"R": d["X"].maximum(0).tocsr()},
         lambda d: {"R": xp.maximum(xp.asarray(d["X"]), 0)})


# --- clipping and signed log compression (both keep 0 at 0)
def squash_scipy(d):
    X = d["X"]
    Cl, Sl = X.copy(), X.copy()
    Cl.data = np.clip(Cl.data, -1.0, 1.0)
    Sl.data = np.sign(Sl.data) * np.log1p(np.abs(Sl.data))
    return {"clip": Cl, "signed_log": Sl}


def squash_lazy(d):
    X = xp.asarray(d["X"])
    return {"clip": xp.clip(X, -1.0, 1.0), "signed_log": xp.sign(X) * xp.log1p(xp.abs(X))}


register("ml_clip_signed_log", ML, ml_data, squash_scipy, squash_lazy)


# --- co-occurrence B.T @ B of binarized term counts
def cooc_scipy(d):
    B = (d["C"] > 0).astype(np.int64)
    return {"C": (B.T @ B).tocsr()}


def cooc_lazy(d):
    X = xp.asarray(d["C"])
    B = xp.astype(X > 0, xp.int64)
    return {"C": B.T @ B}


register("ml_cooccurrence", TEXT, text_data, cooc_scipy, cooc_lazy)


# --- Gram matrix of a few random rows (an empty row included)
def _gram_rows(n: int) -> np.ndarray:
    idx = np.random.default_rng(12).choice(n, 64, replace=False)
    idx[0] = 2  # an empty row
    return idx


def gram_scipy(d):
    Xs = d["X"][_gram_rows(d["X"].shape[0])]
    return {"G": (Xs @ Xs.T).tocsr()}


def gram_lazy(d):
    X = xp.asarray(d["X"])
    Xs = X[_gram_rows(X.shape[0])]
    return {"G": Xs @ Xs.T}


register("ml_gram_rows", ML, ml_data, gram_scipy, gram_lazy)


# --- mini-batch SGD over random row index arrays: X[idx] @ w
BATCHES, BATCH = 8, 256


def _batches(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(13)
    return [rng.choice(n, min(BATCH, n), replace=False) for _ in range(BATCHES)]


def minibatch_scipy(d):
    X, y = d["X"], d["y"]
    w, preds = np.zeros(X.shape[1]), []
    for idx in _batches(X.shape[0]):
        Xb = X[idx]
        pred = Xb @ w
        preds.append(pred)
        w = w - 0.1 * (Xb.T @ (pred - y[idx])) / len(idx)
    return {"w": w, "preds": np.stack(preds)}


def minibatch_lazy(d):
    X, y = xp.asarray(d["X"]), d["y"]
    w, preds = xp.zeros(X.shape[1]), []
    for idx in _batches(X.shape[0]):
        Xb = X[idx]
        pred = Xb @ w
        preds.append(pred)
        w = w - 0.1 * (Xb.T @ (pred - y[idx])) / len(idx)
    return {"w": w, "preds": preds}


register("ml_minibatch_sgd", ML, ml_data, minibatch_scipy, minibatch_lazy)


# --- multinomial naive Bayes on term counts
NB_ALPHA = 1.0


def nb_data(size: Size) -> dict[str, Any]:
    C = term_counts(size, 1)
    cls = np.random.default_rng(14).integers(0, CLASSES, C.shape[0])
    return {"C": C, "Y": np.eye(CLASSES)[cls]}


def nb_scipy(d):
    C, Y = d["C"], d["Y"]
    fc = np.asarray(C.T @ Y).T + NB_ALPHA
    logp = np.log(fc) - np.log(fc.sum(axis=1, keepdims=True))
    prior = np.log(Y.sum(axis=0) / Y.shape[0])
    scores = C @ logp.T + prior[None, :]
    return {"logp": logp, "scores": scores, "pred": np.argmax(scores, axis=1)}


def nb_lazy(d):
    X, Y = xp.asarray(d["C"]), d["Y"]
    fc = Y.T @ X + NB_ALPHA  # NumPy on the left defers to lazysparse
    logp = xp.log(fc) - xp.log(xp.sum(fc, axis=1, keepdims=True))
    prior = np.log(Y.sum(axis=0) / Y.shape[0])
    scores = X @ logp.T + prior[None, :]
    return {"logp": logp, "scores": scores, "pred": xp.argmax(scores, axis=1)}


register("ml_naive_bayes", TEXT, nb_data, nb_scipy, nb_lazy)


# ============================================================================== science

# --- Jacobi iteration on a diagonally dominant system: x <- x + (b - A x) / d
JACOBI_ITERS = 20


def jacobi_data(size: Size) -> dict[str, Any]:
    A = diag_dominant(size, 9)
    return {"A": A, "b": np.random.default_rng(10).normal(size=A.shape[0])}


def jacobi_scipy(d):
    A, b = d["A"], d["b"]
    dg = A.diagonal()
    x, res = np.zeros(A.shape[0]), []
    for _ in range(JACOBI_ITERS):
        x = x + (b - A @ x) / dg
        res.append(float(np.linalg.norm(b - A @ x)))
    return {"d": dg, "x": x, "res": np.array(res)}


def jacobi_lazy(d):
    A, b = xp.asarray(d["A"]), d["b"]
    dg = xp.linalg.diagonal(A)
    x, res = xp.zeros(A.shape[0]), []
    for _ in range(JACOBI_ITERS):
        x = x + (b - A @ x) / dg
        res.append(float(xp.linalg.vector_norm(b - A @ x)))
    return {"d": dg, "x": x, "res": res}


register("sci_jacobi", SYSTEM, jacobi_data, jacobi_scipy, jacobi_lazy)


# --- Jacobi by splitting: R = A - diag(d), x <- (b - R x) / d
SPLIT_ITERS = 8


def splitting_scipy(d):
    A, b = d["A"], d["b"]
    dg = A.diagonal()
    R = (A - sp.diags_array(dg)).tocsr()
    x, res = np.zeros(A.shape[0]), []
    for _ in range(SPLIT_ITERS):
        x = (b - R @ x) / dg
        res.append(float(np.linalg.norm(b - A @ x)))
    return {"R": R, "x": x, "res": np.array(res)}


def splitting_lazy(d):
    A, b = xp.asarray(d["A"]), d["b"]
    n = A.shape[0]
    dg = xp.linalg.diagonal(A)
    R = A - xp.eye(n) * dg
    x, res = xp.zeros(n), []
    for _ in range(SPLIT_ITERS):
        x = (b - R @ x) / dg
        res.append(float(xp.linalg.vector_norm(b - A @ x)))
    return {"R": R, "x": x, "res": res}


# explicit zeros: the diagonal of A - diag(d) cancels to 0 (scipy drops those results),
# one per row against ~10 stored per row: < 1.5x.
# `xp.eye(n) * d` reads the dense diagonal by position (O(n)); R (sparse, held) fuses
# into each iteration's `R @ x`: one pass over A's rows, as reading a stored R would be.
register("sci_jacobi_splitting", SYSTEM, jacobi_data, splitting_scipy, splitting_lazy,
         nnz_factor={"R": 1.5})


# --- conjugate gradient on the 2-D Laplacian, written naturally
CG_ITERS = 25


def cg_data(size: Size) -> dict[str, Any]:
    s = size.n
    b = np.random.default_rng(11).normal(size=s * s)
    b[: s * s // 10] = 0.0
    return {"L": laplacian_2d(s), "b": b}


def cg_scipy(d):
    A, b = d["L"], d["b"]
    x = np.zeros(A.shape[0])
    r = b - A @ x
    p = r
    rr, hist = float(r @ r), []
    for _ in range(CG_ITERS):
        Ap = A @ p
        alpha = rr / float(p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rr_new = float(r @ r)
        p = r + (rr_new / rr) * p
        rr = rr_new
        hist.append(rr)
    return {"x": x, "rr": np.array(hist)}


def _cg_lazy(d, computed: bool):
    A, b = xp.asarray(d["L"]), xp.asarray(d["b"])
    x = xp.zeros(A.shape[0])
    r = b - A @ x
    p = r
    rr, hist = float(xp.vecdot(r, r)), []
    for _ in range(CG_ITERS):
        Ap = A @ p
        alpha = rr / float(xp.vecdot(p, Ap))
        x = x + alpha * p
        r = r - alpha * Ap
        rr_new = float(xp.vecdot(r, r))
        p = r + (rr_new / rr) * p
        if computed:
            x, r, p = xp.compute(x, r, p)
        rr = rr_new
        hist.append(rr)
    return {"x": x, "rr": hist}


register("sci_cg_natural", GRID, cg_data, cg_scipy,
         functools.partial(_cg_lazy, computed=False))
register("sci_cg_computed", GRID, cg_data, cg_scipy,
         functools.partial(_cg_lazy, computed=True))


# --- 2-D Laplacian assembled with xp ops (kron as a broadcast product) and a matvec
def grid_data(size: Size) -> dict[str, Any]:
    s = size.n
    g = np.linspace(0.0, 1.0, s)
    u = np.sin(np.pi * g)[:, None] * np.cos(3 * g)[None, :]
    return {"s": s, "u": u.ravel()}


def assemble_scipy(d):
    s, u = d["s"], d["u"]
    L = laplacian_2d(s)
    return {"T": tridiag(s), "L": L, "Lu": L @ u}


def assemble_lazy(d):
    s, u = d["s"], d["u"]
    I = xp.eye(s)  # noqa: E741
    T = 2 * I - xp.eye(s, k=1) - xp.eye(s, k=-1)
    L4 = I[:, None, :, None] * T[None, :, None, :] + T[:, None, :, None] * I[None, :, None, :]
    L = xp.reshape(L4, (s * s, s * s))
    return {"T": T, "L": L, "Lu": L @ u}


register("sci_laplacian2d_xp", GRID, grid_data, assemble_scipy, assemble_lazy)


# --- 2-D Laplacian from scipy's kron, passed in; shifted operator and residual
SHIFT = 0.5


def shifted_scipy(d):
    s, u = d["s"], d["u"]
    L = laplacian_2d(s)
    M = (L + SHIFT * sp.eye_array(s * s)).tocsr()
    f = M @ u
    return {"M": M, "Mu": f, "res": float(np.linalg.norm(M @ (u + 1e-3) - f))}


def shifted_lazy(d):
    s, u = d["s"], d["u"]
    t, i = tridiag(s), sp.eye_array(s)
    L = xp.asarray(sp.kron(i, t) + sp.kron(t, i))
    M = L + SHIFT * xp.eye(s * s)
    f = M @ u
    return {"M": M, "Mu": f, "res": float(xp.linalg.vector_norm(M @ (u + 1e-3) - f))}


register("sci_laplacian2d_scipy_shift", GRID, grid_data, shifted_scipy, shifted_lazy)


# --- explicit heat equation steps u <- u - dt * L u, max observed each step
HEAT_STEPS, DT = 15, 0.2


def heat_scipy(d):
    L, u = laplacian_2d(d["s"]), d["u"]
    peaks = []
    for _ in range(HEAT_STEPS):
        u = u - DT * (L @ u)
        peaks.append(float(np.max(u)))
    return {"u": u, "peaks": np.array(peaks)}


def heat_lazy(d):
    L, u = xp.asarray(laplacian_2d(d["s"])), xp.asarray(d["u"])
    peaks = []
    for _ in range(HEAT_STEPS):
        u = u - DT * (L @ u)
        peaks.append(float(xp.max(u)))
    return {"u": u, "peaks": peaks}


register("sci_heat_explicit", GRID, grid_data, heat_scipy, heat_lazy)


# ============================================================================== skewed data

# issue 36: zipf text (term ids drawn with probability ~ rank^-1.1, documents uniform) and
# Chung–Lu power-law graphs (expected degree ~ rank^-2/3): a few terms and vertices hold a
# large share of the entries, which the uniform corpora above hide. Results past half
# dense are stored dense (``dense_past``), as the optimizer decides from degree statistics.
SKEW_TEXT = Family(Size(2_000, 3_000, 20), Size(200_000, 100_000, 5), Size(20_000, 30_000, 20))
SKEW_GRAPH = Family(Size(3_000, per_row=8), Size(200_000, per_row=5), Size(20_000, per_row=10))
HALF = {"S": 0.5, "C": 0.5, "K": 0.5, "P2": 0.5}
SKEW_ROWS = 16  # query documents and vertices


def zipf_data(size: Size) -> dict[str, Any]:
    return {"X": zipf_terms(size.n, size.m, int(size.n * size.per_row), seed=21),
            "v": np.random.default_rng(22).random(size.n)}


def power_law_data(size: Size) -> dict[str, Any]:
    g = chung_lu(size.n, size.per_row, seed=23)
    g.data = 0.5 + np.random.default_rng(24).random(g.nnz)
    return {"G": g, "v": np.random.default_rng(25).random(size.n)}


# --- cosine block of zipf text: the query rows against every document
def skew_cosine_scipy(d):
    X = d["X"]
    norms = np.sqrt(row_sums(X.multiply(X)))
    Xn = sp.csr_array(X.multiply(1.0 / np.where(norms > 0, norms, 1.0)[:, None]))
    return {"S": (Xn[:SKEW_ROWS] @ Xn.T).tocsr()}


def skew_cosine_lazy(d):
    X = xp.asarray(d["X"])
    norms = xp.linalg.vector_norm(X, axis=1)
    Xn = X / xp.where(norms > 0, norms, 1.0)[:, None]
    return {"S": Xn[:SKEW_ROWS] @ Xn.T}


register("skew_text_cosine_block", SKEW_TEXT, zipf_data, skew_cosine_scipy, skew_cosine_lazy,
         dense_past=HALF)


# --- co-occurrence X.T @ X, a document block's self-similarity, X.T @ v, row normalization
def skew_products_scipy(d):
    X, v = d["X"], d["v"]
    D = X[:1_000]
    norms = np.sqrt(row_sums(X.multiply(X)))
    return {"C": (X.T @ X).tocsr(), "K": (D @ D.T).tocsr(), "Xtv": X.T @ v,
            "N": sp.csr_array(X.multiply(1.0 / np.where(norms > 0, norms, 1.0)[:, None]))}


def skew_products_lazy(d):
    X = xp.asarray(d["X"])
    D = X[:1_000]
    norms = xp.sqrt(xp.sum(X * X, axis=1))
    return {"C": X.T @ X, "K": D @ D.T, "Xtv": X.T @ d["v"],
            "N": X / xp.where(norms > 0, norms, 1.0)[:, None]}


register("skew_text_products", SKEW_TEXT, zipf_data, skew_products_scipy, skew_products_lazy,
         dense_past=HALF)


# --- PageRank on a power-law graph (P.T @ x each step)
def skew_pagerank_data(size: Size) -> dict[str, Any]:
    return {"G": power_law_data(size)["G"]}


register("skew_graph_pagerank", SKEW_GRAPH, skew_pagerank_data, pagerank_scipy,
         functools.partial(_pagerank_lazy, computed=True))


# --- rows of the 2-hop matrix, A.T @ v, degrees and the random-walk matrix
def skew_graph_scipy(d):
    G, v = d["G"], d["v"]
    deg = row_sums(G)
    return {"P2": (G[:SKEW_ROWS] @ G).tocsr(), "Gtv": G.T @ v, "deg": deg,
            "W": (sp.diags_array(safe_inverse(deg)) @ G).tocsr()}


def skew_graph_lazy(d):
    A = xp.asarray(d["G"])
    deg = xp.sum(A, axis=1)
    return {"P2": A[:SKEW_ROWS] @ A, "Gtv": A.T @ d["v"], "deg": deg,
            "W": A / xp.where(deg > 0, deg, 1.0)[:, None]}


register("skew_graph_products", SKEW_GRAPH, power_law_data, skew_graph_scipy,
         skew_graph_lazy, dense_past=HALF)


# --- triangles: sum(A * (A @ A)) of the 0/1 adjacency (6 x the triangle count)
def skew_triangles_scipy(d):
    B = sp.csr_array(d["G"] > 0).astype(np.float64)
    return {"triangles": float((B * (B @ B)).sum())}


def skew_triangles_lazy(d):
    B = xp.astype(xp.asarray(d["G"]) > 0, xp.float64)
    return {"triangles": float(xp.sum(B * (B @ B)))}


# scipy forms the 2-hop matrix A @ A (10^8 paths at 200,000 vertices: ~10 s): a smaller
# large size, still past the dense intermediate the cap rules out
register("skew_graph_triangles", SKEW_GRAPH, power_law_data, skew_triangles_scipy,
         skew_triangles_lazy, large_size=Size(60_000, per_row=5))
