"""Sparse masks drive loops (issue #10, item 6): ``where`` with a sparse condition and
``x * mask`` visit the mask's stored entries only, fold the value the expression takes
where the mask is absent, and elementwise results keep the mask's pattern.

Checked by structure (the kernels' loops, through ``xp.explain``) and by value against
NumPy on the dense equivalent.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sps
from hypothesis import given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.logic.operators import get_operator
from tests.conftest import examples, rotation, slow_except

FORMATS = ("csr", "csc", "coo")
LOOP = re.compile(r"# loop (\w+): (\w+)")


def loop_kinds(arr: xp.LazyArray) -> list[list[str]]:
    """The loop kinds (``range``/``driver``/``merge``) of each kernel ``arr`` runs, in the
    order of the first function of each kernel (outermost first)."""
    out = []
    for k in xp.explain(arr).kernels:
        first = k.source.split("\ndef ")[1]
        out.append([kind for _, kind in LOOP.findall(first)])
    return out


def last_kernel_loops(arr: xp.LazyArray) -> list[str]:
    return loop_kinds(arr)[-1]


def graph(n: int, per_row: float, seed: int, empty_rows: int = 2) -> sps.csr_matrix:
    """A random n x n adjacency matrix with some rows left empty and an explicit zero."""
    rng = np.random.default_rng(seed)
    a = sps.random(n, n, density=min(1.0, per_row / n), format="csr", random_state=rng)
    a = a.tolil()
    for r in rng.choice(n, size=min(empty_rows, n), replace=False):
        a[r, :] = 0
    a = a.tocsr()
    a.eliminate_zeros()
    if a.nnz:
        a.data[0] = 0.0  # a stored zero: the mask A != 0 is False there
    return a


def as_lazy(a: sps.spmatrix, fmt: str, fill: float = 0.0) -> xp.LazyArray:
    """``a`` in ``fmt``; with a non-zero ``fill`` its absent entries read as ``fill``."""
    if fill == 0.0:
        return xp.asarray(a.asformat(fmt))
    dense = np.where(a.toarray() != 0, a.toarray(), fill)
    return xp.asarray(dense, format=fmt, fill_value=fill)


# -- the neighbour minimum of label propagation -------------------------------------------

@pytest.mark.parametrize("dtype, fmt", rotation([np.int64, np.int32, np.float64, np.float32],
                                               FORMATS, ["int64", "int32", "float64", "float32"]))
def test_neighbour_minimum_matches_numpy(fmt: str, dtype: type) -> None:
    n = 60
    a = graph(n, 4, seed=1)
    lab = np.random.default_rng(2).permutation(n).astype(dtype)
    A = xp.asarray(a.asformat(fmt))
    got = xp.min(xp.where(A != 0, xp.asarray(lab)[None, :], n), axis=1)
    want = np.min(np.where(a.toarray() != 0, lab[None, :], n), axis=1)
    assert last_kernel_loops(got)[-1] == "driver"  # before computing: then it is a leaf
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("fmt", FORMATS)
def test_neighbour_minimum_is_a_driver_loop(fmt: str) -> None:
    a = graph(30, 3, seed=3)
    A = xp.asarray(a.asformat(fmt))
    lab = xp.arange(30)
    got = xp.min(xp.where(A != 0, lab[None, :], 30), axis=1)
    kinds = loop_kinds(got)
    # the reduced loop iterates A's stored entries; no dense i x j loop nest anywhere
    assert kinds[-1][-1] == "driver"
    for k in kinds:
        assert k.count("range") <= 2 and k[-1] != "range"


def test_neighbour_minimum_loop_in_label_propagation() -> None:
    """Label propagation as a user writes it: rebind, compute, compare with scipy."""
    n = 80
    a = graph(n, 2, seed=4, empty_rows=5)
    a = a + a.T
    A = xp.asarray(a)
    lab = xp.arange(n)
    ref = np.arange(n)
    dense = a.toarray() != 0
    for _ in range(n):
        lab = xp.minimum(lab, xp.min(xp.where(A != 0, lab[None, :], n), axis=1))
        lab = xp.compute(lab)
        ref = np.minimum(ref, np.min(np.where(dense, ref[None, :], n), axis=1))
        np.testing.assert_array_equal(np.asarray(lab), ref)
    ncomp, comp = sps.csgraph.connected_components(a, directed=False)
    # every connected component ends with one label: its smallest vertex
    assert len(np.unique(np.asarray(lab))) == ncomp
    for c in range(ncomp):
        members = np.nonzero(comp == c)[0]
        assert set(np.asarray(lab)[members]) == {members.min()}


def test_neighbour_minimum_scales_with_nnz() -> None:
    """n = 200,000 with 5 entries per row: a dense i x j loop would be 4e10 iterations."""
    n = 200_000
    rng = np.random.default_rng(5)
    rows = np.repeat(np.arange(n), 5)
    cols = rng.integers(0, n, size=rows.size)
    keep = rows != 7  # an empty row
    a = sps.csr_matrix((np.ones(keep.sum()), (rows[keep], cols[keep])), shape=(n, n))
    lab = rng.permutation(n)
    got = xp.min(xp.where(xp.asarray(a) != 0, xp.asarray(lab)[None, :], n), axis=1)
    assert last_kernel_loops(got)[-1] == "driver"
    want = np.minimum.reduceat(np.concatenate([lab[a.indices], [n]]),
                               np.minimum(a.indptr[:-1], a.nnz))
    want[np.diff(a.indptr) == 0] = n
    np.testing.assert_array_equal(np.asarray(got), want)


# -- reductions over a masked dense operand -----------------------------------------------

MASKED_REDUCTIONS = {
    "sum_where": (lambda M, X: xp.sum(xp.where(M, X, 0.0), axis=1),
                  lambda m, x: np.sum(np.where(m, x, 0.0), axis=1)),
    "max_times_mask": (lambda M, X: xp.max(X * xp.astype(M, X.dtype), axis=0),
                       lambda m, x: np.max(x * m.astype(x.dtype), axis=0)),
    "min_where_const": (lambda M, X: xp.min(xp.where(M, X, 5.0), axis=0),
                        lambda m, x: np.min(np.where(m, x, 5.0), axis=0)),
    "sum_where_nan": (lambda M, X: xp.sum(xp.where(M, X, np.nan), axis=1),
                      lambda m, x: np.sum(np.where(m, x, np.nan), axis=1)),
    "prod_where_one": (lambda M, X: xp.prod(xp.where(M, X, 1.0), axis=1),
                       lambda m, x: np.prod(np.where(m, x, 1.0), axis=1)),
}


@pytest.mark.parametrize("case, fmt", rotation(sorted(MASKED_REDUCTIONS), FORMATS))
@pytest.mark.parametrize("dtype", slow_except([np.float64, np.float32], [np.float64]))
def test_masked_reductions(fmt: str, case: str, dtype: type) -> None:
    build, ref = MASKED_REDUCTIONS[case]
    a = graph(40, 4, seed=6)
    x = np.random.default_rng(7).uniform(0.5, 1.5, (40, 40)).astype(dtype)
    M = xp.asarray(a.asformat(fmt)) != 0
    got = build(M, xp.asarray(x))
    want = ref(a.toarray() != 0, x)
    assert last_kernel_loops(got)[-1] == "driver"
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


@pytest.mark.parametrize("fmt, fill", rotation(FORMATS, [0.0, np.nan, 1.0]))
def test_boolean_mask_stored_with_fill_values(fmt: str, fill: float) -> None:
    """A boolean mask stored directly (fill False), masks built from data with fill 0, NaN
    and 1 (``A != fill`` is the pattern), and an integer 0/1 mask as a factor."""
    a = graph(30, 4, seed=8)
    pattern = a.toarray() != 0
    A = as_lazy(a, fmt, fill)
    dense_a = np.where(pattern, a.toarray(), fill)
    x = np.random.default_rng(9).standard_normal((30, 30))
    M = ~xp.isnan(A) if np.isnan(fill) else A != fill
    m = ~np.isnan(dense_a) if np.isnan(fill) else dense_a != fill
    got = xp.sum(xp.where(M, xp.asarray(x), 0.0), axis=0)
    assert last_kernel_loops(got)[-1] == "driver"
    np.testing.assert_allclose(np.asarray(got), np.sum(np.where(m, x, 0.0), axis=0))
    B = xp.asarray(pattern, format=fmt, fill_value=False)
    got = xp.max(xp.where(B, xp.asarray(x), -1.0), axis=1)
    np.testing.assert_allclose(np.asarray(got), np.max(np.where(pattern, x, -1.0), axis=1))
    I01 = xp.asarray(pattern.astype(np.int8), format=fmt, fill_value=0)
    got = xp.max(xp.asarray(x) * I01, axis=1)
    np.testing.assert_allclose(np.asarray(got), np.max(x * pattern.astype(np.int8), axis=1))


# -- elementwise: the mask's pattern, the constant as fill --------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("k", [0.0, 7.0, np.nan])
def test_elementwise_where_keeps_the_mask_pattern(fmt: str, k: float) -> None:
    a = graph(30, 3, seed=10)
    x = np.random.default_rng(11).standard_normal((30, 30))
    got = xp.where(xp.asarray(a.asformat(fmt)) != 0, xp.asarray(x), k)
    want = np.where(a.toarray() != 0, x, k)
    np.testing.assert_equal(np.asarray(got.fill_value), np.asarray(k))
    np.testing.assert_allclose(np.asarray(got), want)
    assert got.format not in (None, "dense") and got.nnz <= a.nnz


@pytest.mark.parametrize("fmt", FORMATS)
def test_where_with_a_dense_alternative_stays_dense(fmt: str) -> None:
    """Where the mask is absent the value is ``y``'s, which is dense: no mask driver."""
    a = graph(20, 3, seed=12)
    x, y = np.random.default_rng(13).standard_normal((2, 20, 20))
    got = xp.where(xp.asarray(a.asformat(fmt)) != 0, xp.asarray(x), xp.asarray(y))
    np.testing.assert_allclose(np.asarray(got), np.where(a.toarray() != 0, x, y))
    assert got.format == "dense"  # computed by now


@pytest.mark.parametrize("fmt", FORMATS)
def test_sddmm_by_mask_is_one_kernel_over_the_mask(fmt: str) -> None:
    """``where(A != 0, U @ V.T, 0)`` (issue #11's spelling of SDDMM): one kernel whose
    output loops iterate A's stored entries, the inner product innermost."""
    a = graph(40, 4, seed=14)
    rng = np.random.default_rng(15)
    u, v = rng.standard_normal((2, 40, 6))
    got = xp.where(xp.asarray(a.asformat(fmt)) != 0, xp.asarray(u) @ xp.asarray(v).T, 0.0)
    *copies, kinds = loop_kinds(got)
    assert kinds[1] == "driver" and len(kinds) == 3
    # a CSC mask is read through one transposed copy (O(nnz)): the result is row-major
    assert len(copies) == (1 if fmt == "csc" else 0) and all(len(c) == 2 for c in copies)
    np.testing.assert_allclose(np.asarray(got), np.where(a.toarray() != 0, u @ v.T, 0.0))
    assert got.format not in (None, "dense") and got.nnz <= a.nnz


def test_fusion_through_nested_maps_golden() -> None:
    """Plan in, plan out: ``where(S != 0, R, 0) * S`` with ``R = U @ V.T`` fuses R's
    reduction under both maps (``where`` selects, ``*`` distributes and 0 annihilates)."""
    from lazysparse.logic.nodes import (
        Aggregate,
        Alias,
        Field,
        Immediate,
        MapJoin,
        Plan,
        Produces,
        Query,
        Relabel,
        Reorder,
        Table,
    )
    from lazysparse.optimizer.fuse import fuse_aggregates

    def op(name: str) -> Immediate:
        return Immediate(get_operator(name))

    i, j, k = Field("i"), Field("j"), Field("k")
    S, U, V, R, O = (Alias(n) for n in "SUVRO")
    zero = Immediate(np.float64(0.0))
    rng = np.random.default_rng(20)
    tables = [Query(S, Table(Immediate(xp.asarray(graph(6, 2, 21)).tensor()), (i, j))),
              Query(U, Table(Immediate(xp.asarray(rng.random((6, 3))).tensor()), (i, k))),
              Query(V, Table(Immediate(xp.asarray(rng.random((6, 3))).tensor()), (j, k)))]
    uv = MapJoin(op("multiply"), (Relabel(U, (i, k)), Relabel(V, (j, k))))
    r_q = Query(R, Aggregate(op("add"), zero, Reorder(uv, (i, j, k)), (k,)))
    cond = MapJoin(op("not_equal"), (Relabel(S, (i, j)), zero))

    def consumer(inner: object) -> MapJoin:
        return MapJoin(op("multiply"), (MapJoin(op("where"), (cond, inner, zero)),
                                        Relabel(S, (i, j))))

    o_q = Query(O, Reorder(consumer(Relabel(R, (i, j))), (i, j)))
    plan = Plan((*tables, r_q, o_q, Produces((O,))))
    out = fuse_aggregates(plan)
    (q,) = [b for b in out.bodies if isinstance(b, Query) and not isinstance(b.rhs, Table)]
    assert q.lhs == O and isinstance(q.rhs, Aggregate) and q.rhs.op == op("add")
    (r,) = q.rhs.idxs
    fused_uv = MapJoin(op("multiply"), (Relabel(U, (i, r)), Relabel(V, (j, r))))
    assert q.rhs.arg == Reorder(consumer(fused_uv), (i, j, r))


def test_nested_mask_spelling_of_sddmm_is_one_driven_kernel() -> None:
    a = graph(40, 4, seed=22)
    u, v = np.random.default_rng(23).standard_normal((2, 40, 6))
    s = xp.asarray(a)
    got = xp.where(s != 0, xp.asarray(u) @ xp.asarray(v).T, 0.0) * s
    (kinds,) = loop_kinds(got)
    assert kinds == ["range", "driver", "range"]
    dense = a.toarray()
    np.testing.assert_allclose(np.asarray(got), np.where(dense != 0, u @ v.T, 0) * dense)
    assert got.format == "csr" and got.nnz <= a.nnz


def test_mask_decided_by_a_constant_is_not_shared() -> None:
    """``A != 0`` masks; ``A != 5`` is True where A is absent (dense result): the same
    structure with another constant must not reuse the driver kernel."""
    a = graph(25, 3, seed=16)
    x = np.random.default_rng(17).standard_normal((25, 25))
    A, X = xp.asarray(a), xp.asarray(x)
    for c in (0.0, 5.0, 0.0):
        got = xp.sum(xp.where(A != c, X, 0.0), axis=1)
        want = np.sum(np.where(a.toarray() != c, x, 0.0), axis=1)
        np.testing.assert_allclose(np.asarray(got), want)


@settings(max_examples=examples(25), deadline=None)
@given(n=st.integers(1, 12), m=st.integers(1, 12), density=st.floats(0.0, 0.6),
       fmt=st.sampled_from(FORMATS), axis=st.sampled_from([0, 1]),
       red=st.sampled_from(["min", "max", "sum"]), k=st.sampled_from([0.0, -3.0, 2.5]),
       seed=st.integers(0, 2**16))
def test_masked_reduction_hypothesis(n: int, m: int, density: float, fmt: str, axis: int,
                                     red: str, k: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = sps.random(n, m, density=density, format="csr", random_state=rng)
    x = rng.integers(-5, 5, (n, m)).astype(np.float64)
    M = xp.asarray(a.asformat(fmt)) != 0
    got = getattr(xp, red)(xp.where(M, xp.asarray(x), k), axis=axis)
    want = getattr(np, red)(np.where(a.toarray() != 0, x, k), axis=axis)
    np.testing.assert_allclose(np.asarray(got), want)
    ew = xp.where(M, xp.asarray(x), k)
    np.testing.assert_allclose(np.asarray(ew), np.where(a.toarray() != 0, x, k))


def test_registry_where_selects_by_its_condition() -> None:
    where = get_operator("where")
    assert where.selected_by(0, np.False_) == 2 and where.selected_by(0, np.True_) == 1
    assert where.selected_by(1, np.False_) is None and where.selects_only_arguments
    assert not get_operator("add").selects_only_arguments


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", slow_except([np.int32, np.int64, np.float32, np.bool_],
                                               [np.int64, np.bool_]))
def test_condition_true_where_absent_selects_the_second_argument(fmt: str, dtype: type) -> None:
    """``A == 0`` is True where A is absent: ``where(A == 0, k, x)`` is ``k`` there."""
    a = graph(30, 3, seed=18)
    x = np.random.default_rng(19).integers(0, 9, (30, 30)).astype(dtype)
    A = xp.asarray(a.asformat(fmt))
    k = dtype(1).item()  # a Python scalar of the array's kind
    got = xp.where(A == 0, k, xp.asarray(x))
    name = "any" if dtype is np.bool_ else "max"  # the standard has no max of booleans
    red = getattr(xp, name)(xp.where(A == 0, k, xp.asarray(x)), axis=1)
    assert last_kernel_loops(got)[-1] == "driver"
    assert last_kernel_loops(red)[-1] == "driver"
    want = np.where(a.toarray() == 0, k, x)
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(red), getattr(np, name)(want, axis=1))


@pytest.mark.parametrize("fmt", FORMATS)
def test_sparse_alternative_gives_the_union_of_patterns(fmt: str) -> None:
    """``where(M, X, B)`` with a sparse ``B`` (fill 0): outside M it is B, so the result is
    stored on M's pattern united with B's and the loop merges the two."""
    a, b = graph(30, 3, seed=20), graph(30, 3, seed=21)
    x = np.random.default_rng(22).standard_normal((30, 30))
    M, B = xp.asarray(a.asformat(fmt)) != 0, xp.asarray(b.asformat(fmt))
    got = xp.where(M, xp.asarray(x), B)
    red = xp.sum(xp.where(M, xp.asarray(x), B), axis=1)
    assert last_kernel_loops(got)[-1] == "merge"
    assert last_kernel_loops(red)[-1] == "merge"
    want = np.where(a.toarray() != 0, x, b.toarray())
    np.testing.assert_allclose(np.asarray(got), want)
    np.testing.assert_allclose(np.asarray(red), want.sum(axis=1))
    assert got.format != "dense" and got.nnz <= a.nnz + b.nnz


@pytest.mark.parametrize("fmt", FORMATS)
def test_rerun_with_another_constant_rechecks_the_mask(fmt: str) -> None:
    """A with fill 3: ``A != 3`` masks (False where absent), ``A != 4`` does not. Both
    constants are of one class for the plan cache, so a re-run of the same expression
    must check the kernel's mask decision again instead of reusing the driver kernel."""
    a = graph(25, 3, seed=23)
    A = as_lazy(a, fmt, 3.0)
    dense_a = np.where(a.toarray() != 0, a.toarray(), 3.0)
    x = np.random.default_rng(24).standard_normal((25, 25))
    X = xp.asarray(x)
    for c in (3.0, 4.0, 3.0, 4.0):
        got = xp.sum(xp.where(A != c, X, 0.0), axis=1)
        ew = xp.where(A != c, X, 0.0)  # the result fill is 0 either way
        np.testing.assert_allclose(np.asarray(got), np.sum(np.where(dense_a != c, x, 0.0), 1))
        np.testing.assert_allclose(np.asarray(ew), np.where(dense_a != c, x, 0.0))
