"""Building blocks of lowering: folding constructors for loop-IR expressions and the
lowering state (where each operand stands inside the loop nest)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lazysparse.kernels.compile.ir.loop_ir import Bin, BinOp, Cast, Const, Expr, Select, Var

I64 = "int64"


def V(name: str) -> Var:
    """Shorthand for a variable reference."""
    return Var(name)


def C(v: Any) -> Const:
    """Shorthand for an index/bool constant."""
    return Const(v)


def add(a: Expr, b: Expr) -> Expr:
    """``a + b`` with trivial zeros folded."""
    if isinstance(b, Const) and b.value == 0:
        return a
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(a, Bin) and a.op is BinOp.MUL and isinstance(a.a, Const) and a.a.value == 0:
        return b
    return Bin(BinOp.ADD, a, b)


def cast(dtype: Any, e: Expr, src: Any) -> Expr:
    """``Cast`` unless the value already has that dtype."""
    return e if np.dtype(dtype) == np.dtype(src) else Cast(str(np.dtype(dtype)), e)


def native(dt: Any) -> bool:
    """Dtypes whose arithmetic Numba already performs at that width."""
    d = np.dtype(dt)
    return d.kind in "fc" or d in (np.dtype(np.int64), np.dtype(np.uint64))


def land(a: Expr | None, b: Expr | None) -> Expr | None:
    """Conjunction where None means statically true (constants folded)."""
    if a is None or (isinstance(a, Const) and a.value is True):
        return b
    if b is None or (isinstance(b, Const) and b.value is True):
        return a
    if isinstance(a, Const) or isinstance(b, Const):
        return C(False)
    return Bin(BinOp.AND, a, b)


def sel(c: Expr | None, a: Expr, b: Expr) -> Expr:
    """``a if c else b`` with constant conditions folded (None: statically true)."""
    if c is None or (isinstance(c, Const) and c.value is True):
        return a
    if isinstance(c, Const):
        return b
    return Select(c, a, b)


@dataclass
class OpState:
    """Where one operand stands: its position (or chained range) and whether it is present."""

    level: int = 0
    pos: Expr | None = field(default_factory=lambda: C(0))
    rng: tuple[Expr, Expr] | None = None
    present: Expr | None = None


@dataclass
class State:
    """Everything in scope at one point of the loop nest."""

    ops: dict[int, OpState]
    coords: dict[str, Expr]
    od: Expr = field(default_factory=lambda: C(0))  # dense output position so far
