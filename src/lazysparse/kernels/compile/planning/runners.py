"""Which runner may execute a query: the facts :func:`backends.execute.choose_runner` reads.

A compiled kernel runs every query; three cheaper runners take the queries they fit: NumPy
for small all-dense ones (:func:`numpy_eligible`), the formats stage for a query that only
lays one operand out again (:func:`is_relayout`), and run-length execution a run at a time
(:func:`run_length_eligible`). These are facts about the query and its data; which runner
is taken is decided once, in ``backends.execute.choose_runner``. Structured-operand
analysis (``compile.planning.structured_inputs``) asks them too: an operand a runner reads natively
is not converted.
"""

from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np

from lazysparse.formats.levels.base import Walk
from lazysparse.formats.levels.registry import all_located, walk_of_kind
from lazysparse.formats.specs import FormatSpec
from lazysparse.kernels.compile.planning.analysis import (
    DENSE_FILL,
    KernelInfo,
    PAccess,
    PApply,
    PField,
    PNode,
    QueryData,
)
from lazysparse.logic.operators import OPERATORS, Operator


class Runner(enum.Enum):
    """What executes one compute query."""

    NUMPY = "numpy"  # small all-dense kernels: NumPy ufuncs over broadcast arrays
    RUN_LENGTH = "run-length"  # run-length operands, a run at a time
    RELAYOUT = "relayout"  # one operand laid out again, by ``formats.convert``
    COMPILED = "compiled"  # the generated kernel of the device's backend


# the iteration count up to which an all-dense kernel runs on NumPy
NUMPY_MAX_ITERATIONS = 1 << 14

# Python's limit on statically nested blocks in one function (CPython's CO_MAXBLOCKS: each
# ``for``/``while`` is one, an ``if`` none)
MAX_NESTED_BLOCKS = 20

# the blocks a walk's driving loop nests beyond the loop's own, per operand level of that
# walk (``compile.lowering.level_walks``: a block row's dense inner loop, a run's
# coordinates; the storage-major nests of ``band_major``/``block_major`` over two loops)
_WALK_BLOCKS = {Walk.BLOCKS: 2, Walk.RUNS: 1, Walk.BAND: 1}

# the most blocks the lowering nests inside the innermost loop's body (a follower's seek, a
# non-unique level's run end, a probe, an output's insert or drain: measured at most 2)
INNER_BLOCKS = 3


class Nesting(enum.Enum):
    """Whether Python compiles a query's kernel, known from its analysis alone."""

    FITS = "fits"  # at most MAX_NESTED_BLOCKS nested blocks in every function
    TOO_DEEP = "too deep"  # more: one loop per loop field already passes the limit
    LOWER = "lower"  # between the bounds: only the lowered kernel tells


def nesting_bounds(info: KernelInfo) -> tuple[int, int]:
    """The fewest and the most nested ``for``/``while`` blocks a function of the kernel of
    ``info`` has: one loop per loop field at least (every ``LoopKind`` and storage-major
    nest opens one per field), plus at most the walks' extra loops and the innermost
    body's (:data:`INNER_BLOCKS`)."""
    extra = 0
    for op in info.operands:
        for lv in op.levels:
            extra += _WALK_BLOCKS.get(walk_of_kind(lv.kind), 0)
    k = len(info.loop_order)
    return k, k + extra + INNER_BLOCKS


def nesting(info: KernelInfo) -> Nesting:
    """Whether the kernel of ``info`` fits Python's block limit (see :func:`nesting_bounds`),
    decided before anything is lowered."""
    least, most = nesting_bounds(info)
    if most <= MAX_NESTED_BLOCKS:
        return Nesting.FITS
    return Nesting.TOO_DEEP if least > MAX_NESTED_BLOCKS else Nesting.LOWER

# reductions NumPy folds by keeping a value, not with a ufunc: ``overwrite`` keeps the last
# value (True), ``first`` the accumulator (False)
KEEPS_LAST = {OPERATORS["overwrite"]: True, OPERATORS["first"]: False}


def numpy_folds(op: Operator, acc_dtype: np.dtype, arg_dtype: np.dtype) -> bool:
    """Whether NumPy folds ``op`` over a whole axis in one call (the NumPy runner's
    ``numpy_reducers.reducer_for``): a kept value, or a binary ufunc whose operand and result
    dtypes are the accumulator's (else each step would cast)."""
    if op in KEEPS_LAST:
        return True
    fn = op.numpy
    if not (isinstance(fn, np.ufunc) and fn.nin == 2 and fn.nout == 1):
        return False
    ods = op.operand_dtypes(acc_dtype, arg_dtype)
    return ods[0] == acc_dtype and ods[1] == acc_dtype and op.result_dtype(*ods) == acc_dtype


def is_relayout(info: KernelInfo) -> bool:
    """Whether the query copies its one operand, unchanged, from a sparse layout into
    another sparse layout: no reduction, no epilogue, no cast, the result axes a
    permutation of the operand's."""
    if info.reduce_op is not None or info.epilogue is not None or len(info.operands) != 1:
        return False
    op = info.operands[0]
    if not isinstance(info.expr, PAccess) or info.expr.dtype != info.out_dtype:
        return False
    if op.fill_key == DENSE_FILL or all(p.full for p in info.out_spec.level_properties()):
        return False
    return sorted(op.axis_fields) == sorted(info.out_fields)


def numpy_eligible(info: KernelInfo, data: QueryData, *, any_size: bool = False) -> bool:
    """Whether a kernel is small and all-dense enough to run on NumPy, with a reduction
    (if any) NumPy folds in one call (``any_size``: whatever its iteration count, for a
    kernel the compiled backend cannot build)."""
    if not all(lv.located for op in info.operands for lv in op.levels):
        return False
    if not all(p.full for p in info.out_spec.level_properties()):
        return False
    if not any_size and math.prod(data.extents[f] for f in info.loop_order) > \
            NUMPY_MAX_ITERATIONS:
        return False
    return info.reduce_op is None or numpy_folds(
        info.reduce_op, info.acc_dtype, info.expr.dtype)  # type: ignore[attr-defined]


def rle_slots(info: KernelInfo, data: QueryData) -> list[int]:
    """The run-length operands of the tree (the others are dense, constant along runs)."""
    return sorted(s for s in body_slots(info.expr)
                  if info.operands[s].levels and not info.operands[s].levels[-1].located
                  and _is_rle(data.tensors[s]))


def body_slots(node: PNode) -> set[int]:
    """Operand slots the pointwise tree reads."""
    if isinstance(node, PAccess):
        return {node.slot}
    if isinstance(node, PApply):
        return set().union(*(body_slots(a) for a in node.args))
    return set()


def _fields_as_values(node: PNode) -> set[str]:
    """Loop fields the tree uses as values (``PField``)."""
    if isinstance(node, PField):
        return {node.name}
    if isinstance(node, PApply):
        return set().union(*(_fields_as_values(a) for a in node.args))
    return set()


def _is_rle(t: Any) -> bool:
    lv = getattr(t, "levels", None)
    return (bool(lv) and lv[-1].run_valued
            and all_located(tuple(x.kind for x in lv[:-1])))


def _reduction_ok(info: KernelInfo) -> bool:
    """A commutative, associative binary reduction over the run axis (and any leading
    axes) whose repeated fold NumPy has (``fold_repeat``) and whose fold is one ufunc."""
    rop = info.reduce_op
    if rop is None:
        return True
    runs_field = info.loop_order[-1]
    if runs_field not in info.reduced:
        return False
    if not (rop.nargs == 2 and rop.commutative and rop.associative):
        return False
    if not (rop.idempotent or rop.repeat is not None):
        return False
    acc = np.dtype(info.acc_dtype)
    if acc.kind == "b" and not rop.idempotent:
        return False
    return rop not in KEEPS_LAST and numpy_folds(
        rop, acc, info.expr.dtype)  # type: ignore[attr-defined]


def run_length_eligible(info: KernelInfo, data: QueryData) -> bool:
    """Whether the query reads only run-length operands, each in the loop's own order with
    the run axis last, with no reduction or one this module folds a run at a time."""
    if not info.loop_order or is_relayout(info):
        return False  # a relayout converts in the formats stage
    slots = body_slots(info.expr)
    if not slots:
        return False
    order = info.loop_order
    runs = 0
    for s in slots:
        op = info.operands[s]
        fields = tuple(lv.field for lv in op.levels)
        if fields == order and _is_rle(data.tensors[s]):
            runs += 1
        elif not (all(lv.located for lv in op.levels) and order[-1] not in fields):
            return False  # only dense operands constant along the run axis may join
    if not runs:
        return False
    # epilogue operands (dense, by result fields) are read by the NumPy epilogue
    if any(s not in slots for s in range(len(info.operands))) and info.epilogue is None:
        return False
    if order[-1] in _fields_as_values(info.expr):
        return False
    if info.epilogue is not None and info.reduce_op is None:
        return False
    if not _reduction_ok(info):
        return False
    # any other ordered result layout is converted to from the run-length one
    return result_spec(info).ordered


def result_spec(info: KernelInfo) -> FormatSpec:
    """The layout to return: the requested one (``stored_spec``, where analysis asked a
    kernel to write another) or the kernel's output layout."""
    return info.stored_spec if info.stored_spec is not None else info.out_spec


__all__ = ["INNER_BLOCKS", "MAX_NESTED_BLOCKS", "NUMPY_MAX_ITERATIONS", "Nesting", "Runner",
           "body_slots", "is_relayout", "nesting", "nesting_bounds", "numpy_eligible",
           "result_spec", "rle_slots", "run_length_eligible"]
