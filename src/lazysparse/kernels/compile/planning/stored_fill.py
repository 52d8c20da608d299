"""Outputs never store the fill: a kernel that computes a sparse result's values drops the
entries whose value equals the result's fill (``maximum(X, 0)``, ``X > 0.5``, ``X - X``),
as scipy's ``maximum``/``minimum``/comparisons and its SpGEMM do.

Equal means :func:`formats.dtypes.same_value`: ``-0.0`` equals ``0.0``, NaN equals NaN (a
NaN in either part of a complex counts). Which results, and where the test runs:

- **computed values only**: a query whose value is a bare read of one sparse operand (no
  arithmetic, no reduction, no epilogue: a copy into another layout) keeps the operand's
  stored entries as they are, explicit fills included (scipy's conversions keep them too);
- **unless a reader needs them**: a layout that ``keeps_fills`` (the optimizer's choice for a
  sparse result that a map reads where its implicit entries annihilate while a reached one
  does not: ``(A @ B) / D`` with the product stored first, ``optimizer.unreached``) keeps
  every entry a term of its value reaches, a sum that cancels to the fill included (where
  the loops' co-iteration visits more, the kernel tests the structural "holds data" rule
  at each point: ``compile.lowering.outputs.OutputLowering.where_reached``);
- **appends and workspaces** (``OutputMode.sparse``): the fill phase tests each entry as it
  is emitted (one compare, :func:`keep_expr`), so nothing equal to the fill is written and
  an ancestor group opens only for a child that is kept. The count phase stays
  structural: its counts are upper bounds (counting would otherwise have to compute every
  value, a SpGEMM's whole row sums). The single-pass hosts trim to what the fill wrote
  already; after count + fill the host moves each chunk's entries together when some
  were dropped (``backends.numba.fill_compaction.compact_chunks``; nothing moves when
  none were);
- **shared patterns** (``OutputMode.SHARED``: the result reuses an operand's index arrays and
  the kernel writes one value per stored entry): each chunk counts the values it wrote
  that equal the fill (``nfill[t]``, one compare per entry, :func:`same_expr`); only when
  some chunk counted one does the host give the sharing up and build compacted index
  arrays (``formats.stored_fills.drop_stored_fills``); otherwise the result
  still shares the operand's arrays. A structured result (DIA, BSR, ELL, run-length)
  keeps its layout and stores the fill where the layout does anyway.

The GPU backend does not apply the rule (its schedule sizes sparse results from the counts);
``lower(..., drop_fill=False)`` is the default.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from lazysparse.formats.dtypes import is_nan_scalar
from lazysparse.formats.specs import is_structured
from lazysparse.kernels.compile.ir.loop_ir import Bin, BinOp, Expr, Not, Var
from lazysparse.kernels.compile.planning.analysis import KernelInfo, PAccess
from lazysparse.kernels.compile.planning.output_plan import OutputMode


class FillTest(StrEnum):
    """How the fill phase tests an entry's value ``v`` against the result fill ``ofill``
    (the value is the word the kernel's comments print)."""

    EQUAL = "v != ofill"  # integers, bools, floats with a fill that is not NaN
    NAN = "v == v"  # the fill is NaN (known from the kernel's key): keep what is not NaN
    ANY = "v != ofill and not both NaN"  # an epilogue's fill follows its constants


def copies_operand(info: KernelInfo) -> bool:
    """Whether the query's value is a bare read of one sparse operand (a copy into
    another layout): its stored entries are the user's, explicit fills included."""
    if info.reduce_op is not None or info.epilogue is not None:
        return False
    e = info.expr
    if not isinstance(e, PAccess):
        return False
    return not all(lv.located for lv in info.operands[e.slot].levels)


def fill_test(info: KernelInfo, mode: OutputMode, out_fill: Any) -> FillTest | None:
    """The test the kernel applies to each entry of a result written in ``mode`` with fill
    ``out_fill``; None where the result keeps every entry it writes (dense results,
    structured layouts, copies)."""
    if not (mode.sparse or mode is OutputMode.SHARED):
        return None
    if is_structured(info.out_spec) or copies_operand(info) or info.out_spec.keeps_fills:
        return None
    if info.out_dtype.kind not in "fc":
        return FillTest.EQUAL
    if info.epilogue is not None:  # the kernel is keyed by the init, not the result fill
        return FillTest.ANY
    return FillTest.NAN if is_nan_scalar(out_fill) else FillTest.EQUAL


def keep_expr(test: FillTest, v: Expr) -> Expr:
    """The loop-IR condition under which an entry of value ``v`` is stored."""
    f = Var("ofill")
    if test is FillTest.EQUAL:
        return Bin(BinOp.NE, v, f)
    if test is FillTest.NAN:
        return Bin(BinOp.EQ, v, v)
    either_not_nan = Bin(BinOp.OR, Bin(BinOp.EQ, v, v), Bin(BinOp.EQ, f, f))
    return Bin(BinOp.AND, Bin(BinOp.NE, v, f), either_not_nan)


def same_expr(test: FillTest, v: Expr) -> Expr:
    """The loop-IR condition that ``v`` equals the result fill (``not keep_expr``)."""
    return Not(keep_expr(test, v))


__all__ = ["FillTest", "copies_operand", "fill_test", "keep_expr", "same_expr"]
