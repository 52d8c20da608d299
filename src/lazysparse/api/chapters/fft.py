"""The Array API ``fft`` extension, computed with ``numpy.fft``.

A Fourier transform mixes every input entry into every output entry, so its result is dense
whatever the input's sparsity: each function computes and densifies its input (within the
densify limit) and returns a dense array. Precision follows the input (float32/complex64 in,
complex64/float32 out), as the standard asks. ``fftfreq``/``rfftfreq`` create arrays.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from lazysparse.api.array.devices import Device
from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.building.lazy_plans import check_array, normalize_axes, normalize_axis
from lazysparse.api.stored import eager
from lazysparse.logic import dtypes as _dt

_NORMS = ("backward", "ortho", "forward")


def _complex_for(d: np.dtype) -> np.dtype:
    return np.dtype("complex64") if d in (np.float32, np.complex64) else np.dtype("complex128")


def _real_for(d: np.dtype) -> np.dtype:
    return np.dtype("float32") if d in (np.float32, np.complex64) else np.dtype("float64")


def _input(x: Any, fname: str, kind: str, norm: str) -> tuple[LazyArray, np.ndarray]:
    x = check_array(x, fname)
    if not _dt.isdtype(x.dtype, kind):
        raise TypeError(f"{fname}: x has dtype {x.dtype}, expected a {kind} dtype")
    if norm not in _NORMS:
        raise ValueError(f"{fname}: norm must be one of {_NORMS}, got {norm!r}")
    if x.ndim == 0:
        raise ValueError(f"{fname}: x must have at least one dimension")
    return x, eager.to_numpy(x, fname)


def _check_n(n: Any, fname: str) -> int | None:
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise TypeError(f"{fname}: n must be an int or None, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{fname}: n must be at least 1, got {n}")
    return operator.index(n)


def _one_axis(fn: Callable[..., np.ndarray], fname: str, kind: str,
              out_dtype: Callable[[np.dtype], np.dtype]) -> Callable[..., LazyArray]:
    def f(x: Any, /, *, n: int | None = None, axis: int = -1,
          norm: str = "backward") -> LazyArray:
        x, a = _input(x, fname, kind, norm)
        ax = normalize_axis(axis, x.ndim, fname)
        out = fn(a, n=_check_n(n, fname), axis=ax, norm=norm)
        return eager.from_numpy(np.asarray(out).astype(out_dtype(x.dtype)), x.device)

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"``numpy.fft.{fname}`` of the computed input (dense result)."
    return f


def _many_axes(fn: Callable[..., np.ndarray], fname: str, kind: str,
               out_dtype: Callable[[np.dtype], np.dtype]) -> Callable[..., LazyArray]:
    def f(x: Any, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward") -> LazyArray:
        x, a = _input(x, fname, kind, norm)
        if axes is None:
            ax: list[int] | None = None if s is None else list(range(x.ndim - len(s), x.ndim))
        else:
            ax = [normalize_axis(k, x.ndim, fname) for k in axes]
            if len(set(ax)) != len(ax):
                raise ValueError(f"{fname}: repeated axis in {tuple(axes)}")
        if s is not None:
            s = [_check_n(v, fname) if v != -1 else -1 for v in s]
            if ax is not None and len(s) != len(ax):
                raise ValueError(f"{fname}: s and axes must have the same length")
            s = [a.shape[k] if v == -1 else v for v, k in zip(s, ax or [], strict=True)]
        out = fn(a, s=s, axes=ax, norm=norm)
        return eager.from_numpy(np.asarray(out).astype(out_dtype(x.dtype)), x.device)

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"``numpy.fft.{fname}`` of the computed input (dense result)."
    return f


fft = _one_axis(np.fft.fft, "fft", "complex floating", _complex_for)
ifft = _one_axis(np.fft.ifft, "ifft", "complex floating", _complex_for)
rfft = _one_axis(np.fft.rfft, "rfft", "real floating", _complex_for)
irfft = _one_axis(np.fft.irfft, "irfft", "complex floating", _real_for)
hfft = _one_axis(np.fft.hfft, "hfft", "complex floating", _real_for)
ihfft = _one_axis(np.fft.ihfft, "ihfft", "real floating", _complex_for)
fftn = _many_axes(np.fft.fftn, "fftn", "complex floating", _complex_for)
ifftn = _many_axes(np.fft.ifftn, "ifftn", "complex floating", _complex_for)
rfftn = _many_axes(np.fft.rfftn, "rfftn", "real floating", _complex_for)
irfftn = _many_axes(np.fft.irfftn, "irfftn", "complex floating", _real_for)


def _freq(fn: Callable[..., np.ndarray], fname: str) -> Callable[..., LazyArray]:
    def f(n: int, /, *, d: float = 1.0, dtype: Any = None,
          device: Device | str | None = None) -> LazyArray:
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"{fname}: n must be a positive int, got {n!r}")
        if isinstance(d, bool) or not isinstance(d, int | float | np.floating):
            raise TypeError(f"{fname}: d must be a real number, got {d!r}")
        dt = _dt.DEFAULT_FLOAT if dtype is None else _dt.as_dtype(dtype)
        if not _dt.isdtype(dt, "real floating"):
            raise TypeError(f"{fname}: dtype must be a real floating dtype, got {dt}")
        dev = device if isinstance(device, Device) else Device(device or "cpu")
        return eager.from_numpy(fn(operator.index(n), d=d).astype(dt), dev)

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"Sample frequencies, as ``numpy.fft.{fname}``."
    return f


fftfreq = _freq(np.fft.fftfreq, "fftfreq")
rfftfreq = _freq(np.fft.rfftfreq, "rfftfreq")


def _shift(fn: Callable[..., np.ndarray], fname: str) -> Callable[..., LazyArray]:
    def f(x: Any, /, *, axes: int | Sequence[int] | None = None) -> LazyArray:
        x = check_array(x, fname)
        ax = normalize_axes(axes, x.ndim, fname)
        return eager.from_numpy(fn(eager.to_numpy(x, fname), axes=ax), x.device)

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"``numpy.fft.{fname}`` of the computed input (dense result)."
    return f


fftshift = _shift(np.fft.fftshift, "fftshift")
ifftshift = _shift(np.fft.ifftshift, "ifftshift")


def _extension() -> ModuleType:
    """The ``fft`` extension namespace (``xp.fft``)."""
    ext = ModuleType("lazysparse.fft", "The Array API fft extension of lazysparse.")
    names = ("fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift",
             "ihfft", "irfft", "irfftn", "rfft", "rfftfreq", "rfftn")
    vars(ext).update({n: globals()[n] for n in names})
    ext.__all__ = list(names)  # type: ignore[attr-defined]
    return ext


EXTENSION = _extension()

# nothing of this module enters the main namespace; ``xp.fft`` is EXTENSION
__all__: list[str] = []
