"""NumPy execution of small all-dense kernels, where compiling would cost more than it saves.

The pointwise tree is evaluated on arrays broadcast over the loop order, then reduced with
the registry operator's NumPy form. Only dense inputs and dense outputs qualify, with an
iteration space of at most :data:`NUMPY_MAX_ITERATIONS` points.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lazysparse.formats.levels import Dense
from lazysparse.formats.tensor import Tensor
from lazysparse.kernels.analysis import (
    KernelInfo,
    PAccess,
    PApply,
    PConst,
    PField,
    PNode,
    QueryData,
)

NUMPY_MAX_ITERATIONS = 1 << 14


def numpy_eligible(info: KernelInfo, data: QueryData) -> bool:
    """Whether a kernel is small and all-dense enough to run on NumPy."""
    if not all(lv.located for op in info.operands for lv in op.levels):
        return False
    if not all(p.full for p in info.out_spec.level_properties()):
        return False
    return math.prod(data.extents[f] for f in info.loop_order) <= NUMPY_MAX_ITERATIONS


def _broadcast(info: KernelInfo, data: QueryData, node: PNode) -> Any:
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
        case PApply(op=op, args=args):
            return op.apply(*(_broadcast(info, data, a) for a in args))
    raise TypeError(f"unknown pointwise node {node!r}")


def run_numpy(info: KernelInfo, data: QueryData) -> Tensor:
    """Evaluate a dense kernel with NumPy and return the dense result tensor."""
    order = info.loop_order
    full = np.broadcast_to(_broadcast(info, data, info.expr),
                           [data.extents[f] for f in order])
    if info.reduce_op is not None:
        op = info.reduce_op
        axes = tuple(order.index(f) for f in info.reduced)
        acc = np.full([data.extents[f] for f in info.out_fields], data.init,
                      dtype=info.acc_dtype)
        red = full
        for ax in sorted(axes, reverse=True):
            red = _reduce_axis(op, red, ax, info.acc_dtype)
        if red is not None:
            acc = np.asarray(op.apply(acc, red)).astype(info.acc_dtype)
        res = acc
    else:
        res = np.asarray(full).astype(info.out_dtype)
    res = np.asarray(res, dtype=info.out_dtype)
    spec = info.out_spec
    stored = np.ascontiguousarray(np.transpose(res, spec.mode_order)).reshape(-1)
    shape = data.out_shape
    levels = [Dense(shape[m]) for m in spec.mode_order]
    fill = np.asarray(data.out_fill).astype(info.out_dtype)[()]
    return Tensor(shape, levels, spec.mode_order, stored, fill, format=spec, check=False)


def _reduce_axis(op: Any, arr: Any, ax: int, dtype: np.dtype) -> Any:
    """Reduce one axis with the operator (``None`` if the axis is empty)."""
    if arr is None or arr.shape[ax] == 0:
        return None
    moved = np.moveaxis(np.asarray(arr), ax, 0)
    acc = moved[0]
    for k in range(1, moved.shape[0]):
        acc = op.apply(acc, moved[k])
    return np.asarray(acc).astype(dtype)
