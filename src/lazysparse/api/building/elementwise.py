"""Elementwise functions, generated from the operator registry.

Every Array API elementwise function is one ``ElementwiseFunction`` of
``logic.operators.ELEMENTWISE_FUNCTIONS``; this module turns each into a namespace function
(``xp.add``); ``LazyArray``'s dunders (``__add__``, ``__radd__``, ``__iadd__``) are defined
on its base ``api/array/array_operators.py``, from the same entries, and call
:func:`apply_operator`. Each call builds a broadcast ``MapJoin`` (see
``building.build_mapjoin``); nothing runs. Dtypes, accepted kinds and fill values come
from the registry: the result fill follows the fill rule (``operators.mapjoin_region``; a
dense operand's nominal fill decides nothing).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray, computed_scalar, operands_extent
from lazysparse.api.array.operands import as_array, as_operand, operand_names
from lazysparse.api.array.plan_nodes import broadcast_shapes, build_mapjoin
from lazysparse.formats import Tensor
from lazysparse.formats.dtypes import SUPPORTED_DTYPE_SET
from lazysparse.logic import dtypes as _dt
from lazysparse.logic.nodes import Immediate
from lazysparse.logic.operators import (
    ELEMENTWISE_FUNCTIONS,
    Operator,
    astype_op,
    get_operator,
    mapjoin_region,
)


def _same_device(arrays: list[LazyArray], fname: str) -> Any:
    dev = arrays[0]._device
    for a in arrays[1:]:
        if a._device is not dev and a._device != dev:
            raise ValueError(f"{fname}: arrays are on different devices ({dev} and {a.device})")
    return dev


def stored_scalar(a: LazyArray) -> Any:
    """The value of a computed 0-d host array (a NumPy scalar operand becomes one), else
    None. Broadcast against arrays it acts as a literal of its dtype, so the fill rule
    treats ``X > np.float64(t)`` as ``X > t``: ``X``'s pattern, not a dense result."""
    if a.ndim != 0 or a.result is None or not isinstance(a.result, Tensor):
        return None
    t = a.result
    if t.values.size == 1:  # a 0-d tensor that stores its value (every dense one)
        return a.dtype.type(t.values[0])
    return a.dtype.type(t.to_numpy()[()])


@dataclass(frozen=True)
class _Facts:
    """What an elementwise call of one operator on operands of one signature infers: the
    operand dtypes, result dtype, broadcast shape, each scalar operand as its operand
    dtype, and the result's fill and fullness (the fill rule) when every array has a fill."""

    shape: tuple[int, ...]
    dtype: np.dtype
    scalars: tuple[Any, ...]  # per operand: its stored literal (None for an array)
    fill: Any
    full: bool | None


# ``_Facts`` by (operator, operand signature): a repeated expression infers nothing again
# (issue 34). Bounded: cleared when full (distinct scalar values each make an entry).
# Threads share it: only ``get``/``[]=``/``clear``, each atomic.
_FACTS: dict[tuple[Any, ...], _Facts] = {}
_FACTS_CAPACITY = 4096


def value_key(x: Any) -> Any:
    """An exact hashable key of a scalar (its type, its value and the sign of a zero), or
    None when equality cannot stand for identity (NaN, complex, another kind)."""
    t = type(x)
    if t is bool or t is int or t is np.bool_ or isinstance(x, np.integer):
        return (t, x)
    if (t is float or isinstance(x, np.floating)) and x == x:
        return (t, x, math.copysign(1.0, x))
    return None


def _signature(op: Operator, operands: list[Any]) -> tuple[Any, ...] | None:
    """The key of ``_FACTS`` for ``op`` on ``operands`` (None: not cacheable)."""
    sig: list[Any] = [op.name, op.params]
    for a in operands:
        if isinstance(a, LazyArray):
            fill = a._fill_value  # current: the caller synced every array operand
            if type(fill) is np.float64 and fill == fill:  # value_key's common case
                fk: Any = (np.float64, fill, math.copysign(1.0, fill))
            else:
                fk = None if fill is None else value_key(fill)
                if fill is not None and fk is None:
                    return None
            sig.append((a._dtype, a._shape, fk, a.full))
        elif type(a) is float and a == a:  # value_key's, inlined
            sig.append((float, a, math.copysign(1.0, a)))
        else:
            vk = value_key(a)
            if vk is None:
                return None
            sig.append(vk)
    return tuple(sig)


def _infer(op: Operator, operands: list[Any], arrays: list[LazyArray],
           typed: list[Any] | None = None) -> _Facts:
    """``_Facts`` of ``op`` on ``operands`` (dtypes, shape, fill rule): TypeError for wrong
    dtype kinds, ValueError for shapes that do not broadcast. ``typed``: the operands whose
    dtypes decide promotion, when some of ``operands`` are the literals of stored 0-d
    arrays (their dtypes kept)."""
    meta = [a.dtype if isinstance(a, LazyArray) else a for a in typed or operands]
    op_dtypes = op.operand_dtypes(*meta)  # TypeError for wrong dtype kinds
    out_dtype = op.result_dtype(*meta)
    shape = broadcast_shapes(*(a.shape for a in arrays))
    scalars: list[Any] = []
    fills: list[Any] = []
    full: list[bool] = []
    for a, d in zip(operands, op_dtypes, strict=True):
        if isinstance(a, LazyArray):
            scalars.append(None)
            fills.append(a.fill_value if a.fill_value is not None else a.dtype.type(0))
            full.append(a.full)
        else:
            s = _dt.scalar_as(a, d)
            scalars.append(s)
            fills.append(s)
            full.append(False)
    fill, is_full = None, None
    if all(a.fill_value is not None for a in arrays):  # the fill rule (docs/api.md)
        fill, is_full = mapjoin_region(op, fills, full)
    return _Facts(shape, out_dtype, tuple(scalars), fill, is_full)


def _facts(op: Operator, operands: list[Any], arrays: list[LazyArray]) -> _Facts:
    """``_infer``'s answer, from ``_FACTS`` when this signature was seen."""
    key = _signature(op, operands)
    if key is None:
        return _infer(op, operands, arrays)
    facts = _FACTS.get(key)
    if facts is None:
        facts = _infer(op, operands, arrays)
        if len(_FACTS) >= _FACTS_CAPACITY:
            _FACTS.clear()
        _FACTS[key] = facts
    return facts


def scalar_now(op: Operator, operands: list[Any], facts: _Facts) -> LazyArray | None:
    """The result at once, as a computed 0-d array, where every operand is a computed 0-d
    host array or a scalar (``max(H)``, ``a < b`` of two elements, scalar bookkeeping in a
    loop): the NumPy evaluation a 0-d plan would run, without building or running one. None
    otherwise (the lazy path)."""
    if facts.shape:
        return None
    vals = []
    for a, lit in zip(operands, facts.scalars, strict=True):
        v = stored_scalar(a) if isinstance(a, LazyArray) else lit
        if v is None:
            return None
        vals.append(v)
    with np.errstate(all="ignore"):
        out = op.apply_quiet(op.operand_dtypes(*[v.dtype for v in vals]), facts.dtype, *vals)
    value = np.asarray(out, dtype=facts.dtype).reshape(1)
    if value.dtype not in SUPPORTED_DTYPE_SET:
        return None  # the lazy path raises its clear dtype error
    return computed_scalar(value, value.dtype.type(0))


def _stored_literals(operands: list[Any]) -> list[Any] | None:
    """``operands`` with each stored 0-d array replaced by its value, or None when none
    is stored (then nothing differs from an array operand: the facts cache applies)."""
    out: list[Any] = []
    found = False
    for a in operands:
        v = stored_scalar(a) if isinstance(a, LazyArray) and not a._shape else None
        found = found or v is not None
        out.append(a if v is None else v)
    return out if found else None


def apply_operator(op: Operator, *args: Any, fname: str | None = None,
                   names: tuple[str, ...] | None = None) -> LazyArray:
    """``op`` applied elementwise to broadcast ``args``: lazy arrays, Python scalars and
    foreign arrays (``operands.as_operand``; ``names`` are the arguments' names in errors).
    What it infers is cached per (operator, operand signature): ``_facts``."""
    name = fname or op.name
    names = names or operand_names(len(args))
    operands: list[Any] = []
    arrays: list[LazyArray] = []
    zero_d = n_d = False
    for a, n in zip(args, names, strict=True):  # a loop, not comprehensions: per op
        t = type(a)
        if t is not LazyArray and t is not float and t is not int and \
                not isinstance(a, LazyArray):
            a = as_operand(a, name, n)
        operands.append(a)
        if isinstance(a, LazyArray):
            if a._view is not None or a._update is not None:
                a._sync()  # a view's current value, queued writes merged: what the key reads
            arrays.append(a)
            if a._shape:
                n_d = True
            else:
                zero_d = True
    if not arrays:
        raise TypeError(f"{name}: at least one argument must be an array")
    literals = _stored_literals(operands) if zero_d and n_d else None
    if literals is not None:
        # a stored 0-d operand is a scalar (its dtype kept): its dtype decides promotion,
        # its value the fill (not cached: the value is the array's)
        facts = _infer(op, literals, arrays, operands)
        operands = literals
    else:  # an uncomputed 0-d operand (a solver's lazy step size) is an array like any
        facts = _facts(op, operands, arrays)
    if not facts.shape:  # computed 0-d operands fold at once
        now = scalar_now(op, operands, facts)
        if now is not None:
            return now
    parts: list[Any] = []
    for a, s in zip(operands, facts.scalars, strict=True):
        parts.append((a._expr, a._shape) if s is None else Immediate(s))
    expr, added = build_mapjoin(op, parts, facts.shape)
    device = arrays[0]._device  # ``_same_device``'s answer where every array is there
    if len(arrays) > 2 or len(arrays) == 2 and arrays[1]._device is not device:
        device = _same_device(arrays, name)
    return LazyArray(expr, facts.shape, facts.dtype, facts.fill, device,
                     full=facts.full, extent=operands_extent(arrays, added))


def astype(x: LazyArray, dtype: Any, /, *, copy: bool = True, device: Any = None) -> LazyArray:
    """``x`` converted to ``dtype`` (lazy: a MapJoin of the cast operator)."""
    x = as_array(x, "astype")
    d = _dt.as_dtype(dtype)
    if device is not None and device != x.device:
        raise ValueError(f"astype: unsupported device {device!r}")
    if d == x.dtype:
        return x.copy() if copy else x
    return apply_operator(astype_op(d), x, fname="astype")


def where(condition: Any, x1: Any, x2: Any, /) -> LazyArray:
    """Elements of ``x1`` where ``condition`` is True, else of ``x2``: one broadcast
    ``MapJoin(where, condition, x1, x2)``. Any position may be a NumPy or scipy.sparse
    array or a Python scalar (weakly promoted), as long as one is an array."""
    cond = as_operand(condition, "where", "condition")
    if isinstance(cond, LazyArray) and cond.dtype != _dt.BOOL or isinstance(
            cond, int | float | complex) and not isinstance(cond, bool):
        dt = cond.dtype if isinstance(cond, LazyArray) else type(cond).__name__
        raise TypeError(f"where: condition must have a boolean dtype, got {dt}")
    return apply_operator(get_operator("where"), cond, x1, x2, fname="where",
                          names=("condition", "x1", "x2"))


def clip(x: LazyArray, /, min: Any = None, max: Any = None) -> LazyArray:  # noqa: A002
    """``x`` limited to ``[min, max]`` (either bound optional); keeps ``x``'s dtype."""
    x = as_array(x, "clip", "x")
    if x.dtype.kind not in "biuf" or x.dtype == _dt.BOOL:
        raise TypeError(f"clip: x must have a real numeric dtype, got {x.dtype}")
    out = x
    for bound, name, arg in ((min, "maximum", "min"), (max, "minimum", "max")):
        if bound is None:
            continue
        b = as_operand(bound, "clip", arg)
        if isinstance(b, LazyArray):
            if b.dtype.kind not in "iuf" or b.dtype.kind != x.dtype.kind and not (
                    b.dtype.kind in "iu" and x.dtype.kind in "iu"):
                raise TypeError(f"clip: bound dtype {b.dtype} does not match x's {x.dtype}")
            b = astype(b, x.dtype, copy=False)
        elif x.dtype.kind in "iu":
            if isinstance(b, float | complex):
                raise TypeError(f"clip: bound {b!r} is not an integer for {x.dtype} input")
            info = np.iinfo(x.dtype)
            b = int(min_(max_(b, int(info.min)), int(info.max)))
        out = apply_operator(get_operator(name), out, b, fname="clip", names=("x", arg))
    if out.shape != x.shape:
        raise ValueError(f"clip: bounds of shape {out.shape} do not broadcast to x's "
                         f"{x.shape}")
    return out if out.dtype == x.dtype else astype(out, x.dtype, copy=False)


min_ = min
max_ = max


def _make_function(name: str, op: Operator, nargs: int) -> Callable[..., LazyArray]:
    """The namespace function for one registry entry, with the standard's signature."""
    if nargs == 1:
        def fn(x: Any, /) -> LazyArray:
            return apply_operator(op, x, fname=name)
    elif nargs == 2:
        def fn(x1: Any, x2: Any, /) -> LazyArray:  # type: ignore[misc]
            return apply_operator(op, x1, x2, fname=name)
    else:
        def fn(*args: Any) -> LazyArray:  # type: ignore[misc]
            return apply_operator(op, *args, fname=name)
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "lazysparse"
    fn.__doc__ = (f"Elementwise ``{name}`` (Array API). Lazy: builds a broadcast MapJoin of "
                  f"the registry operator ``{op.name}``.")
    return fn


FUNCTIONS: dict[str, Callable[..., LazyArray]] = {}
for _name, _ef in ELEMENTWISE_FUNCTIONS.items():
    if _name == "clip":
        continue
    FUNCTIONS[_name] = _make_function(_name, _ef.operator, _ef.nargs)
FUNCTIONS["clip"] = clip
FUNCTIONS["where"] = where
