"""Random Array API expressions through the default (compiled) path, checked against NumPy on
the dense equivalent and against the reference interpreter (the oracle).

An expression is a recipe: a tree of namespace calls (depth <= 4) over leaves drawn in mixed
formats (dense, csr, csc, coo, csf, unordered csr, hash, bytemap, dia, bsr, ell, rle), fill
values (0, NaN, 1),
shapes ((n, n), (n,), ()) and dtypes of one kind per expression (int8 with int64, float32
with float64, ...).
The same recipe is applied to ``lazysparse`` arrays (compiled, the reference executor, the
eager tier) and to ``numpy`` arrays, so the four answers must agree (and the eager tier's
result format is the compiled one's).

Stored values are finite. Half the float/complex expressions draw NaN fills, and those use
no operator that a fill annihilates (multiply, matmul, prod): an implicit fill annihilates
such an operator even against a NaN (the scipy.sparse convention, docs/api.md "The fill
rule"), where dense NumPy gives NaN; test_fill_annihilation_convention pins that down, and
tests/api/test_fill_rule_random.py draws dense operands with zeros, infinities and NaN.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.engine import tiers
from lazysparse.engine.tiers import CompileMode, compile_mode_set
from lazysparse.formats import Compressed, Tensor
from tests.conftest import examples

DTYPES = ("bool", "int8", "int64", "uint8", "float32", "float64", "complex128")
# "unordered": a CSR whose rows hold their entries in a random order (scipy's unsorted CSR,
# what a SpGEMM returns); "hash" and "bytemap": the scatter-friendly levels of issue 14
# "dia", "bsr", "ell", "rle": the structured levels of issue 16 (dia/bsr: 2-D, else coo)
FORMATS = ("dense", "csr", "csc", "coo", "csf", "unordered", "hash", "bytemap", "dia", "bsr",
           "ell", "rle")
_STRUCTURED_2D = ("dia", "bsr")
EXAMPLES = int(os.environ.get("LAZYSPARSE_RANDOM_EXAMPLES", examples(300)))
# shrinking re-runs compiled kernels for minutes; LAZYSPARSE_RANDOM_SHRINK=0 skips it
PHASES = tuple(p for p in Phase if p is not Phase.shrink or
               os.environ.get("LAZYSPARSE_RANDOM_SHRINK", "1") != "0")


def shuffled_rows(t: Tensor) -> Tensor:
    """A CSR tensor with each row's entries reversed, as an unordered level."""
    low = t.levels[1]
    idx, vals = low.idx.copy(), t.values.copy()
    for r in range(t.shape[0]):
        a, b = int(low.ptr[r]), int(low.ptr[r + 1])
        idx[a:b], vals[a:b] = idx[a:b][::-1].copy(), vals[a:b][::-1].copy()
    level = Compressed(low.size, low.ptr, idx, ordered=False)
    return Tensor(t.shape, [t.levels[0], level], (0, 1), vals, t.fill_value)


@dataclass(frozen=True)
class Leaf:
    """An input array: its dense values, storage format and fill value."""

    values: np.ndarray
    fmt: str
    fill: Any

    def build(self, ns: Any) -> Any:
        if ns is np:
            return self.values
        if self.fmt == "dense" or self.values.ndim == 0:
            return xp.asarray(self.values)
        if self.fmt == "unordered" and self.values.ndim == 2:
            return xp.asarray(shuffled_rows(
                xp.asarray(self.values, format="csr", fill_value=self.fill).tensor()))
        if self.fmt in _STRUCTURED_2D and self.values.ndim != 2:
            return xp.asarray(self.values, format="coo", fill_value=self.fill)
        if self.fmt in ("hash", "bytemap", *_STRUCTURED_2D, "ell", "rle"):
            return xp.asformat(xp.asarray(self.values, format="coo", fill_value=self.fill),
                               self.fmt)
        fmt = self.fmt if self.values.ndim == 2 or self.fmt in ("coo", "csf") else "coo"
        return xp.asarray(self.values, format=fmt, fill_value=self.fill)

    def __repr__(self) -> str:
        return (f"Leaf({self.fmt}, fill={self.fill!r}, {self.values.dtype}, "
                f"{self.values.tolist()!r})")


@dataclass(frozen=True)
class Call:
    """``fn(*args)`` where ``fn(ns, *evaluated_args)`` works for NumPy and lazysparse."""

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]

    def build(self, ns: Any) -> Any:
        return self.fn(ns, *(a.build(ns) for a in self.args))

    def __repr__(self) -> str:
        return f"{self.name}({', '.join(map(repr, self.args))})"


@dataclass(frozen=True)
class Expr:
    """A recipe with its result's shape (tracked while drawing)."""

    node: Any
    shape: tuple[int, ...]


def _binary_ops(dtype: str, nan_fills: bool) -> tuple[str, ...]:
    if nan_fills:  # see the module docstring: no annihilating op meets a NaN
        return ("add", "subtract", "maximum", "minimum", "less", "equal") if \
            dtype.startswith("float") else ("add", "subtract", "equal")
    if dtype == "bool":
        return ("logical_and", "logical_or", "logical_xor", "equal", "not_equal")
    if dtype.startswith("complex"):
        return ("add", "subtract", "multiply", "equal")
    return ("add", "subtract", "multiply", "maximum", "minimum", "less", "equal")


def _unary_ops(dtype: str) -> tuple[str, ...]:
    if dtype == "bool":
        return ("logical_not",)
    if dtype.startswith("complex"):
        return ("negative", "square", "conj")
    if dtype.startswith("uint"):
        return ("abs", "square")
    return ("negative", "abs", "square")


def _values(draw: st.DrawFn, shape: tuple[int, ...], dtype: str, fill: Any) -> np.ndarray:
    size = int(np.prod(shape))
    vals = draw(st.lists(st.sampled_from((0, 0, 1, 2, 3, -1)), min_size=size, max_size=size))
    arr = np.array(vals, dtype=np.int64).reshape(shape)
    if dtype == "bool":
        return arr > 0
    if dtype.startswith("uint"):
        arr = np.abs(arr)
    out = arr.astype(dtype)
    # about half the entries take the fill value, so the sparse layouts are sparse
    mask = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)),
                    dtype=bool).reshape(shape)
    return np.where(mask, out.dtype.type(fill), out)


# leaves of an expression mix dtypes of one kind (Array API promotion within a kind)
FAMILIES = {"bool": ("bool",), "int8": ("int8", "int64", "int16"),
            "int64": ("int64", "int8"), "uint8": ("uint8", "uint16"),
            "float32": ("float32", "float64"), "float64": ("float64", "float32"),
            "complex128": ("complex128", "complex64")}


@st.composite
def leaves(draw: st.DrawFn, shape: tuple[int, ...], dtype: str, nan_fills: bool) -> Expr:
    dtype = draw(st.sampled_from(FAMILIES[dtype]))
    fills: tuple[Any, ...] = (0, 0, 1)
    if dtype == "bool":
        fills = (False, False, True)
    elif dtype.startswith(("float", "complex")):
        fills = (0, float("nan"), 1, float("nan")) if nan_fills else (0, 0, 1)
    fmt = draw(st.sampled_from(FORMATS)) if shape else "dense"
    fill = draw(st.sampled_from(fills))
    values = _values(draw, shape, dtype, fill)
    return Expr(Leaf(values, fmt, fill), shape)


def _ns_fn(name: str) -> Callable[..., Any]:
    return lambda ns, *a: getattr(ns, name)(*a)


@st.composite
def expressions(draw: st.DrawFn, n: int, dtype: str, depth: int, nan_fills: bool) -> Expr:
    """A random expression of shape (n, n) or (n,) (or () after a full reduction)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        shape = draw(st.sampled_from(((n, n), (n, n), (n,), ())))
        return draw(leaves(shape, dtype, nan_fills))
    kind = draw(st.sampled_from(("binary", "binary", "unary", "scalar", "transpose",
                                 "matmul", "reduce", "broadcast")))
    a = draw(expressions(n, dtype, depth - 1, nan_fills))
    if kind == "binary":
        b = draw(expressions(n, dtype, depth - 1, nan_fills))
        op = draw(st.sampled_from(_binary_ops(dtype, nan_fills)))
        shape = np.broadcast_shapes(a.shape, b.shape)
        out = Expr(Call(op, _ns_fn(op), (a.node, b.node)), shape)
        if op in ("less", "equal", "not_equal") and dtype != "bool":
            # comparisons give bool: cast back so the expression keeps one dtype
            return Expr(Call("astype", lambda ns, x, d=dtype: ns.astype(x, getattr(ns, d)),
                             (out.node,)), shape)
        return out
    if kind == "unary":
        op = draw(st.sampled_from(_unary_ops(dtype)))
        return Expr(Call(op, _ns_fn(op), (a.node,)), a.shape)
    if kind == "scalar":
        op = draw(st.sampled_from((("add",) if nan_fills else ("add", "multiply"))
                                  if dtype != "bool" else
                                  ("logical_and", "logical_or")))
        c: Any = draw(st.sampled_from((True, False) if dtype == "bool" else (0, 1, 2)))
        sym = {"add": "+", "multiply": "*", "logical_and": "&", "logical_or": "|"}[op]
        fn = {"+": lambda ns, x, c=c: x + c, "*": lambda ns, x, c=c: x * c,
              "&": lambda ns, x, c=c: x & c, "|": lambda ns, x, c=c: x | c}[sym]
        return Expr(Call(f"x {sym} {c!r}", fn, (a.node,)), a.shape)
    if kind == "transpose" and len(a.shape) == 2:
        return Expr(Call("permute_dims", lambda ns, x: ns.permute_dims(x, (1, 0)),
                         (a.node,)), a.shape[::-1])
    if kind == "matmul" and dtype != "bool" and not nan_fills and len(a.shape) >= 1:
        b = draw(expressions(n, dtype, depth - 1, nan_fills))
        if b.shape and a.shape[-1] == b.shape[-2 if len(b.shape) == 2 else 0]:
            shape = (np.empty(a.shape) @ np.empty(b.shape)).shape
            return Expr(Call("matmul", _ns_fn("matmul"), (a.node, b.node)), shape)
    if kind == "broadcast" and len(a.shape) == 1:
        where = draw(st.sampled_from((0, 1)))
        fn = (lambda ns, x: x[None, :]) if where == 0 else (lambda ns, x: x[:, None])
        return Expr(Call(f"expand_dims({where})", fn, (a.node,)),
                    (1, n) if where == 0 else (n, 1))
    if kind == "reduce" and a.shape:
        return draw(reductions(a, dtype, nan_fills))
    return a


@st.composite
def reductions(draw: st.DrawFn, a: Expr, dtype: str, nan_fills: bool) -> Expr:
    nd = len(a.shape)
    axis = draw(st.sampled_from((None, *range(nd))))
    keep = draw(st.booleans())
    names = ("any", "all") if dtype == "bool" else ("sum", "sum", "max", "min")
    if dtype.startswith("complex"):
        names = ("sum",) if nan_fills else ("sum", "prod")
    if 0 in a.shape:
        names = tuple(x for x in names if x not in ("max", "min")) or ("sum",)
    name = draw(st.sampled_from(names))

    def fn(ns: Any, x: Any, name: str = name, axis: Any = axis, keep: bool = keep,
           dtype: str = dtype) -> Any:
        r = getattr(ns, name)(x, axis=axis, keepdims=keep)
        return r if name in ("any", "all") or r.dtype == x.dtype else \
            ns.astype(r, getattr(ns, dtype))

    if axis is None:
        shape = (1,) * nd if keep else ()
    else:
        shape = tuple(1 if i == axis else s for i, s in enumerate(a.shape)) if keep else \
            tuple(s for i, s in enumerate(a.shape) if i != axis)
    return Expr(Call(f"{name}(axis={axis}, keepdims={keep})", fn, (a.node,)), shape)


@st.composite
def programs(draw: st.DrawFn) -> Expr:
    n = draw(st.integers(0, 4))
    dtype = draw(st.sampled_from(DTYPES))
    nan_fills = dtype.startswith(("float", "complex")) and draw(st.booleans())
    return draw(expressions(n, dtype, 4, nan_fills))


def _compare(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@contextmanager
def _executor(name: str | None) -> Iterator[None]:
    """Run with ``LAZYSPARSE_EXECUTOR`` set to ``name`` (None: the default, compiled)."""
    old = os.environ.pop("LAZYSPARSE_EXECUTOR", None)
    if name is not None:
        os.environ["LAZYSPARSE_EXECUTOR"] = name
    try:
        yield
    finally:
        os.environ.pop("LAZYSPARSE_EXECUTOR", None)
        if old is not None:
            os.environ["LAZYSPARSE_EXECUTOR"] = old


@settings(max_examples=EXAMPLES, deadline=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(expr=programs())
def test_random_expression_matches_numpy_and_oracle(expr: Expr) -> None:
    with np.errstate(all="ignore"):
        want = np.asarray(expr.node.build(np))
    with _executor(None):
        res = xp.compute(expr.node.build(xp))
        got = np.asarray(res)
    _compare(got, want, f"compiled vs NumPy: {expr.node!r}")
    with _executor("reference"):
        res = xp.compute(expr.node.build(xp))
        ref = np.asarray(res)
    _compare(ref, want, f"reference vs NumPy: {expr.node!r}")
    with compile_mode_set(CompileMode.EAGER):  # the eager tier (engine.tiers): values and format
        eager = xp.compute(expr.node.build(xp))
        with _stored_entries_tier():  # every operand counted large: engine.eager_sparse
            stored = xp.compute(expr.node.build(xp))
    _compare(np.asarray(eager), want, f"eager tier vs NumPy: {expr.node!r}")
    _compare(np.asarray(stored), want, f"eager tier over stored entries vs NumPy: {expr.node!r}")
    compiled = xp.compute(expr.node.build(xp))
    assert eager.tensor().spec.name == compiled.tensor().spec.name, expr.node
    assert stored.tensor().spec.name == compiled.tensor().spec.name, expr.node


@contextmanager
def _stored_entries_tier() -> Iterator[None]:
    """The eager tier's dense-interpreter bound at 0 for the block: every plan runs over
    its stored entries (``engine.eager_sparse``) or, refused there, compiles."""
    old = tiers.EAGER_MAX_ELEMENTS
    tiers.EAGER_MAX_ELEMENTS = 0
    try:
        yield
    finally:
        tiers.EAGER_MAX_ELEMENTS = old


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "csf"])
def test_fill_annihilation_convention(fmt: str) -> None:
    """An implicit 0 annihilates multiply even against NaN (scipy's answer); a stored 0
    follows IEEE; the reference executor follows the same rule (docs/api.md, the fill
    rule)."""
    dense = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    b = np.array([[np.nan, np.nan, 1.0], [1.0, 1.0, np.inf]])
    x = np.array([np.nan, 1.0, 1.0])
    a = xp.asarray(dense, format=fmt, fill_value=0.0)
    with _executor(None):
        np.testing.assert_array_equal(np.asarray(a * xp.asarray(b)),
                                      sp.csr_array(dense).multiply(b).toarray())
        np.testing.assert_array_equal(np.asarray(a @ xp.asarray(x)), [np.nan, 2.0])
        stored = xp.asarray(sp.csr_array((np.array([1.0, 0.0, 2.0]), np.array([0, 1, 1]),
                                          np.array([0, 2, 3])), shape=(2, 3)))
        got = np.asarray(stored * xp.asarray(b))
        np.testing.assert_array_equal(got, [[np.nan, np.nan, 0.0], [0.0, 2.0, 0.0]])
    with _executor("reference"):
        a = xp.asarray(dense, format=fmt, fill_value=0.0)
        np.testing.assert_array_equal(np.asarray(a * xp.asarray(b)),
                                      sp.csr_array(dense).multiply(b).toarray())
