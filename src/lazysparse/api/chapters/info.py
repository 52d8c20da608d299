"""``__array_namespace_info__``: what the namespace supports (Array API inspection)."""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.api.array.devices import CPU, Device
from lazysparse.formats.device import cuda_devices
from lazysparse.logic import dtypes as _dt

_KIND_DTYPES: dict[str, tuple[np.dtype, ...]] = {
    "bool": (_dt.BOOL,),
    "signed integer": _dt.INT_DTYPES,
    "unsigned integer": _dt.UINT_DTYPES,
    "integral": _dt.INT_DTYPES + _dt.UINT_DTYPES,
    "real floating": _dt.REAL_FLOAT_DTYPES,
    "complex floating": _dt.COMPLEX_DTYPES,
    "numeric": _dt.INT_DTYPES + _dt.UINT_DTYPES + _dt.REAL_FLOAT_DTYPES + _dt.COMPLEX_DTYPES,
}


def _check_device(device: Any) -> None:
    if device is not None and device not in ("cpu", "cuda"):
        raise ValueError(f"unsupported device {device!r}; lazysparse arrays live on 'cpu' or "
                         "'cuda'")


class Info:
    """The object ``__array_namespace_info__()`` returns."""

    __module__ = "lazysparse"

    def capabilities(self) -> dict[str, Any]:
        """Optional features: boolean indexing and data-dependent shapes are supported."""
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": None}

    def default_device(self) -> Device:
        return CPU

    def devices(self) -> list[Device]:
        """The cpu, then the CUDA device when CuPy sees a GPU (asks CuPy only here)."""
        return [CPU, *(Device(name) for name in cuda_devices())]

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        _check_device(device)
        return {"real floating": _dt.DEFAULT_FLOAT, "complex floating": _dt.DEFAULT_COMPLEX,
                "integral": _dt.DEFAULT_INT, "indexing": _dt.DEFAULT_INT}

    def dtypes(self, *, device: Any = None,
               kind: str | tuple[str, ...] | None = None) -> dict[str, np.dtype]:
        """The supported dtypes of ``kind`` (all when None), by name."""
        _check_device(device)
        if kind is None:
            found = _dt.ALL_DTYPES
        elif isinstance(kind, tuple):
            found = tuple(d for d in _dt.ALL_DTYPES if any(_dt.isdtype(d, k) for k in kind))
        elif kind in _KIND_DTYPES:
            found = _KIND_DTYPES[kind]
        else:
            raise ValueError(f"unknown dtype kind {kind!r}; expected one of {_dt.KIND_NAMES}")
        return {d.name: d for d in found}


_INFO = Info()


def __array_namespace_info__() -> Info:  # noqa: N807 - the standard's name
    """The namespace's inspection object."""
    return _INFO
