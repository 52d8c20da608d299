"""NumPy-style methods of lazysparse arrays (``x.astype``, ``x.sum(axis=1)``, ``x.reshape``…).

The Array API has functions, not methods, for these; libraries written against NumPy's
ndarray call them as methods on whatever chunk they hold (Dask's reductions call
``chunk.sum(axis=…)``, ``chunk.astype(dtype)``, ``meta.reshape(…)``; Dask's tensordot
compares ``__array_priority__``). Each method is the namespace function of the same meaning,
so it stays lazy; NumPy-only keywords are rejected as in ``api/protocols/numpy_functions.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.api.protocols.numpy_dispatch import _NS
from lazysparse.api.protocols.numpy_functions import FUNCTIONS


def _method(func: Any, name: str) -> Any:
    """``x.<name>(...)`` as NumPy's ``func(x, ...)`` (``api/protocols/numpy_functions.py``: the same
    keyword checks and namespace calls)."""
    handler = FUNCTIONS[func]

    def method(self: Any, *args: Any, **kw: Any) -> Any:
        return handler(self, *args, **kw)
    method.__name__ = name
    method.__doc__ = f"``np.{name}(x, ...)`` as a method (lazy)."
    return method


class NumpyMethods:
    """Mixin of ``LazyArray``: the ndarray methods NumPy-based libraries call on chunks."""

    __slots__ = ()
    # above ndarray (0) so Dask picks lazysparse's tensordot/concatenate for mixed chunks,
    # below dask.array.Array (11) so a Dask array wraps a lazysparse one, never the reverse
    __array_priority__ = 10.0

    sum = _method(np.sum, "sum")
    prod = _method(np.prod, "prod")
    mean = _method(np.mean, "mean")
    max = _method(np.max, "max")
    min = _method(np.min, "min")
    any = _method(np.any, "any")
    all = _method(np.all, "all")

    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe",
               subok: bool = True, copy: bool = True) -> Any:
        """``xp.astype(x, dtype)`` (NumPy's ``order``/``casting`` only at their defaults)."""
        if order not in ("K", "C", "A") or casting != "unsafe":
            raise TypeError("LazyArray.astype: order= and casting= are not supported")
        return _NS["astype"](self, np.dtype(dtype), copy=copy)

    def reshape(self, *shape: Any, order: str = "C", copy: bool | None = None) -> Any:
        """``xp.reshape(x, shape)``; ``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` both work."""
        if order != "C":
            raise TypeError(f"LazyArray.reshape: order={order!r} is not supported (C only)")
        if len(shape) == 1 and not isinstance(shape[0], int | np.integer):
            shape = tuple(shape[0])
        return _NS["reshape"](self, tuple(int(s) for s in shape), copy=copy)

    def ravel(self, order: str = "C") -> Any:
        """The flattened array (C order)."""
        return self.reshape((-1,), order=order)

    def flatten(self, order: str = "C") -> Any:
        """A flattened copy (C order): NumPy's ``flatten`` never returns a view."""
        if order != "C":
            raise TypeError(f"LazyArray.flatten: order={order!r} is not supported (C only)")
        return _NS["reshape"](self, (-1,), copy=True)

    squeeze = _method(np.squeeze, "squeeze")

    def transpose(self, *axes: Any) -> Any:
        """``xp.permute_dims``; all axes reversed when none are given."""
        if len(axes) == 1 and not isinstance(axes[0], int | np.integer):
            axes = tuple(axes[0]) if axes[0] is not None else ()
        if not axes:
            axes = tuple(reversed(range(self.ndim)))  # type: ignore[attr-defined]
        return _NS["permute_dims"](self, tuple(int(a) for a in axes))

    def conj(self) -> Any:
        """``xp.conj``."""
        return _NS["conj"](self)

    def dot(self, other: Any) -> Any:
        """``np.dot(x, other)`` (matmul for 1-d and 2-d operands)."""
        return np.dot(self, other)
