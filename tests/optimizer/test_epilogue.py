"""Epilogue fusion: a map of a reduction's result runs in the reducing kernel, and a map of
a transposed read in one kernel without a copy.

Golden tests of ``fuse_epilogues`` and ``absorb_transposes`` (plan in, plan out), structure
through ``xp.explain`` (one compute query, one kernel) and values against NumPy across
formats, dtypes and fills.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.formats import Tensor, format_spec
from lazysparse.logic import check_normal_form, interpret
from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    Immediate,
    MapJoin,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Table,
)
from lazysparse.logic.operators import get_operator
from lazysparse.optimizer.epilogue import fuse_epilogues
from lazysparse.optimizer.transpose import absorb_transposes
from tests.conftest import examples, rotation, slow_except

i, j, a, b = (Field(n) for n in "ijab")
A, B, C, M, X = (Alias(n) for n in "ABCMX")
ADD = Immediate(get_operator("add"))
MUL = Immediate(get_operator("multiply"))
RNG = np.random.default_rng(3)
FORMATS = ["dense", "csr", "csc", "coo"]
FAST_FORMATS = ("csr", "coo")  # the fast tier's formats of the long parametrizations


def _spec(name: str, ndim: int) -> Immediate:
    return Immediate(format_spec(name, ndim))


MATRIX = Tensor.from_numpy(sp.random(30, 20, density=0.2, random_state=1).toarray(), "csr")


def _row_sums(src: Alias = M) -> Aggregate:
    return Aggregate(ADD, Immediate(0.0), Reorder(Relabel(src, (i, j)), (i, j)), (j,))


def _inputs(vec: Tensor | None = None) -> tuple[Query, ...]:
    qs = [Query(M, Table(Immediate(MATRIX), (i, j)))]
    if vec is not None:
        qs.append(Query(X, Table(Immediate(vec), (i,))))
    return tuple(qs)


def _map_of(alias: Alias, *other: object, op: Immediate = MUL) -> Reformat:
    body = MapJoin(op, (Relabel(alias, (a,)), *other))  # type: ignore[arg-type]
    return Reformat(_spec("dense", 1), Reorder(body, (a,)))


# --- golden tests of the pass -----------------------------------------------------------------

def test_a_map_of_a_single_use_aggregate_merges_into_it() -> None:
    vec = Tensor.from_numpy(np.arange(1.0, 31.0), "dense")
    plan = Plan((*_inputs(vec),
                 Query(A, Reformat(_spec("dense", 1), _row_sums())),
                 Query(B, _map_of(A, Relabel(X, (a,)), op=Immediate(get_operator("divide")))),
                 Produces((B,))))
    out = fuse_epilogues(plan)
    assert out == Plan((*_inputs(vec), Query(B, Reformat(_spec("dense", 1), MapJoin(
        Immediate(get_operator("divide")), (_row_sums(), Relabel(X, (i,)))))), Produces((B,))))
    check_normal_form(out)
    np.testing.assert_allclose(interpret(out)[0].to_numpy(), interpret(plan)[0].to_numpy())


def test_chained_maps_compose_into_one_epilogue() -> None:
    plan = Plan((*_inputs(),
                 Query(A, Reformat(_spec("dense", 1), _row_sums())),
                 Query(B, _map_of(A, Immediate(0.85))),
                 Query(C, _map_of(B, Immediate(0.15), op=ADD)),
                 Produces((C,))))
    out = fuse_epilogues(plan)
    epi = MapJoin(ADD, (MapJoin(MUL, (_row_sums(), Immediate(0.85))), Immediate(0.15)))
    assert out == Plan((*_inputs(), Query(C, Reformat(_spec("dense", 1), epi)), Produces((C,))))
    np.testing.assert_allclose(interpret(out)[0].to_numpy(), interpret(plan)[0].to_numpy())


@pytest.mark.parametrize("case", ["produced", "read twice", "sparse operand", "broadcast"])
def test_aggregates_that_must_stay_are_left_alone(case: str) -> None:
    sparse_vec = Tensor.from_numpy(np.where(np.arange(30) % 3 == 0, 1.0, 0.0), "coo")
    other: object = Immediate(2.0)
    produces = (B,)
    vec = None
    loop = (a,)
    if case == "produced":
        produces = (A, B)
    elif case == "read twice":
        other = Relabel(A, (a,))
    elif case == "sparse operand":
        vec, other = sparse_vec, Relabel(X, (a,))
    b_body = MapJoin(MUL, (Relabel(A, (a,)), other))  # type: ignore[arg-type]
    if case == "broadcast":  # the map spans more fields than the aggregate's result
        b_body, loop = MapJoin(MUL, (Relabel(A, (a,)), Relabel(M, (a, b)))), (a, b)
    b_spec = _spec("dense", len(loop))
    plan = Plan((*_inputs(vec), Query(A, Reformat(_spec("dense", 1), _row_sums())),
                 Query(B, Reformat(b_spec, Reorder(b_body, loop))), Produces(produces)))
    assert fuse_epilogues(plan) == plan


# --- structure and values through the api -----------------------------------------------------

def _one_kernel(x: xp.LazyArray) -> None:
    ex = xp.explain(x)
    computes = [q for q in ex.after.bodies
                if isinstance(q, Query) and not isinstance(q.rhs, Table)]
    assert len(computes) == 1 and len(ex.kernels) == 1, str(ex.after)


def _sparse(shape: tuple[int, ...], dtype: object = np.float64, fill: object = 0.0,
            density: float = 0.2) -> np.ndarray:
    vals = (RNG.integers(1, 9, shape) if np.dtype(dtype).kind in "iu"
            else RNG.standard_normal(shape))
    return np.where(RNG.random(shape) < density, vals, fill).astype(dtype)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pagerank_step_is_one_kernel(fmt: str, dtype: type) -> None:
    n = 40
    a_np = np.abs(_sparse((n, n), dtype))  # a nonnegative link matrix: no cancellation
    x_np = RNG.random(n).astype(dtype)
    A_ = xp.asarray(a_np, format=fmt)
    x = xp.asarray(x_np)
    for _ in range(3):  # as a user writes it: rebinding x, computing each step
        y = 0.85 * (A_.T @ x) + 0.15 / n
        _one_kernel(y)
        x = xp.compute(y)
        x_np = 0.85 * (a_np.T @ x_np) + dtype(0.15 / n)
        np.testing.assert_allclose(np.asarray(x), x_np, rtol=1e-5)
    assert np.asarray(x).dtype == dtype


@pytest.mark.parametrize("fmt", slow_except(FORMATS, FAST_FORMATS))
@pytest.mark.parametrize("dtype, fill", slow_except(
    [(np.float64, 0.0), (np.float64, np.nan), (np.float64, 1.0), (np.float32, 1.0),
     (np.int64, 0), (np.int32, 1)], [(np.float64, 0.0), (np.float64, np.nan), (np.int64, 0)]))
@pytest.mark.parametrize("axis", [0, 1])
def test_mean_is_one_kernel(fmt: str, dtype: type, fill: object, axis: int) -> None:
    a_np = _sparse((17, 11), dtype, fill)
    m = xp.mean(xp.asarray(a_np, format=fmt, fill_value=fill), axis=axis) if \
        np.dtype(dtype).kind == "f" else \
        xp.mean(xp.astype(xp.asarray(a_np, format=fmt, fill_value=fill), xp.float64), axis=axis)
    _one_kernel(m)
    np.testing.assert_allclose(np.asarray(m), a_np.astype(np.float64).mean(axis=axis),
                               rtol=1e-5)


@pytest.mark.parametrize("fmt, fill", rotation(FORMATS, [0.0, np.nan, 1.0]))
def test_row_sums_over_a_dense_vector_is_one_kernel(fmt: str, fill: float) -> None:
    a_np = _sparse((23, 9), fill=fill)
    d_np = RNG.random(23) + 0.5
    r = xp.sum(xp.asarray(a_np, format=fmt, fill_value=fill), axis=1) / xp.asarray(d_np)
    _one_kernel(r)
    np.testing.assert_allclose(np.asarray(r), a_np.sum(axis=1) / d_np, equal_nan=True)


def test_numpy_vector_operand_is_one_kernel() -> None:
    a_np = _sparse((23, 9))
    d_np = RNG.random(23) + 0.5
    r = xp.sum(xp.asarray(a_np, format="csr"), axis=1) / d_np
    _one_kernel(r)
    np.testing.assert_allclose(np.asarray(r), a_np.sum(axis=1) / d_np)


@settings(max_examples=examples(25), deadline=None)
@given(fmt=st.sampled_from(FORMATS), op=st.sampled_from(["add", "multiply", "subtract"]),
       c=st.floats(-3, 3, allow_nan=False), axis=st.sampled_from([0, 1]),
       red=st.sampled_from(["sum", "max", "prod"]))
def test_random_maps_of_reductions_match_numpy(fmt: str, op: str, c: float, axis: int,
                                               red: str) -> None:
    a_np = _sparse((12, 7), density=0.4)
    r = getattr(xp, red)(xp.asarray(a_np, format=fmt), axis=axis)
    want = getattr(np, red)(a_np, axis=axis)
    r = getattr(xp, op)(r, c)
    want = getattr(np, op)(want, c)
    _one_kernel(r)
    # c * sum(x) runs as sum(c * x): equal up to rounding, which a subnormal c makes
    # absolute (5e-324 * x rounds every term), hence the atol at that scale
    np.testing.assert_allclose(np.asarray(r), want, rtol=1e-10, atol=1e-300)


# --- a map of a transposed read: one kernel, no copy ------------------------------------------

NEG = Immediate(get_operator("negative"))
T = Alias("T")


def _copy_plan(b_rhs_of) -> Plan:  # noqa: ANN001
    copy = Reformat(Immediate(format_spec("csc", 2)), Reorder(Relabel(M, (i, j)), (i, j)))
    return Plan((*_inputs(), Query(T, copy), Query(B, b_rhs_of(Reorder(
        MapJoin(NEG, (Relabel(T, (b, a)),)), (a, b)))), Produces((B,))))


def test_a_transposed_copy_read_once_is_absorbed_into_its_map() -> None:
    plan = _copy_plan(lambda r: r)
    out = absorb_transposes(plan)
    (q,) = [x for x in out.bodies if isinstance(x, Query) and not isinstance(x.rhs, Table)]
    rhs = q.rhs
    assert rhs.arg == Reorder(Reorder(MapJoin(NEG, (Relabel(M, (b, a)),)), (b, a)), (a, b))
    # stored in the loop's order: the result's axis 1 (M's rows) outermost, like CSC
    assert rhs.tns.val.mode_order == (1, 0)
    check_normal_form(fuse_epilogues(out))
    np.testing.assert_allclose(interpret(out)[0].to_numpy(), -MATRIX.to_numpy().T)


def test_a_requested_format_is_kept_when_the_copy_is_absorbed() -> None:
    spec = Immediate(format_spec("csr", 2))
    out = absorb_transposes(_copy_plan(lambda r: Reformat(spec, r)))
    assert out.bodies[-2] == Query(B, Reformat(spec, Reorder(Reorder(
        MapJoin(NEG, (Relabel(M, (b, a)),)), (b, a)), (a, b))))


def test_a_copy_read_twice_stays() -> None:
    plan = _copy_plan(lambda r: r)
    twice = Plan((*plan.bodies[:-1], Query(C, Reorder(Relabel(T, (a, b)), (a, b))),
                  Produces((B, C))))
    assert absorb_transposes(twice) == twice


@pytest.mark.parametrize("fmt", slow_except(FORMATS, FAST_FORMATS))
@pytest.mark.parametrize("dtype, fill", slow_except(
    [(np.float64, 0.0), (np.float64, np.nan), (np.float32, 1.0), (np.int64, 0), (np.int32, 1)],
    [(np.float64, 0.0), (np.float64, np.nan), (np.int32, 1)]))
def test_negated_transpose_is_one_kernel(fmt: str, dtype: type, fill: object) -> None:
    a_np = _sparse((19, 8), dtype, fill, density=0.1)
    A_ = xp.asarray(a_np, format=fmt, fill_value=fill)
    for expr, want in [(-A_.T, -a_np.T), (xp.abs(A_.T) * 2, np.abs(a_np.T) * 2),
                       (xp.permute_dims(A_, (1, 0)) - 1, a_np.T - 1)]:
        _one_kernel(expr)
        got = xp.compute(expr)
        np.testing.assert_allclose(np.asarray(got), want, equal_nan=True)
        assert np.asarray(got).dtype == want.dtype


def test_negated_transpose_of_csr_shares_its_pattern() -> None:
    """``-A.T`` of a large sparse CSR matrix is stored like CSC: its values follow A's
    stored entries and its index arrays are A's own."""
    a = sp.random(2000, 1500, density=0.001, format="csr", random_state=4)
    A_ = xp.asarray(a)
    (k,) = xp.explain(-A_.T).kernels
    assert "shared" in k.source
    got = xp.compute(-A_.T)
    assert got.format == "csc"
    np.testing.assert_allclose(np.asarray(got), -a.toarray().T)


def test_keepdims_axes_of_the_map_join_the_aggregates_loop() -> None:
    """``mean(A, axis=1, keepdims=True)``: B loops over (a, b) with b indexing nothing (an
    extent-1 axis); the merged aggregate loops over it right after a."""
    plan = Plan((*_inputs(),
                 Query(A, Reformat(_spec("dense", 1), _row_sums())),
                 Query(B, Reformat(_spec("dense", 2), Reorder(
                     MapJoin(MUL, (Relabel(A, (a,)), Immediate(0.5))), (a, b)))),
                 Produces((B,))))
    out = fuse_epilogues(plan)
    (q,) = [x for x in out.bodies if isinstance(x, Query) and not isinstance(x.rhs, Table)]
    epi = q.rhs.arg
    agg = epi.args[0]
    assert isinstance(epi, MapJoin) and isinstance(agg, Aggregate) and agg.idxs == (j,)
    (unit,) = [f for f in agg.arg.idxs if f not in (i, j)]
    assert agg.arg.idxs == (i, unit, j)  # the result axes (i, unit) follow B's (a, b)
    check_normal_form(out)
    np.testing.assert_allclose(interpret(out)[0].to_numpy(), interpret(plan)[0].to_numpy())


@pytest.mark.parametrize("fmt, axis", rotation(FORMATS, [0, 1]))
def test_mean_with_keepdims_is_one_kernel(fmt: str, axis: int) -> None:
    a_np = _sparse((13, 8), fill=np.nan, density=0.5)
    m = xp.mean(xp.asarray(a_np, format=fmt, fill_value=np.nan), axis=axis, keepdims=True)
    _one_kernel(m)
    np.testing.assert_allclose(np.asarray(m), a_np.mean(axis=axis, keepdims=True),
                               equal_nan=True)
