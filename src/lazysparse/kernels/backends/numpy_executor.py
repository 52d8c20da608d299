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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.formats.dtypes import SUPPORTED_DTYPE_SET
from lazysparse.formats.levels import Dense
from lazysparse.formats.tensor import Tensor
from lazysparse.kernels.backends.numpy_reducers import Reducer, reducer_for
from lazysparse.kernels.compile.planning.analysis import (
    KernelInfo,
    PAccess,
    PApply,
    PConst,
    PField,
    PNode,
    PResult,
    QueryData,
)
from lazysparse.logic.operator_registry import cast_to
from lazysparse.logic.operators import astype_op

Evaluator = Callable[[QueryData], Any]

@dataclass(frozen=True)
class _Decoded:
    """What a kernel's NumPy run reads of its ``KernelInfo``, decoded once: the pointwise
    tree as nested closures, the loop-to-result axis permutation and the result's storage
    permutation (None: the identity), and whether the result is all dense."""

    evaluate: Evaluator
    perm: tuple[int, ...] | None
    mode_perm: tuple[int, ...] | None
    dense: bool
    # a reduction's fold: the reducer (None: NumPy has none), the loop axes moved to
    # (result axes, reduced axes) (None: already so), the accumulator dtype
    reducer: Reducer | None = None
    red_perm: tuple[int, ...] | None = None
    acc: np.dtype | None = None


# ``_Decoded`` of each kernel by identity of its info (the entry keeps its info, so an id
# is never reused while it is here): a repeated query pays no pattern match per node per
# call. Bounded like a cache: cleared when full. Threads share it through single
# ``get``/``[]=``/``clear`` calls.
_DECODED: dict[int, tuple[KernelInfo, _Decoded]] = {}
_DECODED_CAPACITY = 1024


def _decoded(info: KernelInfo) -> _Decoded:
    """``info`` decoded for the NumPy run (from ``_DECODED`` after the first)."""
    entry = _DECODED.get(id(info))
    if entry is None or entry[0] is not info:
        perm = tuple(info.loop_order.index(f) for f in info.out_fields)
        mode = tuple(info.out_spec.mode_order)
        reducer, red_perm, acc = None, None, None
        if info.reduce_op is not None:
            acc = np.dtype(info.acc_dtype)
            reducer = reducer_for(info.reduce_op, acc, info.expr.dtype)  # type: ignore[attr-defined]
            order = info.loop_order
            moved = tuple([order.index(f) for f in (*info.out_fields, *info.reduced)])
            red_perm = None if _identity(moved) else moved
        dec = _Decoded(_evaluator(info, info.expr), None if _identity(perm) else perm,
                       None if _identity(mode) else mode,
                       all(k == Dense.kind for k in info.out_spec.level_kinds),
                       reducer, red_perm, acc)
        if len(_DECODED) >= _DECODED_CAPACITY:
            _DECODED.clear()
        entry = _DECODED[id(info)] = (info, dec)
    return entry[1]


def _broadcast(info: KernelInfo, data: QueryData, node: PNode) -> Any:
    """The pointwise tree's value, shaped over the loop order (size-1 axes broadcast)."""
    if node is info.expr:
        return _decoded(info).evaluate(data)
    return _evaluator(info, node)(data)


def _evaluator(info: KernelInfo, node: PNode) -> Evaluator:
    """``node``'s value as a function of the query data, over the loop order."""
    order = tuple(info.loop_order)
    match node:
        case PAccess(slot=s):
            return _access(tuple(lv.field for lv in info.operands[s].levels), order, s)
        case PConst(slot=k):
            return lambda data: data.consts[k]
        case PField(name=name):
            def index(data: QueryData) -> Any:
                shape = [data.extents[f] if f == name else 1 for f in order]
                return np.arange(data.extents[name], dtype=np.int64).reshape(shape)
            return index
        case PApply(op=op, args=args, operand_dtypes=ods, dtype=dt):
            parts = [_evaluator(info, a) for a in args]
            if len(parts) == 2 and _typed(args[0], ods[0]) and _typed(args[1], ods[1]):
                # both operands arrive at their operand dtypes: only the result is cast
                fn, (first, second) = op.numpy, parts
                return lambda data: cast_to(fn(first(data), second(data)), dt)
            if len(parts) == 2 and _typed(args[0], ods[0]) and isinstance(args[1], PConst):
                # an array and a constant (``0.5 * p`` with p first): the constant is cast
                fn, (first, second), d1 = op.numpy, parts, ods[1]
                return lambda data: cast_to(fn(first(data), cast_to(second(data), d1)), dt)
            if len(parts) == 2 and isinstance(args[0], PConst) and _typed(args[1], ods[1]):
                fn, (first, second), d0 = op.numpy, parts, ods[0]
                return lambda data: cast_to(fn(cast_to(first(data), d0), second(data)), dt)
            apply = op.apply_quiet
            if len(parts) == 2:
                first, second = parts
                return lambda data: apply(ods, dt, first(data), second(data))
            return lambda data: apply(ods, dt, *[f(data) for f in parts])
    raise TypeError(f"unknown pointwise node {node!r}")


def _typed(node: PNode, dtype: np.dtype) -> bool:
    """Whether ``node``'s value arrives at ``dtype`` already (a stored operand's values, or
    an operation's result, both of their declared dtype): no cast before using it."""
    return isinstance(node, PAccess | PApply) and node.dtype == dtype


def _access(fields: tuple[str, ...], order: tuple[str, ...], slot: int) -> Evaluator:
    """Operand ``slot`` (its axes ``fields``) as an array over the loop order."""
    if fields == order and len(fields) == 1:
        return lambda data: np.asarray(data.tensors[slot].values)  # stored values: 1-d

    def access(data: QueryData) -> Any:
        ext = data.extents
        arr = np.asarray(data.tensors[slot].values).reshape([ext[f] for f in fields])
        if fields == order:
            return arr
        return arr.reshape([ext[f] if f in fields else 1 for f in order])
    return access


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
            return op.apply_quiet(ods, dt, *[_epilogue(info, data, a, res) for a in args])
    return _broadcast(info, data, node)  # a constant


def _reduce(info: KernelInfo, data: QueryData, full: np.ndarray) -> np.ndarray:
    """Fold the reduced fields (flattened in loop order, so a non-commutative operator sees
    the kernels' visiting order) into an array over ``info.out_fields``."""
    dec = _decoded(info)
    reducer, acc = dec.reducer, dec.acc
    if reducer is None or acc is None:
        raise ValueError(f"internal: reduction {info.reduce_op} at {info.acc_dtype} has no "
                         "NumPy form; numpy_eligible should have sent it to the compiled "
                         "kernels")
    ext = data.extents
    if dec.red_perm is not None:
        full = np.transpose(full, dec.red_perm)
    shape = [ext[f] for f in info.out_fields]
    shape.append(math.prod([ext[f] for f in info.reduced]))
    moved = full.reshape(shape)
    if moved.dtype != acc:
        moved = np.asarray(astype_op(acc).apply(moved))
    init = data.init
    if type(init) is not acc.type:
        init = np.asarray(init).astype(acc)[()]
    return np.asarray(reducer.reduce_quiet(moved, init, acc))


def run_numpy(info: KernelInfo, data: QueryData) -> Tensor:
    """Evaluate a dense kernel with NumPy and return the dense result tensor (one
    floating-point warning context for the whole tree: the kernels raise none either)."""
    with np.errstate(all="ignore"):
        return _run_numpy(info, data)


def _owned(res: np.ndarray, data: QueryData) -> bool:
    """Whether ``res`` owns its memory and is no operand's values array: an array a NumPy
    call just made, which the result may keep without a copy (one pass less)."""
    if res.base is not None:
        return False
    for t in data.tensors:
        if res is t.values:
            return False
    return True


def _identity(perm: tuple[int, ...]) -> bool:
    return all(k == m for k, m in enumerate(perm))


def _run_numpy(info: KernelInfo, data: QueryData) -> Tensor:
    dec = _decoded(info)
    full = np.asarray(dec.evaluate(data))
    loop_shape = tuple([data.extents[f] for f in info.loop_order])
    if full.shape != loop_shape:
        full = np.broadcast_to(full, loop_shape)
    if info.reduce_op is not None:
        res = _reduce(info, data, full)
    else:  # the result's axes (a RESULT reorder may permute the loop's)
        res = full if dec.perm is None else np.transpose(full, dec.perm)
    if info.epilogue is not None:
        res = _epilogue(info, data, info.epilogue, np.asarray(res))
    res = np.asarray(res)
    if not (res.dtype == info.out_dtype and _owned(res, data)):
        res = res.astype(info.out_dtype)  # a copy: never alias an input's values
    if dec.mode_perm is not None:
        res = np.transpose(res, dec.mode_perm)
    stored = np.ascontiguousarray(res).reshape(-1)
    shape = data.out_shape
    spec = info.out_spec
    fill = data.out_fill
    if type(fill) is not stored.dtype.type:
        fill = np.asarray(fill).astype(info.out_dtype)[()]
    if dec.dense and type(shape) is tuple and stored.dtype in SUPPORTED_DTYPE_SET:
        return Tensor.dense_result(shape, spec, stored, fill)  # what the checks would make
    levels = [Dense(shape[m]) for m in spec.mode_order]
    return Tensor(shape, levels, spec.mode_order, stored, fill, format=spec, check=False)
