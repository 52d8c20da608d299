"""NumPy's dispatch protocols for lazysparse arrays: ``np.exp(x)``, ``np.sum(x, axis=0)``,
``np.concatenate([x, y])`` build the same lazy plans as the namespace.

- ``__array_ufunc__``: a ufunc maps to the namespace function of the operator registry entry
  whose NumPy form it is (``np.add`` → ``add``, ``np.arctan2`` → ``atan2``), plus ``matmul``
  and ``vecdot``; ``ufunc.reduce`` of ``add``/``multiply``/``maximum``/``minimum``/
  ``logical_and``/``logical_or`` is ``sum``/``prod``/``max``/``min``/``all``/``any`` and
  ``accumulate`` of ``add``/``multiply`` is ``cumulative_sum``/``cumulative_prod``.
  ``ufunc.outer`` is a broadcast of the call; ``ufunc.at`` (in place) and ``reduceat`` raise
  a TypeError naming them. A ufunc with no lazysparse equivalent (``np.spacing``,
  scipy.special's) runs in NumPy on the dense values, within the densify limit, and its
  outputs come back as lazysparse arrays.
- ``out=``: NumPy arrays (``ndarray -= x`` calls ``np.subtract(nd, x, out=(nd,))``) are
  written by NumPy itself from the computed lazy operands (its casting rules and errors);
  lazysparse targets of a call have their value replaced, as ``x += y`` does.
- ``__array_function__``: the NumPy functions of :data:`FUNCTIONS` (argument names
  translated); any other runs in NumPy on dense copies within the densify limit.

Nothing densifies here: what the namespace keeps sparse stays sparse, and what it computes
densely obeys the densify limit (``DensifyError``) as everywhere. Other ``out=`` uses and a
``where=`` without ``out=`` raise TypeError. The tables are filled by
``api/namespace.py`` (:func:`install`), so this module imports nothing above it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lazysparse.formats.config import DensifyError
from lazysparse.logic.dtypes import is_python_scalar

Namespace = dict[str, Any]

_NS: Namespace = {}
_UFUNCS: dict[np.ufunc, str] = {}
_IS_OPERAND: list[Callable[[Any], bool]] = []

REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
          "logical_and": "all", "logical_or": "any"}
ACCUMULATE = {"add": "cumulative_sum", "multiply": "cumulative_prod"}
# ufuncs that are no registry operator but have a namespace function
EXTRA_UFUNCS = {"matmul": "matmul", "vecdot": "vecdot"}
# ufunc methods that write into their first argument: no meaning for values
IN_PLACE_METHODS = ("at",)


def install(namespace: Namespace, operators: dict[str, Any],
            is_operand: Callable[[Any], bool]) -> None:
    """Fill the dispatch tables from the namespace and the operator registry (called once,
    when the namespace is built)."""
    _NS.clear()
    _NS.update(namespace)
    _UFUNCS.clear()
    for name, op in operators.items():
        if isinstance(op.numpy, np.ufunc) and name in namespace:
            _UFUNCS.setdefault(op.numpy, name)
    for ufunc_name, name in EXTRA_UFUNCS.items():
        uf = getattr(np, ufunc_name, None)
        if isinstance(uf, np.ufunc) and name in namespace:
            _UFUNCS.setdefault(uf, name)
    _IS_OPERAND[:] = [is_operand]


def _no_out(where: str, kwargs: dict[str, Any]) -> None:
    """TypeError for ``out=`` / ``where=`` (lazysparse arrays are values, never written)."""
    out = kwargs.pop("out", None)
    if not (out is None or isinstance(out, tuple) and all(o is None for o in out)):
        raise TypeError(f"{where}: out= is not supported for lazysparse arrays (they are "
                        "values: use the returned array)")
    w = kwargs.pop("where", True)
    if w is not True and w is not np._NoValue:  # noqa: SLF001 - NumPy's "not given"
        raise TypeError(f"{where}: where= is not supported for lazysparse arrays; use "
                        "xp.where(mask, f(x), fill)")


def _outs(kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``out=`` removed from ``kwargs`` as a tuple (one slot per output), or ``()`` when
    not given (or all None)."""
    out = kwargs.pop("out", None)
    outs = out if isinstance(out, tuple) else (out,)
    return outs if any(o is not None for o in outs) else ()


def _drop_defaults(where: str, kwargs: dict[str, Any], **defaults: Any) -> None:
    """Remove NumPy-only keywords left at their defaults; TypeError for any other value."""
    for k, d in defaults.items():
        if k in kwargs:
            v = kwargs.pop(k)
            if v is not d and v != d and v is not np._NoValue:  # noqa: SLF001
                raise TypeError(f"{where}: {k}={v!r} is not supported for lazysparse arrays")


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    """``LazyArray.__array_ufunc__``: the namespace function of ``ufunc`` (see module doc),
    or NotImplemented when an input is of a type lazysparse does not accept."""
    where = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    if method in IN_PLACE_METHODS and isinstance(inputs[0], np.ndarray):
        return _numpy_method(ufunc, method, where, inputs, kwargs)  # a NumPy target
    if method in IN_PLACE_METHODS:
        raise TypeError(f"{where} writes into its first argument in place; lazysparse arrays "
                        "are values, never written in place: use x[idx] = ... (or "
                        "xp.to_numpy(x) for a dense NumPy copy)")
    inputs = tuple(np.asarray(x) if isinstance(x, list | tuple) else x for x in inputs)
    if not all(_IS_OPERAND[0](x) or isinstance(x, np.generic | np.ndarray) for x in inputs):
        return NotImplemented
    kwargs = dict(kwargs)
    outs = _outs(kwargs)
    if outs and all(o is None or isinstance(o, np.ndarray) for o in outs):
        kwargs["out"] = outs  # NumPy targets: NumPy computes, casts and writes
        return _numpy_method(ufunc, method, where, inputs, kwargs)
    if outs and method == "__call__":
        return _call_into(ufunc, where, inputs, kwargs, outs)
    if outs:
        raise TypeError(f"{where}: out= a lazysparse array is supported for ufunc calls "
                        "only (lazysparse arrays are values: use the returned array)")
    _no_out(where, kwargs)
    if method == "__call__":
        return _call(ufunc, where, inputs, kwargs)
    if method == "outer":
        return _outer(ufunc, where, inputs, kwargs)
    if method in ("reduce", "accumulate"):
        return _reduce(ufunc, method, where, inputs, kwargs)
    raise TypeError(f"{where} has no lazysparse equivalent (supported: calls, outer, and "
                    "reduce/accumulate of add, multiply and reduce of maximum, minimum, "
                    "logical_and, logical_or)")


def _call(ufunc: np.ufunc, where: str, inputs: tuple[Any, ...],
          kwargs: dict[str, Any]) -> Any:
    name = _UFUNCS.get(ufunc)
    if name is None:
        return _numpy_call(ufunc, where, inputs, kwargs)
    dtype = kwargs.pop("dtype", None)
    _drop_defaults(where, kwargs, casting="same_kind", order="K", subok=True, signature=None)
    if kwargs:
        raise TypeError(f"{where}: unsupported keyword(s) {sorted(kwargs)} for lazysparse "
                        "arrays")
    args = [_NS["asarray"](x) if isinstance(x, np.generic) else x for x in inputs]
    if dtype is not None:
        args = [_NS["astype"](_NS["asarray"](x), np.dtype(dtype)) for x in args]
    return _NS[name](*args)


def _numpy_call(ufunc: np.ufunc, where: str, inputs: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    """A ufunc that is no registry operator (``np.spacing``, scipy.special's ufuncs): NumPy
    runs it on the dense values of the inputs (``DensifyError`` past the densify limit),
    and its outputs (a tuple for ``np.frexp``) come back as lazysparse arrays on the
    inputs' device, as Dask and pydata/sparse return their own type."""
    res = _numpy_method(ufunc, "__call__", where, inputs, kwargs)
    device = next((x.device for x in inputs if isinstance(x, _NS["LazyArray"])), None)
    if isinstance(res, tuple):
        return tuple(_NS["asarray"](r, device=device) for r in res)
    return _NS["asarray"](res, device=device)


def _call_into(ufunc: np.ufunc, where: str, inputs: tuple[Any, ...], kwargs: dict[str, Any],
               outs: tuple[Any, ...]) -> Any:
    """``ufunc(*inputs, out=outs)`` with lazysparse targets: each target's value is replaced
    by its result (as ``x += y`` does), cast by NumPy's ``casting`` rule (``same_kind``
    unless given: NumPy's own error for a cast it refuses), under ``where=``'s mask."""
    lazy = _NS["LazyArray"]
    if len(outs) != ufunc.nout or not all(o is None or isinstance(o, lazy) for o in outs):
        raise TypeError(f"{where}: out= must hold {ufunc.nout} array(s), all NumPy arrays "
                        f"or all lazysparse arrays, got {tuple(type(o).__name__ for o in outs)}")
    casting = kwargs.pop("casting", "same_kind")
    mask = kwargs.pop("where", True)
    _check_casting(ufunc, inputs, outs, casting, kwargs.get("dtype"))
    shape = np.broadcast_shapes(*(np.shape(x) for x in inputs))
    res = _call(ufunc, where, inputs, kwargs)
    for o, r in zip(outs, res if isinstance(res, tuple) else (res,), strict=True):
        if o is not None:
            _write_into(o, r, shape, mask)
    return outs[0] if ufunc.nout == 1 else outs


def _check_casting(ufunc: np.ufunc, inputs: tuple[Any, ...], outs: tuple[Any, ...],
                   casting: str, dtype: Any) -> None:
    """NumPy's own casting check of ``ufunc`` from the inputs' dtypes to the targets':
    the ufunc run on empty arrays of those dtypes (no values computed), so the loop NumPy
    picks and the error it raises are exactly NumPy's."""
    probe = [x if is_python_scalar(x) else np.empty(0, x.dtype) for x in inputs]
    targets = tuple(None if o is None else np.empty(0, o.dtype) for o in outs)
    opts: dict[str, Any] = {} if dtype is None else {"dtype": dtype}
    with np.errstate(all="ignore"):
        ufunc(*probe, out=targets, casting=casting, **opts)


def _write_into(out: Any, res: Any, shape: tuple[int, ...], mask: Any) -> None:
    """Replace ``out``'s value by ``res`` broadcast to its shape (NumPy's ValueError when
    the inputs' broadcast ``shape`` does not fit it), ``out`` kept where ``mask`` is False,
    at ``out``'s dtype; a view's write reaches its array."""
    try:
        fits = np.broadcast_shapes(shape, out.shape) == out.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"non-broadcastable output operand with shape {out.shape} doesn't "
                         f"match the broadcast shape {shape}")
    res = _NS["broadcast_to"](_NS["asarray"](res), out.shape)
    if mask is not True:
        res = _NS["where"](_NS["asarray"](mask), res, out)
    if res.dtype != out.dtype:
        res = _NS["astype"](res, out.dtype)
    out.replace_with(res)
    out.write_through()


def _numpy_method(ufunc: np.ufunc, method: str, where: str, inputs: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Any:
    """``ufunc.<method>`` run by NumPy on the dense values of the inputs (a NumPy array
    written in place by ``np.add.at(ndarray, idx, lazy_values)``)."""
    try:
        dense = [x if isinstance(x, np.ndarray) or not _IS_OPERAND[0](x) else np.asarray(x)
                 for x in inputs]
    except DensifyError as e:
        raise DensifyError(f"{where} needs dense NumPy values, too large: {e}") from None
    return getattr(ufunc, method)(*dense, **kwargs)


def _outer(ufunc: np.ufunc, where: str, inputs: tuple[Any, ...],
           kwargs: dict[str, Any]) -> Any:
    """``ufunc.outer(a, b)``: ``ufunc(a[..., None, ...], b)``, every axis of ``a`` before
    every axis of ``b`` (lazy, sparse where the operator keeps it so)."""
    if len(inputs) != 2:
        raise TypeError(f"{where} takes exactly two arrays, got {len(inputs)}")
    a, b = (_NS["asarray"](x) for x in inputs)
    a = _NS["reshape"](a, tuple(a.shape) + (1,) * b.ndim)
    return _call(ufunc, where, (a, b), kwargs)


def _reduce(ufunc: np.ufunc, method: str, where: str, inputs: tuple[Any, ...],
            kwargs: dict[str, Any]) -> Any:
    table = REDUCE if method == "reduce" else ACCUMULATE
    name = table.get(ufunc.__name__)
    if name is None or name not in _NS:
        raise TypeError(f"{where} has no lazysparse equivalent (supported for: "
                        f"{', '.join(sorted(table))})")
    (x,) = inputs
    axis = kwargs.pop("axis", 0)
    dtype = kwargs.pop("dtype", None)
    keepdims = kwargs.pop("keepdims", False)
    _drop_defaults(where, kwargs, initial=np._NoValue)  # noqa: SLF001
    if kwargs:
        raise TypeError(f"{where}: unsupported keyword(s) {sorted(kwargs)}")
    if method == "accumulate":
        return _NS[name](x, axis=axis, dtype=dtype)
    opts: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
    if dtype is not None and name in ("sum", "prod"):
        opts["dtype"] = np.dtype(dtype)
    return _NS[name](x, **opts)
