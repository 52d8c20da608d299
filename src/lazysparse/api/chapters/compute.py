"""``xp.compute`` and ``xp.explain``: the public entry points that turn lazy arrays into
results, checking their arguments (the work is ``api/array/materialize.py``'s, which
``LazyArray`` itself computes through)."""

from __future__ import annotations

from typing import Any

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.materialize import build_plan as build_plan
from lazysparse.api.array.materialize import compute_arrays, explain_arrays
from lazysparse.api.array.materialize import substitute_memoized as substitute_memoized
from lazysparse.engine import Explanation, explain_plan
from lazysparse.logic.nodes import Plan


def _check_arrays(arrays: tuple[Any, ...], fname: str) -> None:
    for a in arrays:
        if not isinstance(a, LazyArray):
            raise TypeError(f"{fname} takes lazysparse arrays, got {type(a).__name__}")


def compute(*arrays: LazyArray) -> LazyArray | tuple[LazyArray, ...]:
    """Compute ``arrays`` together in one plan (run by the cpu's executor, or by the CUDA
    backend for arrays on device cuda); each keeps its result and becomes a leaf. Returns
    the array itself for one argument (``x = xp.compute(x)``) and a tuple of the arrays for
    several (``x, r = xp.compute(x, r)``). Reductions the user still holds inside their
    histories, or sharing them, are computed in the same plan when keeping them costs no
    more than recomputing them (``api.held_values``: CG's ``Ap``, ``r`` and ``p`` then run
    once). The arrays must share one device (ValueError otherwise): eager
    functions of several arrays (``concat`` …) compute their operands here, so this is
    also their mixing check."""
    _check_arrays(arrays, "compute()")
    compute_arrays(arrays)
    return arrays[0] if len(arrays) == 1 else arrays


def explain(*arrays: Any, run: bool = False) -> Explanation:
    """``xp.explain(*arrays)``: how computing ``arrays`` together would run (a Plan works too);
    ``run=True`` runs the kernels too, each showing its result's actual stored entries next
    to the optimizer's estimate (the arrays themselves stay uncomputed)."""
    if len(arrays) == 1 and isinstance(arrays[0], Plan):
        return explain_plan(arrays[0], run=run)
    _check_arrays(arrays, "explain")
    if not arrays:
        raise TypeError("explain needs at least one array")
    return explain_arrays(arrays, run=run)
