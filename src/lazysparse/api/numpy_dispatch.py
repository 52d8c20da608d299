"""NumPy's dispatch protocols for lazysparse arrays: ``np.exp(x)``, ``np.sum(x, axis=0)``,
``np.concatenate([x, y])`` build the same lazy plans as the namespace.

- ``__array_ufunc__``: a ufunc maps to the namespace function of the operator registry entry
  whose NumPy form it is (``np.add`` → ``add``, ``np.arctan2`` → ``atan2``), plus ``matmul``
  and ``vecdot``; ``ufunc.reduce`` of ``add``/``multiply``/``maximum``/``minimum``/
  ``logical_and``/``logical_or`` is ``sum``/``prod``/``max``/``min``/``all``/``any`` and
  ``accumulate`` of ``add``/``multiply`` is ``cumulative_sum``/``cumulative_prod``.
  ``ufunc.outer`` is a broadcast of the call; ``ufunc.at`` (in place) and ``reduceat`` raise
  a TypeError naming them. A ufunc with no lazysparse equivalent (``np.spacing``,
  scipy.special's) runs in NumPy on the dense values, within the densify limit.
- ``__array_function__``: the NumPy functions of :data:`FUNCTIONS` (argument names
  translated); any other runs in NumPy on dense copies within the densify limit.

Nothing densifies here: what the namespace keeps sparse stays sparse, and what it computes
densely obeys the densify limit (``DensifyError``) as everywhere. ``out=`` and ``where=`` have
no lazy meaning (arrays are values) and raise TypeError. The tables are filled by
``api/namespace.py`` (:func:`install`), so this module imports nothing above it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lazysparse.formats.config import DensifyError

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
    as ``__array_function__`` does for NumPy functions lazysparse lacks; the result is
    NumPy's."""
    return _numpy_method(ufunc, "__call__", where, inputs, kwargs)


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
