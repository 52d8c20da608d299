"""Random expressions of sparse operands next to dense ones holding zeros, infinities and
NaN (docs/api.md, "The fill rule"): the compiled path and the reference interpreter agree
value for value, the lazy fill metadata is the computed tensor's, a sparse result stores no
more entries than its sparse operands' patterns hold, and finite inputs never give a
non-finite fill."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.engine.tiers import CompileMode, compile_mode_set
from tests.conftest import examples, slow_except

from .test_random_expressions import _executor

EXAMPLES = int(os.environ.get("LAZYSPARSE_RANDOM_EXAMPLES", examples(300))) // 3
SPECIALS = (0.0, 0.0, 1.0, -2.0, 0.5, np.inf, -np.inf, np.nan)
FINITE = (0.0, 0.0, 1.0, -2.0, 0.5, 3.0)


@dataclass(frozen=True)
class Leaf:
    values: np.ndarray
    fmt: str  # "dense", "csr", "csc", "coo"

    def build(self) -> Any:
        if self.fmt == "dense":
            return xp.asarray(self.values)
        return xp.asarray(self.values, format=self.fmt)

    @property
    def pattern(self) -> np.ndarray | None:
        return None if self.fmt == "dense" else self.values != 0


@dataclass(frozen=True)
class Node:
    op: str
    args: tuple[Any, ...]

    def build(self) -> Any:
        a = [x.build() if isinstance(x, Leaf | Node) else x for x in self.args]
        match self.op:
            case "where":
                return xp.where(a[0] > 0, a[1], a[2])
            case "reciprocal":
                return 1.0 / a[0]
            case "scale":
                return a[0] * a[1]
            case "less":
                return xp.astype(a[0] < a[1], xp.float64)
        return getattr(xp, self.op)(*a)


def _leaves(n: Any) -> list[Leaf]:
    if isinstance(n, Leaf):
        return [n]
    if isinstance(n, Node):
        return [x for a in n.args for x in _leaves(a)]
    return []


def _ops(n: Any) -> set[str]:
    return {n.op} | set().union(*(_ops(a) for a in n.args)) if isinstance(n, Node) else set()


@st.composite
def leaves(draw: st.DrawFn, shape: tuple[int, int], finite: bool, dense: bool = False) -> Leaf:
    fmt = "dense" if dense else draw(st.sampled_from(("dense", "dense", "csr", "csc", "coo")))
    size = int(np.prod(shape))
    pool = FINITE if finite or fmt != "dense" else SPECIALS
    vals = np.array(draw(st.lists(st.sampled_from(pool), min_size=size, max_size=size)),
                    dtype=np.float64).reshape(shape)
    if fmt == "dense":  # a dense operand may also be a broadcast row or column vector
        kind = draw(st.sampled_from(("full", "row", "col")))
        if kind == "row":
            vals = vals[:1, :]
        elif kind == "col":
            vals = vals[:, :1]
    return Leaf(vals, fmt)


@st.composite
def expressions(draw: st.DrawFn, shape: tuple[int, int], depth: int, finite: bool) -> Any:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(leaves(shape, finite))
    op = draw(st.sampled_from(("multiply", "multiply", "divide", "divide", "add", "subtract",
                               "maximum", "minimum", "where", "reciprocal", "scale",
                               "less")))
    if op in ("reciprocal", "divide"):
        # a sparse divisor makes a sparse array of fill inf, and two sparse operands with
        # non-finite fills meet only where neither stores (IEEE there): keep divisors dense
        divisor = draw(leaves(shape, finite, dense=True))
        if op == "reciprocal":
            return Node(op, (divisor,))
        return Node(op, (draw(expressions(shape, depth - 1, finite)), divisor))
    a = draw(expressions(shape, depth - 1, finite))
    if op == "scale":
        return Node(op, (a, draw(st.sampled_from((2.0, 0.5, -1.0)))))
    b = draw(expressions(shape, depth - 1, finite))
    if op == "where":
        return Node(op, (a, b, draw(st.sampled_from((0.0, 0.0, 1.0)))))
    return Node(op, (a, b))


@st.composite
def programs(draw: st.DrawFn) -> tuple[Any, bool]:
    shape = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    finite = draw(st.booleans())
    return draw(expressions(shape, 3, finite)), finite


def _compute(expr: Any, executor: str | None) -> Any:
    with _executor(executor), np.errstate(all="ignore"):
        lazy = expr.build()
        fill = lazy.fill_value
        r = xp.compute(lazy)
        return r, fill, np.asarray(r)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(prog=programs())
def test_sparse_next_to_dense_specials(prog: tuple[Any, bool]) -> None:
    expr, finite = prog
    got, fill, values = _compute(expr, None)
    _, ref_fill, ref = _compute(expr, "reference")
    np.testing.assert_allclose(values, ref, rtol=1e-12, equal_nan=True, err_msg=repr(expr))
    t = got.tensor()
    for f in (fill, ref_fill):  # the lazy metadata says what the kernels store
        assert f == t.fill_value or (np.isnan(f) and np.isnan(t.fill_value)), (expr, f)
    patterns = [p for p in (leaf.pattern for leaf in _leaves(expr)) if p is not None]
    if t.format != "dense" and patterns:
        union = np.logical_or.reduce([np.broadcast_to(p, values.shape) for p in patterns])
        assert t.nnz <= int(union.sum()), (expr, t.nnz, int(union.sum()))
    if finite and not _ops(expr) & {"divide", "reciprocal"}:
        assert np.isfinite(t.fill_value), (expr, t.fill_value)


@pytest.mark.parametrize("fmt", slow_except(["csr", "csc", "coo"], ["csr"]))
@pytest.mark.parametrize("case", ["(S1/D0)*S2", "S2*(S1/D0)", "D+(S1/D0)*S2", "(S1*Dinf)*S2",
                                  "S2*(S1*Dinf)*S1"])
def test_every_annihilating_operand_guards_its_product(case: str, fmt: str) -> None:
    """A product of two sparse operands, one behind a dense non-finite factor: where the
    first stores and the second does not, the second's implicit 0 annihilates (0, as the
    reference interpreter says), not ``inf * 0`` (a kernel once guarded by the first only)."""
    d = np.arange(12.0).reshape(3, 4)
    s1 = np.zeros((3, 4))
    s1[1, 2] = 1.0
    s1[0, 0] = -2.0
    s2 = np.zeros((3, 4))
    s2[2, 3] = 3.0
    s2[0, 0] = 0.5
    dinf = np.full((3, 4), np.inf)
    leaves = {"S1": Leaf(s1, fmt), "S2": Leaf(s2, fmt), "D0": Leaf(np.zeros((3, 4)), "dense"),
              "D": Leaf(d, "dense"), "Dinf": Leaf(dinf, "dense")}
    build = {
        "(S1/D0)*S2": lambda v: (v["S1"] / v["D0"]) * v["S2"],
        "S2*(S1/D0)": lambda v: v["S2"] * (v["S1"] / v["D0"]),
        "D+(S1/D0)*S2": lambda v: v["D"] + (v["S1"] / v["D0"]) * v["S2"],
        "(S1*Dinf)*S2": lambda v: (v["S1"] * v["Dinf"]) * v["S2"],
        "S2*(S1*Dinf)*S1": lambda v: v["S2"] * (v["S1"] * v["Dinf"]) * v["S1"],
    }[case]
    results = []
    for executor in (None, "reference"):
        with _executor(executor), np.errstate(all="ignore"):
            results.append(np.asarray(xp.compute(build({k: x.build()
                                                         for k, x in leaves.items()}))))
    np.testing.assert_array_equal(results[0], results[1])
    assert not np.isnan(results[0]).any()  # every NaN would be an unstored 0 times inf


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_product_of_two_implicit_fills_under_a_division(fmt: str) -> None:
    """Found by a random hunt with NaN fills: ``(S0 * Snan) / D``, neither sparse operand
    storing anything (fills 0 and NaN); NumPy on the fill rule: NaN / D = NaN."""
    s0 = Leaf(np.zeros((1, 3)), fmt)
    d = np.array([[1.0, -np.inf, 0.0]])
    results = []
    for executor in (None, "reference"):
        with _executor(executor), np.errstate(all="ignore"):
            snan = xp.asarray(np.full((1, 3), np.nan), format=fmt, fill_value=np.nan)
            results.append(np.asarray(xp.compute((s0.build() * snan) / xp.asarray(d))))
    with np.errstate(all="ignore"):
        want = (np.zeros((1, 3)) * np.nan) / d
    np.testing.assert_array_equal(results[1], want)
    np.testing.assert_array_equal(results[0], want)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_two_implicit_fills_next_to_stored_entries(fmt: str) -> None:
    """``(S0 * Snan) / D`` where each sparse operand stores some entries: an implicit 0
    annihilates where the other stores (0 * 5 is 0), and where neither stores the value is
    the fills' product (0 * NaN, NaN) divided by ``D``, in both tiers."""
    a0, a1 = np.array([[0.0, 2.0, 0.0, 3.0]]), np.array([[5.0, np.nan, np.nan, 4.0]])
    d = np.array([[1.0, -np.inf, 2.0, 0.0]])
    results = []
    for executor in (None, "reference"):
        with _executor(executor), np.errstate(all="ignore"):
            s0 = xp.asarray(a0, format=fmt)
            snan = xp.asarray(a1, format=fmt, fill_value=np.nan)
            results.append(np.asarray(xp.compute((s0 * snan) / xp.asarray(d))))
    want = np.array([[0.0, np.nan, np.nan, np.inf]])
    np.testing.assert_array_equal(results[1], want)
    np.testing.assert_array_equal(results[0], want)


@pytest.mark.parametrize("fmt", slow_except(["csr", "csc", "coo"], ["coo"]))
@pytest.mark.parametrize("cond", ["S > 0", "S != 0"])
def test_a_selection_annihilates_where_its_selector_stores_nothing(fmt: str,
                                                                    cond: str) -> None:
    """Found by a random hunt: ``C - Dinf * where(S > 0, E, 0)`` with ``S`` storing nothing
    where ``C`` stores; the selection has ``S``'s region (its fill selects the constant 0),
    so the product is the implicit 0 there and ``C``'s entry stays (-2, not ``inf * 0``)."""
    z = np.zeros((3, 3))
    c, d, s = z.copy(), z.copy() + 1.0, z.copy()
    c[2, 2], c[0, 1] = -2.0, 4.0
    d[2, 2], d[1, 1] = np.inf, -np.inf
    s[0, 1], s[1, 1] = 2.0, 3.0
    results = []
    for executor in (None, "reference"):
        with _executor(executor), np.errstate(all="ignore"):
            S = xp.asarray(s, format=fmt)
            mask = S > 0 if cond == "S > 0" else S != 0
            y = xp.asarray(c, format=fmt) - xp.asarray(d) * xp.where(mask, xp.asarray(z), 0.0)
            results.append(np.asarray(xp.compute(y)))
    want = c.copy()  # E is 0 where S stores (d finite there except inf * 0 at (1, 1))
    want[1, 1] = np.nan  # S stores there: -inf * 0 is NaN (IEEE on stored entries)
    np.testing.assert_array_equal(results[1], want)
    np.testing.assert_array_equal(results[0], want)


@pytest.mark.parametrize("fmt", slow_except(["csr", "csc", "coo"], ["coo"]))
def test_a_selection_on_a_dense_condition_holds_data(fmt: str) -> None:
    """Found by a random hunt: ``(where(D > 0, S, 0) / Z) * ((S1 * S2) * (S3 * d))`` with
    ``D`` and ``Z`` dense (no implicit region): the selection holds data wherever its dense
    condition does, so its 0 outside ``S`` is held and ``0 / 0`` is NaN there, which the
    stored entries of ``S1 * S2 * S3`` keep (a kernel once merged over ``S`` as if that 0
    were an implicit fill annihilating the division, giving 0)."""
    cond = np.array([[3.0, -2, 3, 1], [0, 0, -2, -2], [1, 0.5, 0, 3]])
    s = np.array([[0.0, 0, 1, 0.5], [-2, 1, 0, 0], [1, 0.5, -2, -2]])
    s1 = np.array([[-2.0, -2, 0.5, 1], [0.5, 1, 3, 0], [0, -2, 0.5, 0]])
    s2 = np.array([[-2.0, 0.5, 3, -2], [-2, 0, 3, 0], [-2, 0, 1, -2]])
    s3 = np.array([[0.0, 3, 0.5, -2], [-2, 1, 0.5, -2], [1, 1, 1, -2]])
    row = np.array([[0.0, -2, -2, 1]])
    results = []
    for executor in (None, "reference"):
        with _executor(executor), np.errstate(all="ignore"):
            left = xp.where(xp.asarray(cond) > 0, xp.asarray(s, format=fmt), 0.0)
            left = left / xp.asarray(np.zeros((3, 4)))
            right = (xp.asarray(s1, format=fmt) * xp.asarray(s2, format=fmt)) * (
                xp.asarray(s3, format=fmt) * xp.asarray(row))
            results.append(np.asarray(xp.compute(left * right)))
    with np.errstate(all="ignore"):
        held = np.where(cond > 0, s, 0.0) / 0.0  # every entry of the selection is held
        stored = (s1 != 0) & (s2 != 0) & (s3 != 0)  # where the sparse product stores
        want = np.where(stored, held * (s1 * s2 * s3 * row), 0.0)
    np.testing.assert_array_equal(results[1], want)
    np.testing.assert_array_equal(results[0], want)


@pytest.mark.parametrize("fmt", slow_except(["csr", "csc", "coo"], ["csr"]))
@pytest.mark.parametrize("case", ["D*0", "0*D", "S*0", "maximum(S,inf)", "minimum(D,-inf)"])
def test_a_scalar_never_annihilates_data(case: str, fmt: str) -> None:
    """Found by a widened random hunt: ``D * 0.0`` with ``D`` dense holding inf and NaN;
    a scalar holds its value everywhere, so it meets stored data by IEEE (NaN there, as
    NumPy), in the compiled tier, the eager tier and the reference interpreter (which
    once let the scalar's 0 annihilate like an implicit fill, giving 0)."""
    d = np.array([[0.0, np.inf, 1.0], [np.nan, -np.inf, -2.0]])
    s = np.array([[0.0, np.inf, 0.0], [np.nan, 0.0, 3.0]])
    ops = {  # the operation on NumPy's or lazysparse's arrays (``ns``: the namespace)
        "D*0": lambda ns, D, S: D * 0.0,
        "0*D": lambda ns, D, S: 0.0 * D,
        "S*0": lambda ns, D, S: S * 0.0,
        "maximum(S,inf)": lambda ns, D, S: ns.maximum(S, np.inf),
        "minimum(D,-inf)": lambda ns, D, S: ns.minimum(D, -np.inf),
    }
    with np.errstate(all="ignore"):
        want = np.asarray(ops[case](np, d, s))
    for name in ("compiled", "eager", "reference"):
        with _executor("reference" if name == "reference" else None), \
                compile_mode_set(CompileMode.EAGER if name == "eager" else CompileMode.SYNC), \
                np.errstate(all="ignore"):
            got = np.asarray(xp.compute(ops[case](xp, xp.asarray(d), xp.asarray(s, format=fmt))))
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("fmt", slow_except(["csr", "csc", "coo"], ["csc"]))
@pytest.mark.parametrize("case", ["*inf", "inf*", "+1", "maximum(,-1)", "/0"])
def test_a_held_selection_meets_a_scalar_everywhere(case: str, fmt: str) -> None:
    """Found by a widened random hunt: ``where(D > 0, S, 0) * inf`` fused into one kernel;
    the selection holds data wherever its dense condition does, so the result is dense and
    ``0 * inf`` is NaN where ``S`` stores nothing (a kernel once skipped those entries, as
    if the scalar's value there were the result's fill, leaving 0)."""
    d = np.array([[0.0, np.inf, 1.0], [np.nan, -np.inf, -2.0]])
    s = np.array([[0.0, np.inf, 0.0], [np.nan, 0.0, 3.0]])
    ops = {  # the operation on NumPy's or lazysparse's arrays (``ns``: the namespace)
        "*inf": lambda ns, w: w * np.inf,
        "inf*": lambda ns, w: np.inf * w,
        "+1": lambda ns, w: w + 1.0,
        "maximum(,-1)": lambda ns, w: ns.maximum(w, -1.0),
        "/0": lambda ns, w: w / 0.0,
    }
    with np.errstate(all="ignore"):
        want = np.asarray(ops[case](np, np.where(d > 0, s, 0.0)))
    for name in ("compiled", "eager", "reference"):
        with _executor("reference" if name == "reference" else None), \
                compile_mode_set(CompileMode.EAGER if name == "eager" else CompileMode.SYNC), \
                np.errstate(all="ignore"):
            # no name holds the selection: it fuses into the kernel of the scalar's op
            got = np.asarray(xp.compute(ops[case](xp, xp.where(
                xp.asarray(d) > 0, xp.asarray(s, format=fmt), 0.0))))
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("fmts", [("coo", "csr"), ("coo", "csc"), ("csr", "csr")])
@pytest.mark.parametrize("case", ["c*(S0*Sinf)", "max(Sinf,1)*(S0*Sinf)"])
def test_an_implicit_zero_annihilates_only_where_another_operand_stores(
        fmts: tuple[str, str], case: str) -> None:
    """Found by a widened random hunt: ``c * (S0 * Sinf)`` (fills 0 and inf) with ``c``
    dense. A row where ``S0`` stores nothing is 0 only where ``Sinf`` stores an entry and
    ``0 * inf = NaN`` elsewhere, so the kernel cannot skip ``S0``'s empty rows even though
    ``Sinf``'s row level is dense (it once wrote 0 across them, ``S0`` in COO driving the
    rows alone)."""
    a0 = np.zeros((3, 3))
    a0[0, 1] = 2.0
    ainf = np.full((3, 3), np.inf)
    ainf[1, 1], ainf[0, 1], ainf[2, 0] = 1.0, 3.0, -1.0
    results = []
    for executor in (None, "reference"):
        with _executor(executor), np.errstate(all="ignore"):
            s0 = xp.asarray(a0, format=fmts[0])
            sinf = xp.asarray(ainf, format=fmts[1], fill_value=np.inf)
            c = xp.max(sinf, axis=1) if case.startswith("max") else xp.asarray(np.ones(3))
            results.append(np.asarray(xp.compute(c * (s0 * sinf))))
    with np.errstate(all="ignore"):
        w = np.where((a0 != 0) | (ainf != np.inf), a0 * np.where(ainf == np.inf, 0.0, ainf),
                     np.nan)  # 0 where one stores, 0 * inf where neither does
        c_np = np.max(ainf, axis=1) if case.startswith("max") else np.ones(3)
        want = c_np * w
    np.testing.assert_array_equal(results[1], want)
    np.testing.assert_array_equal(results[0], want)


@pytest.mark.parametrize("fmts", [("csr", "csc"), ("coo", "csr"), ("csc", "coo")])
@pytest.mark.parametrize("case", ["maximum", "minimum", "prod(minimum)"])
def test_an_infinite_fill_annihilates_a_computed_nan(fmts: tuple[str, str], case: str) -> None:
    """Found by a widened random hunt: ``maximum(Sinf, Snan * 0)`` (fills inf and NaN) where
    ``Sinf`` stores nothing and ``Snan`` stores inf: the implicit inf annihilates the
    maximum (inf, as the reference interpreter says) although ``inf * 0`` is NaN there; the
    kernels once applied finite annihilators only and gave ``maximum(inf, NaN)``, NaN (so
    did ``prod(minimum(S-inf, ...), axis=1)``, -inf in the reference)."""
    s = -1.0 if "minimum" in case else 1.0
    a = s * np.array([[np.inf, -1.0, np.inf], [2.0, np.inf, np.inf]])  # fill s * inf
    b = np.array([[np.inf, 1.0, np.nan], [1.0, np.inf, 2.0]])  # fill NaN
    op = np.minimum if "minimum" in case else np.maximum
    with np.errstate(all="ignore"):
        want = np.where(np.isinf(a) & ~np.isnan(b), s * np.inf, op(a, b * 0.0))
        if case.startswith("prod"):
            want = np.prod(want, axis=1)
    for name in ("compiled", "eager", "reference"):
        with _executor("reference" if name == "reference" else None), \
                compile_mode_set(CompileMode.EAGER if name == "eager" else CompileMode.SYNC), \
                np.errstate(all="ignore"):
            sa = xp.asarray(a, format=fmts[0], fill_value=s * np.inf)
            sb = xp.asarray(b, format=fmts[1], fill_value=np.nan)
            y = getattr(xp, op.__name__)(sa, sb * 0.0)
            got = np.asarray(xp.compute(xp.prod(y, axis=1) if case.startswith("prod") else y))
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("fmts", [("csr", "csr"), ("coo", "csc"), ("csc", "coo")])
@pytest.mark.parametrize("case", ["sum(S0*(Snan*c))", "prod(min(S-inf,Snan*0))", "S0*(Snan*c)"])
def test_a_reduction_visits_where_no_operand_stores(fmts: tuple[str, str], case: str) -> None:
    """Found by a widened random hunt: ``sum(S0 * (Snan * 0.5), axis=1)`` (fills 0 and NaN)
    is NaN in a row where neither operand stores an entry somewhere (``0 * NaN`` there, the
    fill rule's op(fills)), though ``S0``'s implicit 0 annihilates where ``Snan`` stores.
    The kernel once iterated ``S0``'s entries only, trusting the analysis wherever the value
    needed the constant (``0.5``), and gave the row's stored sum; ``prod(minimum(S-inf,
    Snan * 0), axis=1)`` gave NaN for -inf so."""
    a = np.array([[0.0, 2.0, 0.0], [0.0, 0.0, 3.0]])
    b = np.array([[1.0, 1.0, np.nan], [np.inf, 1.0, 2.0]])  # fill NaN
    if "min" in case:
        a = np.array([[-np.inf, 1.0, -np.inf], [-2.0, -np.inf, -np.inf]])  # fill -inf
    fill = -np.inf if "min" in case else 0.0
    with np.errstate(all="ignore"):
        absent, stored = a == fill, ~np.isnan(b)  # the implicit entries, and b's stored
        z = -np.inf if "min" in case else 0.0  # the annihilator where a is absent
        inner = b * (0.0 if "min" in case else 0.5)
        vals = np.where(absent & stored, z, (np.minimum if "min" in case else np.multiply)(
            a, inner))
        want = vals if case.startswith("S0") else np.prod(vals, axis=1) if "prod" in case \
            else np.sum(vals, axis=1)
    for name in ("compiled", "eager", "reference"):
        with _executor("reference" if name == "reference" else None), \
                compile_mode_set(CompileMode.EAGER if name == "eager" else CompileMode.SYNC), \
                np.errstate(all="ignore"):
            sa = xp.asarray(a, format=fmts[0], fill_value=fill)
            sb = xp.asarray(b, format=fmts[1], fill_value=np.nan)
            if "min" in case:
                y = xp.prod(xp.minimum(sa, sb * 0.0), axis=1)
            else:
                y = sa * (sb * 0.5)
                y = y if case.startswith("S0") else xp.sum(y, axis=1)
            got = np.asarray(xp.compute(y))
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("case", ["sum(S0,0)*Dinf", "minimum(max(S-inf,0),Dnan)"])
def test_a_fused_reduction_to_a_vector_is_dense_in_every_tier(fmt: str, case: str) -> None:
    """Found by a widened random hunt (sparse leaves only): ``sum(S0, axis=0) * Dinf`` with
    an empty column in ``S0``. A reduction to a vector is dense (as NumPy's), so ``0 * inf``
    is NaN there; the optimizer fuses the map into the reduction (an epilogue) and the eager
    tier, which interprets that optimized plan, once gave the reduction the region of the
    empty column and annihilated the map (0; ``minimum(max(S-inf, axis=0), Dnan)``: -inf)."""
    s0 = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])
    sinf = np.array([[-np.inf, np.inf, 1.0], [-np.inf, 2.0, 3.0]])
    with np.errstate(all="ignore"):
        want = np.sum(s0, axis=0) * np.inf if case.startswith("sum") else \
            np.minimum(np.max(sinf, axis=0), np.nan)
    for name in ("compiled", "eager", "reference"):
        with _executor("reference" if name == "reference" else None), \
                compile_mode_set(CompileMode.EAGER if name == "eager" else CompileMode.SYNC), \
                np.errstate(all="ignore"):
            if case.startswith("sum"):
                y = xp.sum(xp.asarray(s0, format=fmt), axis=0) * xp.asarray(np.full(3, np.inf))
            else:
                y = xp.minimum(xp.max(xp.asarray(sinf, format=fmt, fill_value=-np.inf), axis=0),
                               xp.asarray(np.full(3, np.nan)))
            got = np.asarray(xp.compute(y))
        np.testing.assert_array_equal(got, want, err_msg=name)
