"""The reference interpreter against hand-computed NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lazysparse.formats import DensifyError, Tensor, format_spec, set_densify_limit
from lazysparse.logic import interpret
from lazysparse.logic.nodes import (
    Alias,
    Immediate,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Subquery,
)
from lazysparse.logic.operators import astype_op
from tests.conftest import examples
from tests.logic.plans import (
    aggregate,
    i,
    j,
    k,
    m,
    mapjoin,
    matmul_normal_form,
    query_plan,
    table,
)

rng = np.random.default_rng(0)


def run1(expr):  # noqa: ANN001, ANN201
    (t,) = interpret(query_plan(expr))
    return t


def test_mapjoin_broadcast_and_scalar() -> None:
    a = rng.random((3, 4))
    b = rng.random(4)
    t = run1(mapjoin("add", mapjoin("multiply", table(a, i, j, fmt="csr"), 3), table(b, j)))
    np.testing.assert_allclose(t.to_numpy(), a * 3 + b)
    assert t.format == "dense" and t.dtype == np.float64 and t.fill_value == 0


def test_mapjoin_field_order_follows_first_appearance() -> None:
    a = rng.random((3, 4))
    b = rng.random((4, 5))
    t = run1(mapjoin("multiply", table(b, j, k), table(a, i, j)))
    np.testing.assert_allclose(t.to_numpy(), b[:, :, None] * a.T[:, None, :])
    assert t.shape == (4, 5, 3)


def test_fill_values_follow_registry() -> None:
    a = np.array([[0.0, 2.0], [np.nan, 0.0]])
    t = run1(mapjoin("add", table(a, i, j, fmt="coo", fill=np.nan), 1.0))
    assert np.isnan(t.fill_value)
    np.testing.assert_array_equal(t.to_numpy(), a + 1)
    t = run1(mapjoin("multiply", table(a, i, j, fmt="csr"), 2.0))
    assert t.fill_value == 0
    t = run1(aggregate("maximum", np.float32(-np.inf), table(a.astype(np.float32), i, j), j))
    assert t.fill_value == -np.inf and t.dtype == np.float32


@pytest.mark.parametrize("fmt", ["dense", "csr", "csc", "coo"])
def test_matmul_normal_form(fmt: str) -> None:
    a = rng.random((5, 6)) * (rng.random((5, 6)) < 0.4)
    b = rng.random((6, 3))
    A = Tensor.from_numpy(a, fmt)
    B = Tensor.from_numpy(b, "dense")
    for loop in ((i, j, k), (i, k, j), (j, i, k)):
        (c,) = interpret(matmul_normal_form(A, B, loop))
        np.testing.assert_allclose(c.to_numpy(), a @ b)


def test_aggregate_dtypes_and_empty() -> None:
    a = rng.integers(-100, 100, (4, 5)).astype(np.int8)
    t = run1(aggregate("add", np.int64(0), table(a, i, j), i))
    np.testing.assert_array_equal(t.to_numpy(), a.sum(axis=0, dtype=np.int64))
    assert t.dtype == np.int64
    t = run1(aggregate("add", 0, table(a, i, j), i, j))  # int8 wraps like the kernels
    assert t.shape == () and t.dtype == np.int8
    assert t.to_numpy()[()] == np.int8(a.astype(np.int64).sum() % 256 - 256 * (
        a.astype(np.int64).sum() % 256 >= 128))
    e = np.zeros((0, 3))
    t = run1(aggregate("maximum", -np.inf, table(e, i, j), i))
    np.testing.assert_array_equal(t.to_numpy(), np.full(3, -np.inf))
    t = run1(aggregate("logical_or", False, mapjoin("greater", table(a, i, j), 50), j))
    np.testing.assert_array_equal(t.to_numpy(), (a > 50).any(axis=1))


def test_non_ufunc_reduction_and_argmin_formulation() -> None:
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    n = len(x)
    xi = table(x, i)
    mn = aggregate("minimum", np.inf, xi, i)
    pos = mapjoin("where", mapjoin("isequal", xi, mn), i, n)
    t = run1(aggregate("minimum", n, pos, i))
    assert t.to_numpy()[()] == np.argmin(x) and t.dtype == np.int64
    xn = np.array([3.0, np.nan, 1.0, np.nan])
    xi = table(xn, i)
    pos = mapjoin("where", mapjoin("isequal", xi, aggregate("minimum", np.inf, xi, i)), i, 4)
    assert run1(aggregate("minimum", 4, pos, i)).to_numpy()[()] == np.argmin(xn)
    t = run1(aggregate("overwrite", 0.0, table(x, i), i))
    assert t.to_numpy()[()] == x[-1]


def test_reorder_permutes_adds_and_drops() -> None:
    a = rng.random((2, 1, 3))
    t = run1(Reorder(table(a, i, j, k), (k, i)))
    np.testing.assert_array_equal(t.to_numpy(), a[:, 0, :].T)
    t = run1(Reorder(table(a, i, j, k), (k, m, i, j)))
    np.testing.assert_array_equal(t.to_numpy(), a.transpose(2, 0, 1)[:, None, :, :])
    with pytest.raises(ValueError, match="drops field i of size 2"):
        run1(Reorder(table(a, i, j, k), (j, k)))


def test_relabel_and_subquery_reuse() -> None:
    a = rng.random((3, 3))
    s = Subquery(Alias("S"), mapjoin("add", table(a, i, j), 1.0))
    expr = mapjoin("multiply", Relabel(s, (j, i)), s)  # (a+1).T * (a+1), S evaluated once
    t = run1(expr)
    np.testing.assert_allclose(t.to_numpy(), ((a + 1).T * (a + 1)).T)
    t = run1(Relabel(table(a, i, j), (k, m)))
    np.testing.assert_array_equal(t.to_numpy(), a)
    with pytest.raises(ValueError, match="3 field.*for 2-d data"):
        run1(Relabel(table(a, i, j), (k, m, i)))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "csf", "dcsr"])
def test_reformat(fmt: str) -> None:
    a = rng.random((4, 5)) * (rng.random((4, 5)) < 0.3)
    spec = format_spec(fmt, 2)
    t = run1(Reformat(Immediate(spec), mapjoin("multiply", table(a, i, j), 2.0)))
    assert t.format == fmt and t.spec == spec
    np.testing.assert_allclose(t.to_numpy(), a * 2)
    assert t.nnz == np.count_nonzero(a)


def test_zero_d_and_casts() -> None:
    t = run1(mapjoin("add", table(np.array(2.5), ), 1))
    assert t.shape == () and t.to_numpy()[()] == 3.5
    t = run1(MapJoinCast := mapjoin("add", 1, 2))  # noqa: F841
    assert t.dtype == np.int64 and t.to_numpy()[()] == 3
    from lazysparse.logic.nodes import MapJoin
    t = run1(MapJoin(Immediate(astype_op("float32")), (table(np.arange(3), i),)))
    assert t.dtype == np.float32
    np.testing.assert_array_equal(t.to_numpy(), np.arange(3, dtype=np.float32))


def test_multi_query_plan_with_aliases() -> None:
    a = rng.random((3, 4))
    A, B, C = Alias("A"), Alias("B"), Alias("C")
    plan = Plan((
        Query(A, table(a, i, j, fmt="csr")),
        Query(B, aggregate("add", 0.0, Relabel(A, (i, j)), j)),
        Query(C, mapjoin("subtract", Relabel(A, (i, j)), Relabel(B, (i,)))),
        Produces((C, B)),
    ))
    c, b = interpret(plan)
    np.testing.assert_allclose(b.to_numpy(), a.sum(1))
    np.testing.assert_allclose(c.to_numpy(), a - a.sum(1)[:, None])


def test_errors() -> None:
    a = rng.random((3, 4))
    with pytest.raises(ValueError, match="field i has sizes 3 and 4"):
        run1(mapjoin("add", table(a, i, j), table(a.T, i, j)))
    with pytest.raises(ValueError, match="lacks"):
        run1(aggregate("add", 0.0, table(a, i, j), k))
    with pytest.raises(ValueError, match="before it is defined"):
        interpret(Plan((Query(Alias("X"), Relabel(Alias("Y"), ())), Produces((Alias("X"),)))))
    with pytest.raises(ValueError, match="no produces"):
        interpret(Plan((Query(Alias("X"), table(a, i, j)),)))
    with pytest.raises(TypeError, match="bitwise_and"):
        run1(mapjoin("bitwise_and", table(a, i, j), 1))


def test_densify_limit_is_respected() -> None:
    a = Tensor.from_numpy(np.eye(50), "csr")
    with set_densify_limit(100), pytest.raises(DensifyError):
        run1(mapjoin("add", table(a, i, j), 1.0))


DTYPES = ["bool", "int8", "int32", "uint8", "uint64", "float32", "float64", "complex64",
          "complex128"]


@settings(max_examples=examples(25), deadline=None)
@given(dt=st.sampled_from(DTYPES), data=st.data(), fmt=st.sampled_from(["dense", "csr", "coo"]))
def test_elementwise_and_sum_match_numpy(dt: str, data: st.DataObject, fmt: str) -> None:
    d = np.dtype(dt)
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=4))
    elements = (st.integers(0, 5) if d.kind in "iu" else st.booleans() if d.kind == "b"
                else st.integers(-4, 4))
    a = data.draw(hnp.arrays(d, shape, elements=elements))
    b = data.draw(hnp.arrays(d, shape[1:], elements=elements))
    if d.kind == "b":
        t = run1(mapjoin("logical_xor", table(a, i, j, fmt=fmt), table(b, j)))
        np.testing.assert_array_equal(t.to_numpy(), a ^ b)
        return
    t = run1(mapjoin("multiply", table(a, i, j, fmt=fmt), table(b, j)))
    np.testing.assert_array_equal(t.to_numpy(), a * b)
    assert t.dtype == d
    init = d.type(0)
    t = run1(aggregate("add", init, table(a, i, j, fmt=fmt), i))
    np.testing.assert_allclose(t.to_numpy(), a.sum(axis=0, dtype=d), rtol=1e-5)


FIELD_POOL = "abcd"
SIZES = {"a": 2, "b": 3, "c": 1, "d": 4}


@settings(max_examples=examples(30), deadline=None)
@given(data=st.data())
def test_contractions_match_einsum(data: st.DataObject) -> None:
    """aggregate(add, mapjoin(multiply, operands...), reduced) == np.einsum."""
    from lazysparse.logic.nodes import Field

    n_ops = data.draw(st.integers(1, 3))
    operands, specs = [], []
    for _ in range(n_ops):
        names = data.draw(st.lists(st.sampled_from(FIELD_POOL), max_size=3, unique=True))
        arr = rng.integers(-3, 4, [SIZES[c] for c in names]).astype(np.float64)
        fmt = data.draw(st.sampled_from(["dense", "coo"])) if names else "dense"
        operands.append(table(arr, *(Field(c) for c in names), fmt=fmt))
        specs.append(("".join(names), arr))
    all_fields = list(dict.fromkeys("".join(s for s, _ in specs)))
    reduced = data.draw(st.lists(st.sampled_from(all_fields), unique=True)) if all_fields else []
    expr = operands[0] if n_ops == 1 else mapjoin("multiply", *operands[:2])
    if n_ops == 3:
        expr = mapjoin("multiply", expr, operands[2])
    if reduced:
        expr = aggregate("add", 0.0, expr, *(Field(c) for c in reduced))
    out = "".join(c for c in all_fields if c not in reduced)
    want = np.einsum(",".join(s for s, _ in specs) + "->" + out, *(a for _, a in specs))
    got = run1(expr)
    np.testing.assert_allclose(got.to_numpy(), want)
    assert got.shape == want.shape
