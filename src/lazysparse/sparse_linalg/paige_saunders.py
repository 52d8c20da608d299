"""What Paige and Saunders' solvers share (LSQR's Golub–Kahan bidiagonalization and
MINRES's Lanczos process, both as in scipy.sparse.linalg): the Givens rotation of their
QR updates, the next Krylov vector with its norm in one plan, and the stopping rule's
form (the last test that holds names the stop)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.sparse_linalg.operators import xp


def sym_ortho(a: float, b: float) -> tuple[float, float, float]:
    """A stable Givens rotation ``(c, s, r)`` with ``[c s; -s c] [a; b] = [r; 0]``."""
    if b == 0:
        return math.copysign(1.0, a) if a != 0 else 1.0, 0.0, abs(a)
    if a == 0:
        return 0.0, math.copysign(1.0, b), abs(b)
    r = math.hypot(a, b)
    return a / r, b / r, r


def with_norm(v: LazyArray) -> tuple[LazyArray, float]:
    """``v`` computed with its 2-norm in one plan (a rounding-negative square is 0)."""
    v, vv = xp.compute(v, xp.vecdot(v, v))
    return v, math.sqrt(max(float(vv), 0.0))


def stop_code(default: int, tests: Iterable[tuple[bool, int]]) -> int:
    """scipy's ``istop``: the code of the last of ``tests`` that holds, else ``default``
    (the tests come weakest first, so a later one overrides)."""
    code = default
    for holds, which in tests:
        if holds:
            code = which
    return code
