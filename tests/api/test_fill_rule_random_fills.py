"""Random expressions of sparse operands with fills 0, inf, -inf, NaN and 1 (csr, csc and
coo mixed in one expression), dense operands holding zeros, infinities and NaN, scalars,
and reductions along an axis (sum, prod, max, min) broadcast back as a column or a row:
the compiled kernels, the eager tier and the reference interpreter (the oracle) agree value
for value, and the lazy fill metadata is the computed tensor's (docs/api.md, "The fill
rule"). The fast tier draws a few tens of examples, the slow test a wider run;
``LAZYSPARSE_RANDOM_EXAMPLES`` sets both (a hunt: ``HYPOTHESIS_PROFILE=dev`` and
``--hypothesis-seed``)."""

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
from tests.conftest import examples

from .test_random_expressions import PHASES, _executor

_OVERRIDE = os.environ.get("LAZYSPARSE_RANDOM_EXAMPLES")
FAST_EXAMPLES = int(_OVERRIDE) if _OVERRIDE else examples(100)
SLOW_EXAMPLES = int(_OVERRIDE) if _OVERRIDE else examples(200)
FILLS = (0.0, np.inf, -np.inf, np.nan, 1.0)
# None: the leaf's fill (an unstored entry); stored entries may hold the specials too
STORED = (None, None, None, 0.0, 1.0, -2.0, 0.5, np.inf, -np.inf, np.nan)
SPECIALS = (0.0, 0.0, 1.0, -2.0, 0.5, np.inf, -np.inf, np.nan)
SCALARS = (0.0, 0.5, -1.0, np.inf, -np.inf, np.nan)
ELEMENTWISE = ("multiply", "divide", "add", "subtract", "maximum", "minimum", "where")
REDUCTIONS = ("sum", "prod", "max", "min")
TIERS = ("compiled", "eager", "reference")


@dataclass(frozen=True)
class Leaf:
    """A dense array (``fill`` None) or a sparse one of format ``fmt`` and fill ``fill``."""

    values: np.ndarray
    fmt: str  # "dense", "csr", "csc", "coo"
    fill: float | None = None

    def build(self) -> Any:
        if self.fmt == "dense":
            return xp.asarray(self.values)
        return xp.asarray(self.values, format=self.fmt, fill_value=self.fill)

    def __repr__(self) -> str:
        vals = np.array2string(self.values, separator=", ").replace("\n", "")
        return f"Leaf(np.array({vals}), {self.fmt!r}, {self.fill!r})"


@dataclass(frozen=True)
class Node:
    """``op`` over ``args``; a reduction's ``axis`` says how it broadcasts back (axis 1: a
    column ``r[:, None]``, axis 0: a row ``r[None, :]``)."""

    op: str
    args: tuple[Any, ...]
    axis: int = 0

    def build(self) -> Any:
        a = [x.build() if isinstance(x, Leaf | Node) else x for x in self.args]
        if self.op in REDUCTIONS:
            r = getattr(xp, self.op)(a[0], axis=self.axis)
            return r[:, None] if self.axis == 1 else r[None, :]
        if self.op == "where":
            return xp.where(a[0] > 0, a[1], a[2])
        return getattr(xp, self.op)(*a)


@st.composite
def leaves(draw: st.DrawFn, shape: tuple[int, int], dense: bool) -> Leaf:
    """A sparse leaf (csr, csc or coo, any fill of FILLS, stored specials) or, if ``dense``,
    now and then a dense one holding specials, sometimes a broadcast row or column."""
    fmt = draw(st.sampled_from(("dense", "csr", "csc", "coo") if dense else
                               ("csr", "csc", "coo")))
    size = int(np.prod(shape))
    if fmt == "dense":
        vals = np.array(draw(st.lists(st.sampled_from(SPECIALS), min_size=size,
                                      max_size=size)), dtype=np.float64).reshape(shape)
        kind = draw(st.sampled_from(("full", "full", "row", "col")))
        return Leaf(vals[:1, :] if kind == "row" else vals[:, :1] if kind == "col" else vals,
                    fmt)
    fill = draw(st.sampled_from(FILLS))
    drawn = draw(st.lists(st.sampled_from(STORED), min_size=size, max_size=size))
    vals = np.array([fill if v is None else v for v in drawn], dtype=np.float64)
    return Leaf(vals.reshape(shape), fmt, fill)


@st.composite
def expressions(draw: st.DrawFn, shape: tuple[int, int], depth: int,
                dense: bool = True) -> Any:
    """A tree of elementwise ops and broadcast reductions over ``shape`` leaves, at most
    ``depth`` deep (dense leaves only if ``dense``)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(leaves(shape, dense))
    op = draw(st.sampled_from(ELEMENTWISE + REDUCTIONS))
    a = draw(expressions(shape, depth - 1, dense))
    if op in REDUCTIONS:
        return Node(op, (a,), draw(st.integers(0, 1)))
    b = draw(operands(shape, depth - 1, dense))
    if op == "where":
        return Node(op, (a, b, draw(operands(shape, depth - 1, dense))))
    if draw(st.integers(0, 4)) == 0:  # swapped: a scalar may come first (``inf - x``)
        return Node(op, (b, a))
    return Node(op, (a, b))


@st.composite
def operands(draw: st.DrawFn, shape: tuple[int, int], depth: int, dense: bool) -> Any:
    """An expression, or now and then a Python scalar (it holds its value everywhere and
    never annihilates; the kernels take it as a constant)."""
    if draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(SCALARS))
    return draw(expressions(shape, depth, dense))


@st.composite
def programs(draw: st.DrawFn) -> Any:
    """An expression of depth <= 3 over a random shape up to 4 x 4; a third of them over
    sparse leaves only (a dense leaf often makes the whole result dense)."""
    shape = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    return draw(expressions(shape, 3, draw(st.integers(0, 2)) > 0))


def compute_in(expr: Any, tier: str) -> tuple[float, Any]:
    """``expr`` computed in ``tier``: the lazy fill and the computed tensor."""
    mode = CompileMode.EAGER if tier == "eager" else CompileMode.SYNC
    with _executor("reference" if tier == "reference" else None), compile_mode_set(mode), \
            np.errstate(all="ignore"):
        lazy = expr.build()
        fill = lazy.fill_value
        return fill, xp.compute(lazy).tensor()


def check_tiers(expr: Any) -> None:
    """Every tier gives the reference's values, and a sparse tensor's fill is its lazy
    array's (a dense one's is nominal: it has no implicit region)."""
    got = {tier: compute_in(expr, tier) for tier in TIERS}
    ref = got["reference"][1].to_numpy()
    for tier, (fill, t) in got.items():
        np.testing.assert_allclose(t.to_numpy(), ref, rtol=1e-12, equal_nan=True,
                                   err_msg=f"{tier}: {expr!r}")
        same = fill == t.fill_value or (np.isnan(fill) and np.isnan(t.fill_value))
        assert t.format == "dense" or same, (tier, expr, fill, t.fill_value)


_SETTINGS = dict(deadline=None, phases=PHASES,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=FAST_EXAMPLES, **_SETTINGS)
@given(expr=programs())
def test_random_fills_and_reductions_agree(expr: Any) -> None:
    check_tiers(expr)


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES, **_SETTINGS)
@given(expr=programs())
def test_random_fills_and_reductions_agree_wide(expr: Any) -> None:
    check_tiers(expr)
