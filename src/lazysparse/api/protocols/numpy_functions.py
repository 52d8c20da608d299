"""``__array_function__`` for lazysparse arrays: NumPy functions mapped to the namespace.

Each handler takes NumPy's signature and calls the namespace function with the same
meaning (``np.transpose(x, axes)`` → ``permute_dims``, ``np.concatenate`` → ``concat``,
``np.sum(x, axis, dtype, keepdims=...)`` → ``sum``). NumPy-only keywords are accepted at
their defaults and rejected otherwise (``out=``, ``where=``, ``order='F'``). A function not
in :data:`FUNCTIONS` is NumPy's own, run on dense copies within the densify limit
(:func:`numpy_fallback`). The table is documented in docs/numpy.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lazysparse.api.protocols.numpy_dispatch import _NS, _drop_defaults, _no_out
from lazysparse.formats.config import DensifyError

Handler = Callable[..., Any]
FUNCTIONS: dict[Any, Handler] = {}


def _handles(*funcs: Any) -> Callable[[Handler], Handler]:
    """Register a handler for the NumPy functions ``funcs`` (those this NumPy has)."""
    def deco(h: Handler) -> Handler:
        for f in funcs:
            if f is not None:
                FUNCTIONS[f] = h
        return h
    return deco


def _np(name: str) -> Any:
    return getattr(np, name, None)


def _reduction(name: str, with_dtype: bool) -> Handler:
    """``np.<name>(a, axis=None, [dtype=None,] out=None, keepdims=False, ...)``."""
    def h(a: Any, axis: Any = None, *args: Any, **kw: Any) -> Any:
        where = f"numpy.{name}"
        names = ("dtype", "out", "keepdims") if with_dtype else ("out", "keepdims")
        kw.update(zip(names, args, strict=False))
        _no_out(where, kw)
        opts: dict[str, Any] = {"axis": _axis(axis), "keepdims": bool(kw.pop("keepdims", False))}
        dtype = kw.pop("dtype", None)
        if dtype is not None and name in ("sum", "prod"):
            opts["dtype"] = np.dtype(dtype)
        elif dtype is not None:  # mean has no dtype in the Array API: compute in dtype
            a = _NS["astype"](_NS["asarray"](a), np.dtype(dtype))
        _drop_defaults(where, kw, initial=np._NoValue)  # noqa: SLF001
        _no_more(where, kw)
        return _NS[name](a, **opts)
    return h


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _no_more(where: str, kw: dict[str, Any]) -> None:
    if kw:
        raise TypeError(f"{where}: unsupported keyword(s) {sorted(kw)} for lazysparse arrays")


for _n in ("sum", "prod", "mean"):
    FUNCTIONS[_np(_n)] = _reduction(_n, True)
for _n, _fs in (("max", ("max", "amax")), ("min", ("min", "amin")), ("any", ("any",)),
                ("all", ("all",))):
    for _f in _fs:
        if _np(_f) is not None:
            FUNCTIONS[_np(_f)] = _reduction(_n, False)


def _nan_reduction(name: str, with_dtype: bool) -> Handler:
    """``np.nan<name>``: NaN entries replaced by the reduction's identity (``nanmax`` and
    ``nanmin``: by ∓inf, and NaN where a slice is all NaN, as NumPy); ``nanmean`` divides
    by the count of the others. Dask's nan-reductions call these on chunks."""
    ident = {"sum": 0, "prod": 1, "max": -np.inf, "min": np.inf, "mean": 0}[name]

    def h(a: Any, axis: Any = None, *args: Any, **kw: Any) -> Any:
        where = f"numpy.nan{name}"
        names = ("dtype", "out", "keepdims") if with_dtype else ("out", "keepdims")
        kw.update(zip(names, args, strict=False))
        _no_out(where, kw)
        keepdims = bool(kw.pop("keepdims", False))
        dtype = kw.pop("dtype", None)
        _drop_defaults(where, kw, initial=np._NoValue)  # noqa: SLF001
        _no_more(where, kw)
        ns, a = _NS, _NS["asarray"](a)
        opts: dict[str, Any] = {"axis": _axis(axis), "keepdims": keepdims}
        if a.dtype.kind not in "fc":
            nan, clean = None, a
        else:
            nan = ns["isnan"](a)
            clean = ns["where"](nan, ns["asarray"](ident, dtype=a.dtype), a)
        if name == "mean":
            kept = ns["ones_like"](a, dtype=bool) if nan is None else ns["logical_not"](nan)
            total = ns["sum"](clean, **opts)
            out = ns["divide"](total, ns["sum"](kept, dtype=total.dtype, **opts))
        elif name in ("max", "min"):
            out = ns[name](clean, **opts)
            if nan is not None:
                out = ns["where"](ns["all"](nan, **opts), ns["asarray"](np.nan, dtype=a.dtype),
                                  out)
        else:
            if dtype is not None:
                opts["dtype"] = np.dtype(dtype)
            out = ns[name](clean, **opts)
        return out if dtype is None or name != "mean" else ns["astype"](out, np.dtype(dtype))
    return h


for _n, _wd in (("sum", True), ("prod", True), ("mean", True), ("max", False), ("min", False)):
    FUNCTIONS[_np(f"nan{_n}")] = _nan_reduction(_n, _wd)


def _stat(name: str) -> Handler:
    def h(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
          keepdims: bool = False, **kw: Any) -> Any:
        where = f"numpy.{name}"
        _no_out(where, {"out": out, **{k: kw.pop(k) for k in ("where",) if k in kw}})
        correction = kw.pop("correction", None)
        _drop_defaults(where, kw, mean=np._NoValue)  # noqa: SLF001
        _no_more(where, kw)
        x = a if dtype is None else _NS["astype"](a, np.dtype(dtype))
        return _NS[name](x, axis=_axis(axis), keepdims=keepdims,
                         correction=ddof if correction is None else correction)
    return h


FUNCTIONS[np.std], FUNCTIONS[np.var] = _stat("std"), _stat("var")


def _arg(name: str) -> Handler:
    def h(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        _no_out(f"numpy.{name}", {"out": out})
        return _NS[name](a, axis=axis, keepdims=keepdims)
    return h


FUNCTIONS[np.argmax], FUNCTIONS[np.argmin] = _arg("argmax"), _arg("argmin")


def _cumulative(name: str) -> Handler:
    def h(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        _no_out(f"numpy.{name}", {"out": out})
        if axis is None:
            a, axis = _NS["reshape"](_NS["asarray"](a), (-1,)), 0
        return _NS[f"cumulative_{name[3:]}"](a, axis=axis, dtype=dtype)
    return h


FUNCTIONS[np.cumsum], FUNCTIONS[np.cumprod] = _cumulative("cumsum"), _cumulative("cumprod")


@_handles(np.count_nonzero)
def _count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    return _NS["count_nonzero"](a, axis=_axis(axis), keepdims=keepdims)


# --- manipulation -------------------------------------------------------------------------
@_handles(np.transpose)
def _transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    a = _NS["asarray"](a)
    return _NS["permute_dims"](a, tuple(reversed(range(a.ndim))) if axes is None
                               else tuple(axes))


@_handles(np.concatenate)
def _concatenate(arrays: Sequence[Any], axis: int | None = 0, out: Any = None, *,
                 dtype: Any = None, casting: str = "same_kind") -> Any:
    _no_out("numpy.concatenate", {"out": out})
    arrays = [_NS["asarray"](x) for x in arrays]
    if dtype is not None:
        arrays = [_NS["astype"](x, np.dtype(dtype)) for x in arrays]
    return _NS["concat"](arrays, axis=axis)


@_handles(np.stack)
def _stack(arrays: Sequence[Any], axis: int = 0, out: Any = None, *, dtype: Any = None,
           casting: str = "same_kind") -> Any:
    _no_out("numpy.stack", {"out": out})
    arrays = [_NS["asarray"](x) for x in arrays]
    if dtype is not None:
        arrays = [_NS["astype"](x, np.dtype(dtype)) for x in arrays]
    return _NS["stack"](arrays, axis=axis)


def _hstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    arrays = [_NS["asarray"](x) for x in tup]
    axis = 0 if arrays and arrays[0].ndim == 1 else 1
    return _concatenate(arrays, axis=axis, dtype=dtype)


def _vstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    arrays = [_NS["asarray"](x) for x in tup]
    arrays = [_NS["reshape"](x, (1, -1)) if x.ndim == 1 else x for x in arrays]
    return _concatenate(arrays, axis=0, dtype=dtype)


FUNCTIONS[np.hstack], FUNCTIONS[np.vstack] = _hstack, _vstack


@_handles(np.where)
def _where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None and y is None:
        return _NS["nonzero"](condition)
    if x is None or y is None:
        raise ValueError("numpy.where: either both or neither of x and y should be given")
    return _NS["where"](condition, x, y)


@_handles(np.reshape)
def _reshape(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None,
             copy: bool | None = None) -> Any:
    if order != "C":
        raise TypeError(f"numpy.reshape: order={order!r} is not supported for lazysparse "
                        "arrays (C order only)")
    shape = newshape if shape is None else shape
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    return _NS["reshape"](a, shape, copy=copy)


@_handles(np.ravel)
def _ravel(a: Any, order: str = "C") -> Any:
    return _reshape(a, (-1,), order)


@_handles(np.squeeze)
def _squeeze(a: Any, axis: Any = None) -> Any:
    a = _NS["asarray"](a)
    if axis is None:
        axis = tuple(k for k, n in enumerate(a.shape) if n == 1)
    return _NS["squeeze"](a, axis=_axis(axis))


def _forward(name: str, *kwnames: str) -> Handler:
    """A handler passing positional arguments through and renaming nothing."""
    def h(*args: Any, **kw: Any) -> Any:
        _no_more(f"numpy.{name}", {k: v for k, v in kw.items() if k not in kwnames})
        return _NS[name](*args, **kw)
    return h


for _name, _kws in (("expand_dims", ("axis",)), ("moveaxis", ()), ("flip", ("axis",)),
                    ("roll", ("shift", "axis")), ("tile", ()),
                    ("take_along_axis", ("axis",)), ("meshgrid", ("indexing",)),
                    ("nonzero", ()), ("real", ()), ("imag", ()), ("searchsorted", ("side",)),
                    ("broadcast_arrays", ()), ("diff", ("n", "axis", "prepend", "append"))):
    if _np(_name) is not None:
        FUNCTIONS[_np(_name)] = _forward(_name, *_kws)


def _triangle(name: str) -> Handler:
    """``np.tril(m, k=0)`` / ``np.triu(m, k=0)`` (``k`` is keyword-only in the namespace)."""
    def h(m: Any, k: int = 0) -> Any:
        return _NS[name](m, k=k)
    return h


FUNCTIONS[np.tril], FUNCTIONS[np.triu] = _triangle("tril"), _triangle("triu")


@_handles(np.broadcast_to)
def _broadcast_to(array: Any, shape: Any, subok: bool = False) -> Any:
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    return _NS["broadcast_to"](_NS["asarray"](array), shape)


@_handles(np.repeat)
def _repeat(a: Any, repeats: Any, axis: int | None = None) -> Any:
    return _NS["repeat"](a, repeats, axis=axis)


@_handles(np.take)
def _take(a: Any, indices: Any, axis: int | None = None, out: Any = None,
          mode: str = "raise") -> Any:
    _no_out("numpy.take", {"out": out})
    if mode != "raise":
        raise TypeError(f"numpy.take: mode={mode!r} is not supported for lazysparse arrays")
    a = _NS["asarray"](a)
    if axis is None:
        a, axis = _NS["reshape"](a, (-1,)), 0
    idx = np.asarray(indices)
    flat = _NS["take"](a, _NS["asarray"](idx.reshape(-1)), axis=axis)
    if idx.ndim == 1:
        return flat
    shape = (*a.shape[:axis], *idx.shape, *a.shape[axis + 1:])
    return _NS["reshape"](flat, shape)


@_handles(np.clip)
def _clip(a: Any, a_min: Any = np._NoValue, a_max: Any = np._NoValue,  # noqa: SLF001
          out: Any = None, *, min: Any = np._NoValue, max: Any = np._NoValue,  # noqa: A002, SLF001
          **kw: Any) -> Any:
    _no_out("numpy.clip", {"out": out})
    lo = min if a_min is np._NoValue else a_min  # noqa: SLF001
    hi = max if a_max is np._NoValue else a_max  # noqa: SLF001
    lo = None if lo is np._NoValue else lo  # noqa: SLF001
    hi = None if hi is np._NoValue else hi  # noqa: SLF001
    _no_more("numpy.clip", kw)
    return _NS["clip"](a, lo, hi)


@_handles(np.round, _np("around"))
def _round(a: Any, decimals: int = 0, out: Any = None) -> Any:
    _no_out("numpy.round", {"out": out})
    if decimals == 0:
        return _NS["round"](a)
    scale = 10.0 ** decimals
    return _NS["divide"](_NS["round"](_NS["multiply"](a, scale)), scale)


@_handles(_np("astype"))
def _astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    return _NS["astype"](x, np.dtype(dtype), copy=copy)


@_handles(np.shape)
def _shape(a: Any) -> tuple[int, ...]:
    return tuple(a.shape)


@_handles(np.ndim)
def _ndim(a: Any) -> int:
    return int(a.ndim)


@_handles(np.size)
def _size(a: Any, axis: int | None = None) -> int:
    return int(np.prod(a.shape)) if axis is None else int(a.shape[axis])


@_handles(np.copy)
def _copy(a: Any, order: str = "K", subok: bool = False) -> Any:
    return _NS["asarray"](a, copy=True)


def _like(name: str) -> Handler:
    """``np.<name>_like(a, [fill_value,] dtype=None, order='K', subok=True, shape=None)``."""
    def h(a: Any, *args: Any, dtype: Any = None, order: str = "K", subok: bool = True,
          shape: Any = None, device: Any = None) -> Any:
        a = _NS["asarray"](a)
        dt = a.dtype if dtype is None else np.dtype(dtype)
        if shape is None:
            return _NS[f"{name}_like"](a, *args, dtype=dt)
        shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
        return _NS[name](shape, *args, dtype=dt)
    return h


for _name in ("zeros", "ones", "empty", "full"):
    FUNCTIONS[_np(f"{_name}_like")] = _like(_name)


# --- creation with like= (NEP 35): np.array([], like=x) is a lazysparse array -------------
def _array(obj: Any, dtype: Any = None, *, copy: Any = True, order: str = "K",
           subok: bool = False, ndmin: int = 0, device: Any = None) -> Any:
    """``np.array``/``np.asarray(obj, like=x)``: ``xp.asarray`` (Dask builds chunks and
    empty metas this way), with NumPy's ``ndmin`` leading unit axes."""
    if order not in ("K", "A", "C", None):
        raise TypeError(f"numpy.array: order={order!r} is not supported for lazysparse arrays")
    x = _NS["asarray"](obj, dtype=None if dtype is None else np.dtype(dtype),
                       copy=True if copy is True else None)
    if x.ndim < ndmin:
        x = _NS["reshape"](x, (1,) * (ndmin - x.ndim) + tuple(x.shape))
    return x


def _creation(name: str) -> Handler:
    """``np.<name>(..., like=x)`` (``zeros``, ``ones``, ``empty``, ``full``, ``arange``)."""
    def h(*args: Any, dtype: Any = None, order: str = "C", device: Any = None) -> Any:
        if order != "C":
            raise TypeError(f"numpy.{name}: order={order!r} is not supported")
        opts = {} if dtype is None else {"dtype": np.dtype(dtype)}
        if name != "arange":
            shape = args[0]
            args = ((shape,) if isinstance(shape, int | np.integer) else tuple(shape), *args[1:])
        return _NS[name](*args, **opts)
    return h


FUNCTIONS[np.array] = FUNCTIONS[np.asarray] = FUNCTIONS[np.asanyarray] = _array
for _name in ("zeros", "ones", "empty", "full", "arange"):
    FUNCTIONS[_np(_name)] = _creation(_name)


# --- products -----------------------------------------------------------------------------
@_handles(np.tensordot)
def _tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    return _NS["tensordot"](a, b, axes=axes)


@_handles(np.dot)
def _dot(a: Any, b: Any, out: Any = None) -> Any:
    _no_out("numpy.dot", {"out": out})
    a, b = _NS["asarray"](a), _NS["asarray"](b)
    if a.ndim == 0 or b.ndim == 0:
        return _NS["multiply"](a, b)
    if b.ndim <= 2:
        return _NS["matmul"](a, b)
    return _NS["tensordot"](a, b, axes=([a.ndim - 1], [b.ndim - 2]))


@_handles(np.outer)
def _outer(a: Any, b: Any, out: Any = None) -> Any:
    _no_out("numpy.outer", {"out": out})
    a = _NS["reshape"](_NS["asarray"](a), (-1,))
    b = _NS["reshape"](_NS["asarray"](b), (-1,))
    return _NS["multiply"](a[:, None], b[None, :])


@_handles(np.einsum)
def _einsum(*operands: Any, out: Any = None, optimize: Any = False, **kw: Any) -> Any:
    _no_out("numpy.einsum", {"out": out})
    _drop_defaults("numpy.einsum", kw, dtype=None, order="K", casting="safe")
    _no_more("numpy.einsum", kw)
    return _NS["einsum"](*operands)


# --- comparisons that return a value ------------------------------------------------------
@_handles(np.isclose)
def _isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Any:
    ns = _NS
    a, b = ns["asarray"](a), ns["asarray"](b)
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        return ns["equal"](a, b)
    close = ns["less_equal"](ns["abs"](ns["subtract"](a, b)),
                             ns["add"](atol, ns["multiply"](rtol, ns["abs"](b))))
    finite = ns["logical_and"](ns["isfinite"](a), ns["isfinite"](b))
    out = ns["logical_or"](ns["equal"](a, b), ns["logical_and"](finite, close))
    if equal_nan:
        out = ns["logical_or"](out, ns["logical_and"](ns["isnan"](a), ns["isnan"](b)))
    return out


@_handles(np.allclose)
def _allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
              equal_nan: bool = False) -> bool:
    return bool(_NS["all"](_isclose(a, b, rtol, atol, equal_nan)))


@_handles(np.array_equal)
def _array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    a1, a2 = _NS["asarray"](a1), _NS["asarray"](a2)
    if tuple(a1.shape) != tuple(a2.shape):
        return False
    eq = _NS["equal"](a1, a2)
    if equal_nan:
        eq = _NS["logical_or"](eq, _NS["logical_and"](_NS["isnan"](a1), _NS["isnan"](a2)))
    return bool(_NS["all"](eq))


def array_function(func: Any, types: Sequence[type], args: tuple[Any, ...],
                   kwargs: dict[str, Any], own: type) -> Any:
    """``LazyArray.__array_function__``: the handler of ``func``; NotImplemented when another
    array type (not NumPy's, not lazysparse's) also takes part; NumPy's own ``func`` on the
    computed dense arrays (:func:`numpy_fallback`) when lazysparse has no equivalent."""
    if not all(issubclass(t, own | np.ndarray | np.generic) for t in types):
        return NotImplemented
    h = FUNCTIONS.get(func)
    if h is None:
        return numpy_fallback(func, args, kwargs, own)
    return h(*args, **kwargs)


def numpy_fallback(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                   own: type) -> Any:
    """``func(*args, **kwargs)`` run by NumPy with every lazysparse array in the arguments
    computed and converted to a dense NumPy array (``DensifyError`` past the densify limit,
    naming ``func``), as Dask does for functions it lacks. The result is NumPy's. ``out=``
    naming a lazysparse array is refused: lazysparse arrays are values, never written."""
    name = _numpy_name(func)
    out = kwargs.get("out")
    if _holds(out, own):
        raise TypeError(f"{name}: out= cannot be a lazysparse array (lazysparse arrays are "
                        "values: use the returned array)")
    try:
        np_args = _to_numpy(args, own)
        np_kwargs = _to_numpy(kwargs, own)
    except DensifyError as e:
        raise DensifyError(f"{name} has no lazysparse equivalent, so NumPy runs it on a dense "
                      f"copy, which is too large: {e}") from None
    return func(*np_args, **np_kwargs)


def _numpy_name(func: Any) -> str:
    """``numpy.unique``, ``numpy.linalg.svd``: the public name of a NumPy function."""
    mod = getattr(func, "__module__", "numpy") or "numpy"
    parts = mod.replace("numpy._core", "numpy").split(".")
    prefix = ".".join(parts[:2]) if len(parts) > 1 and parts[1] in ("linalg", "fft") \
        else parts[0]
    return f"{prefix}.{getattr(func, '__name__', func)}"


def _holds(obj: Any, own: type) -> bool:
    """Whether ``obj`` is, or a tuple/list holds, a lazysparse array."""
    if isinstance(obj, own):
        return True
    return isinstance(obj, tuple | list) and any(_holds(o, own) for o in obj)


def _to_numpy(obj: Any, own: type) -> Any:
    """``obj`` with every lazysparse array (also inside lists, tuples and dicts, as NumPy's
    functions take sequences of arrays) replaced by its dense NumPy value."""
    if isinstance(obj, own):
        return np.asarray(obj)
    if isinstance(obj, list | tuple):
        conv = [_to_numpy(o, own) for o in obj]
        return conv if isinstance(obj, list) else tuple(conv)
    if isinstance(obj, dict):
        return {k: _to_numpy(v, own) for k, v in obj.items()}
    return obj


__all__ = ["FUNCTIONS", "array_function", "numpy_fallback"]
