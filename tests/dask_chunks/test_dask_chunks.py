"""lazysparse arrays as Dask chunks under the threaded scheduler: every operation of
docs/dask.md gives NumPy's values on the dense equivalent, and its chunks stay lazysparse
arrays, sparse where the result is sparse."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sps

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import lazysparse as xp  # noqa: E402
import lazysparse.dask as lsd  # noqa: E402
from lazysparse.api.array.lazy_array import LazyArray  # noqa: E402
from lazysparse.api.building.views import stored_view  # noqa: E402
from tests.conftest import rotation  # noqa: E402

SPARSE = ("csr", "csc", "coo", "csf", "dcsr", "custom")

A = sps.random_array((60, 40), density=0.05, format="csr", rng=1)
B = sps.random_array((60, 40), density=0.05, format="csr", rng=2)
DA, DB = A.toarray(), B.toarray()
V = np.random.default_rng(3).random(40)
M = np.random.default_rng(4).random((40, 3))


@pytest.fixture(autouse=True)
def _threads() -> Any:
    with dask.config.set(scheduler="threads", num_workers=2):
        yield


def d(m: Any = A, chunks: Any = 15) -> Any:
    return lsd.from_sparse(m, chunks=chunks)


def chunks_of(x: Any) -> list[Any]:
    """The computed chunks of the Dask array ``x`` (persisted, then read off its graph)."""
    p = x.persist()
    graph = dict(p.__dask_graph__())
    return [graph[k] for k in dask.core.flatten(p.__dask_keys__())]


def check(x: Any, expected: np.ndarray, sparse: bool | None = None) -> LazyArray:
    """``x`` computes to ``expected``; its chunks are computed lazysparse arrays, in a
    sparse format when ``sparse`` (dense when False); its result is a lazysparse array."""
    blocks = chunks_of(x)
    for b in blocks:
        assert isinstance(b, LazyArray), type(b)
        # each task computed its chunk (a unit-axis view of stored data needs no kernel)
        view = stored_view(b)
        assert b._result is not None or view is not None  # noqa: SLF001
        fmt = b.format if view is None else view.format
        if sparse is not None:
            assert (fmt in SPARSE) == sparse, fmt
    assert isinstance(x._meta, LazyArray)  # noqa: SLF001
    out = x.compute()
    assert isinstance(out, LazyArray)
    if sparse:
        assert out.format in SPARSE
    np.testing.assert_allclose(xp.to_numpy(out), expected, rtol=1e-12, atol=1e-12)
    return out


def test_from_sparse_splits_rows_and_keeps_the_format() -> None:
    x = d()
    assert x.chunks == ((15, 15, 15, 15), (40,))
    check(x, DA, sparse=True)
    assert all(b.format == "csr" for b in chunks_of(x))
    assert all(b.format == "csc" for b in chunks_of(d(A.tocsc())))
    assert d(A, chunks=((10, 50),)).chunks == ((10, 50), (40,))
    assert d(A, chunks=(20, 20)).chunks == ((20, 20, 20), (20, 20))


@pytest.mark.parametrize("source", [
    lambda: A.tocoo(), lambda: sps.csr_matrix(A), lambda: xp.asarray(A),
    lambda: xp.asarray(A).tensor(), lambda: pytest.importorskip("sparse").COO.from_scipy_sparse(A),
], ids=["scipy-coo", "scipy-matrix", "lazysparse", "tensor", "pydata"])
def test_from_sparse_sources(source: Callable[[], Any]) -> None:
    check(d(source()), DA, sparse=True)


def test_from_sparse_nd_and_nonzero_fill() -> None:
    t = xp.asarray(np.arange(24.0).reshape(2, 3, 4) % 5, format="coo")
    check(lsd.from_sparse(t, chunks=1), np.arange(24.0).reshape(2, 3, 4) % 5, sparse=True)
    ones = xp.asarray(np.where(DA == 0, 1.0, DA), format="csr", fill_value=1.0)
    check(lsd.from_sparse(ones, chunks=20) * 2, np.where(DA == 0, 1.0, DA) * 2)


def test_from_sparse_default_chunks_follow_dask_chunk_size() -> None:
    with dask.config.set({"array.chunk-size": "500B"}):
        x = d(chunks=None)
    assert len(x.chunks[0]) > 1 and x.chunks[1] == (40,)


@pytest.mark.parametrize("suffix", [".mtx", ".npz"])
def test_from_file(tmp_path: Any, suffix: str) -> None:
    from lazysparse import io

    path = tmp_path / f"a{suffix}"
    (io.write_mtx if suffix == ".mtx" else io.save_npz)(path, xp.asarray(A))
    x = lsd.from_file(path, chunks=25)
    assert x.chunks[0] == (25, 25, 10)
    check(x, DA, sparse=True)
    with pytest.raises(ValueError, match="Matrix Market"):
        lsd.from_file(tmp_path / "a.txt")


def test_elementwise_expressions_stay_sparse() -> None:
    x, y = d(), d(B)
    check(x * y + x * 2.0, DA * DB + DA * 2.0, sparse=True)
    check(da.sin(x) * 3 - y, np.sin(DA) * 3 - DB, sparse=True)
    check(abs(-x) * x, np.abs(-DA) * DA, sparse=True)
    check(x ** 2 + (x > 0.5).astype(float), DA ** 2 + (DA > 0.5))  # stored dense
    check(da.where(x > 0.5, x, 0.0), np.where(DA > 0.5, DA, 0.0), sparse=True)
    # exp(0) - 1 = 0: the fill comes back, and the exact count over the stored values
    # (optimizer/exact_counts.py) keeps the result sparse, as scipy's expm1 does
    check(np.exp(x) - 1, np.exp(DA) - 1, sparse=True)
    check(x + V, DA + V, sparse=False)


REDUCTIONS = ["sum", "mean", "max", "min", "prod", "any", "all"]


@pytest.mark.parametrize("name, axis", rotation(REDUCTIONS, [0, 1, None, ((0, 1),)]))
def test_reductions_along_any_axis(name: str, axis: Any) -> None:
    x = d() if name not in ("prod", "all") else d() + 0.5  # not all zero
    ref = DA if name not in ("prod", "all") else DA + 0.5
    out = getattr(x, name)(axis=axis)
    check(out, getattr(np, name)(ref, axis=axis))


@pytest.mark.parametrize("name", ["nansum", "nanmean", "nanmax", "nanmin", "var", "std"])
def test_more_reductions(name: str) -> None:
    check(getattr(da, name)(d(), axis=1), getattr(np, name)(DA, axis=1))


def test_reductions_keepdims_and_split_every() -> None:
    x = d(chunks=10)
    check(x.sum(axis=0, keepdims=True, split_every=2), DA.sum(axis=0, keepdims=True))
    check(x.max(axis=1, keepdims=True), DA.max(axis=1, keepdims=True))


def test_matvec_and_matmat() -> None:
    x = d()
    check(x @ V, DA @ V, sparse=False)
    check(x @ da.from_array(V, chunks=20), DA @ V)
    check(x @ da.from_array(xp.asarray(V), chunks=-1), DA @ V)
    check(x @ M, DA @ M, sparse=False)
    check(da.dot(x, M), DA @ M)
    check(V[None, :20] @ d(A[:20], chunks=10), V[None, :20] @ DA[:20])


@pytest.mark.slow
def test_sparse_times_sparse_blocked() -> None:
    x = d(chunks=20)
    out = check(x @ x.T, DA @ DA.T, sparse=True)
    assert out.shape == (60, 60)
    check(d(A, chunks=(20, 20)) @ d(B.T.tocsr(), chunks=(20, 30)), DA @ DB.T, sparse=True)


@pytest.mark.slow
def test_tensordot_and_einsum() -> None:
    x, y = d(), d(B)
    check(da.tensordot(x, y, axes=((1,), (1,))), DA @ DB.T, sparse=True)
    check(da.tensordot(x, y, axes=((0,), (0,))), DA.T @ DB, sparse=True)
    check(da.tensordot(x, M, axes=1), DA @ M)
    check(da.einsum("ij,ij->i", x, y), np.einsum("ij,ij->i", DA, DB))


def test_transposes_and_slicing() -> None:
    x = d()
    check(x.T, DA.T, sparse=True)
    check(x.transpose((1, 0))[3:30], DA.T[3:30], sparse=True)
    check(x[5:50:2, 3:33], DA[5:50:2, 3:33], sparse=True)
    check(x[[3, 1, 44]], DA[[3, 1, 44]], sparse=True)
    check(x[7], DA[7])
    check(x[:, None, :].sum(axis=1), DA)


def test_rechunk_concatenate_stack() -> None:
    x, y = d(), d(B)
    check(x.rechunk((25, 16)), DA, sparse=True)
    check(x.rechunk((60, 40)), DA, sparse=True)
    check(da.concatenate([x, y], axis=0), np.concatenate([DA, DB]), sparse=True)
    check(da.concatenate([x, y], axis=1), np.concatenate([DA, DB], axis=1), sparse=True)
    check(da.stack([x, y]), np.stack([DA, DB]), sparse=True)
    check(da.stack([x, y], axis=2).sum(axis=2), DA + DB)


def test_astype() -> None:
    x = d()
    out = check(x.astype(np.float32), DA.astype(np.float32), sparse=True)
    assert out.dtype == np.float32
    check((x * 10).astype(np.int64), (DA * 10).astype(np.int64), sparse=True)
    check((x > 0.3).astype(np.int64), (DA > 0.3).astype(np.int64))


def test_map_blocks() -> None:
    x = d()
    check(x.map_blocks(lambda b: b * 3 + b), DA * 4, sparse=True)
    check(x.map_blocks(lambda b: xp.sum(b, axis=1), drop_axis=1, dtype=x.dtype), DA.sum(1))
    check(x.map_blocks(lambda b: xp.asformat(b, "coo")), DA, sparse=True)
    assert {b.format for b in chunks_of(x.map_blocks(lambda b: xp.asformat(b, "coo")))} \
        == {"coo"}


def test_persist_keeps_computed_chunks() -> None:
    p = (d() * 3).persist()
    assert all(isinstance(b, LazyArray) and b.format == "csr" for b in chunks_of(p))
    check(p.sum(axis=0), 3 * DA.sum(axis=0))
    check(p, 3 * DA, sparse=True)


def test_from_array_of_a_lazysparse_array() -> None:
    x = da.from_array(xp.asarray(A), chunks=(20, 40))
    assert isinstance(x._meta, LazyArray)  # noqa: SLF001
    check(x * 2, DA * 2, sparse=True)


def test_to_numpy_backend_and_percentile() -> None:
    x = d()
    out = x.to_backend("numpy").compute()
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, DA)
    q = da.percentile(x[:, 3], [10, 50, 90, 99]).compute()  # Dask's merge of per-chunk ones
    ref = da.percentile(da.from_array(DA[:, 3], chunks=15), [10, 50, 90, 99]).compute()
    np.testing.assert_allclose(np.asarray(q), ref)


def test_a_chain_and_its_reduction_run_as_one_kernel_per_chunk() -> None:
    x, y = d(), d(B)
    expr = (x * y * x).sum(axis=1)
    assert len(lsd.explain_chunk(expr).kernels) == 1
    assert len(lsd.explain_chunk(expr, (2,)).kernels) == 1
    lazy = lsd.chunk_result(expr)
    assert isinstance(lazy, LazyArray) and lazy._result is None  # noqa: SLF001
    check(expr, (DA * DB * DA).sum(axis=1))


def test_tokens_and_sizeof() -> None:
    from dask.base import tokenize
    from dask.sizeof import sizeof

    x = xp.asarray(A)
    assert tokenize(x) == tokenize(x) != tokenize(xp.asarray(A))
    assert sizeof(x) == A.data.nbytes + A.indices.nbytes + A.indptr.nbytes
    assert sizeof(x * 2) < 1000  # lazy: a plan only


def test_a_views_token_follows_writes_into_its_array() -> None:
    """A view names its current value: after a write into its array (not read since), its
    token differs, so Dask never reuses a chunk of the old value."""
    from dask.base import tokenize

    c = xp.asarray(np.arange(6.0).reshape(2, 3))
    v = c[0]
    before = tokenize(v)
    c[0, 1] = 9.0
    assert tokenize(v) != before
    assert np.asarray(v).tolist() == [0.0, 9.0, 2.0]


def test_the_users_array_optimize_is_kept() -> None:
    x = d() * 2
    with dask.config.set(array_optimize=None):
        out = x.compute()  # Dask's own optimization: chunks left lazy, same values
    np.testing.assert_allclose(xp.to_numpy(out), DA * 2)


@pytest.mark.parametrize("chunks", [-3, 0, (15, 0), ((20, 20),), ((20, -1, 41),), (5, 5, 5),
                                    {0: 0}, {2: 5}])
def test_from_sparse_refuses_chunks_it_cannot_honour(chunks: Any) -> None:
    with pytest.raises(ValueError, match="from_sparse"):
        lsd.from_sparse(A, chunks=chunks)


@pytest.mark.parametrize("chunks", [2.5, True, "rows"])
def test_from_sparse_chunk_type_errors(chunks: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="chunks|chunk"):
        lsd.from_sparse(A, chunks=chunks)


@pytest.mark.parametrize("chunks", [-1, None, "auto", [25], {0: 25}, ((20, 40),), 60])
def test_from_sparse_accepted_chunks_cover_every_row(chunks: Any) -> None:
    x = lsd.from_sparse(A, chunks=chunks)
    assert sum(x.chunks[0]) == 60 and sum(x.chunks[1]) == 40
    np.testing.assert_allclose(np.asarray(x.compute()), DA)


def test_from_sparse_takes_lists_like_asarray() -> None:
    x = lsd.from_sparse([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]], chunks=2)
    assert x.chunks == ((2, 1), (2,))
    np.testing.assert_allclose(np.asarray(x.compute()), [[1, 0], [0, 2], [3, 0]])
