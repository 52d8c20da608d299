"""NumPy execution of small all-dense kernels, where compiling would cost more than it saves.

The pointwise tree is evaluated on arrays broadcast over the loop order (one NumPy call per
tree node), then the reduced fields are folded in one vectorized call: the reduction
operator's ufunc ``.reduce`` with ``initial=init``, or a slice for the keep-one operators
(``first``/``overwrite``). Only dense inputs and dense outputs qualify, with an iteration
space of at most :data:`NUMPY_MAX_ITERATIONS` points and a reduction NumPy can vectorize;
everything else goes to the compiled kernels. No path loops in Python per element.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lazysparse.compile.analysis import (
    KernelInfo,
    PAccess,
    PApply,
    PConst,
    PField,
    PNode,
    PResult,
    QueryData,
)
from lazysparse.compile.reducers import reducer_for
from lazysparse.formats.levels import Dense
from lazysparse.formats.tensor import Tensor
from lazysparse.logic.operators import astype_op


def _broadcast(info: KernelInfo, data: QueryData, node: PNode) -> Any:
    """The pointwise tree's value, shaped over the loop order (size-1 axes broadcast)."""
    order = info.loop_order
    match node:
        case PAccess(slot=s):
            op, t = info.operands[s], data.tensors[s]
            fields = [lv.field for lv in op.levels]
            arr = np.asarray(t.values).reshape([data.extents[f] for f in fields])
            shape = [data.extents[f] if f in fields else 1 for f in order]
            return arr.reshape(shape)
        case PConst(slot=k):
            return data.consts[k]
        case PField(name=name):
            shape = [data.extents[f] if f == name else 1 for f in order]
            return np.arange(data.extents[name], dtype=np.int64).reshape(shape)
        case PApply(op=op, args=args, operand_dtypes=ods, dtype=dt):
            return op.apply_as(ods, dt, *(_broadcast(info, data, a) for a in args))
    raise TypeError(f"unknown pointwise node {node!r}")


def _epilogue(info: KernelInfo, data: QueryData, node: PNode, res: np.ndarray) -> Any:
    """The epilogue's value over the result axes (``res``: the reduced values there)."""
    match node:
        case PResult():
            return res
        case PAccess(slot=s):
            fields = [lv.field for lv in info.operands[s].levels]
            arr = np.asarray(data.tensors[s].values).reshape([data.extents[f] for f in fields])
            arr = np.transpose(arr, [fields.index(f) for f in info.out_fields if f in fields])
            return arr.reshape([data.extents[f] if f in fields else 1 for f in info.out_fields])
        case PField(name=name):
            shape = [data.extents[f] if f == name else 1 for f in info.out_fields]
            return np.arange(data.extents[name], dtype=np.int64).reshape(shape)
        case PApply(op=op, args=args, operand_dtypes=ods, dtype=dt):
            return op.apply_as(ods, dt, *(_epilogue(info, data, a, res) for a in args))
    return _broadcast(info, data, node)  # a constant


def _reduce(info: KernelInfo, data: QueryData, full: np.ndarray) -> np.ndarray:
    """Fold the reduced fields (flattened in loop order, so a non-commutative operator sees
    the kernels' visiting order) into an array over ``info.out_fields``."""
    op = info.reduce_op
    assert op is not None
    acc = np.dtype(info.acc_dtype)
    reducer = reducer_for(op, acc, info.expr.dtype)  # type: ignore[attr-defined]
    if reducer is None:
        raise ValueError(f"internal: reduction {op.name} at {acc} has no NumPy form; "
                         "numpy_eligible should have sent it to the compiled kernels")
    order = info.loop_order
    perm = [order.index(f) for f in info.out_fields] + [order.index(f) for f in info.reduced]
    moved = np.transpose(full, perm).reshape(
        [data.extents[f] for f in info.out_fields]
        + [math.prod(data.extents[f] for f in info.reduced)])
    if moved.dtype != acc:
        moved = np.asarray(astype_op(acc).apply(moved))
    init = np.asarray(data.init).astype(acc)[()]
    return np.asarray(reducer.reduce(moved, init, acc))


def run_numpy(info: KernelInfo, data: QueryData) -> Tensor:
    """Evaluate a dense kernel with NumPy and return the dense result tensor."""
    full = np.asarray(_broadcast(info, data, info.expr))
    loop_shape = tuple(data.extents[f] for f in info.loop_order)
    if full.shape != loop_shape:
        full = np.broadcast_to(full, loop_shape)
    if info.reduce_op is not None:
        res = _reduce(info, data, full)
    else:  # the result's axes (a RESULT reorder may permute the loop's)
        res = np.transpose(full, [info.loop_order.index(f) for f in info.out_fields])
    if info.epilogue is not None:
        res = _epilogue(info, data, info.epilogue, np.asarray(res))
    res = np.asarray(res).astype(info.out_dtype)  # a copy: never alias an input's values
    spec = info.out_spec
    stored = np.ascontiguousarray(np.transpose(res, spec.mode_order)).reshape(-1)
    shape = data.out_shape
    levels = [Dense(shape[m]) for m in spec.mode_order]
    fill = np.asarray(data.out_fill).astype(info.out_dtype)[()]
    return Tensor(shape, levels, spec.mode_order, stored, fill, format=spec, check=False)
