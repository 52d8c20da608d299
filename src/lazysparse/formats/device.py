"""Tensors whose storage arrays live on a CUDA device (CuPy arrays), and moving them.

A :class:`DeviceTensor` has the same level structure as ``formats.Tensor`` (the same Level
classes, holding CuPy arrays), so the kernel analysis reads it unchanged. CuPy is imported
inside functions only: lazysparse imports and runs on the CPU without it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from lazysparse.formats.config import get_densify_limit
from lazysparse.formats.conversion.convert import convert
from lazysparse.formats.layouts import canonical
from lazysparse.formats.levels import Compressed, Dense, Level
from lazysparse.formats.specs import FormatSpec, format_spec
from lazysparse.formats.tensor import Tensor

CUDA = "cuda"
CPU = "cpu"


def _cupy() -> Any:
    try:
        import cupy
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("device 'cuda' needs CuPy: pip install cupy-cuda12x "
                          "(or lazysparse[gpu])") from e
    return cupy


def cuda_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount()) > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean "no"
        return False


def cuda_devices() -> list[str]:
    """Device names for ``__array_namespace_info__().devices()`` (empty without a GPU)."""
    return [CUDA] if cuda_available() else []


class DeviceTensor:
    """A tensor on device ``cuda``: levels and values hold CuPy arrays."""

    __slots__ = ("shape", "levels", "mode_order", "values", "fill_value", "spec")

    def __init__(self, shape: Sequence[int], levels: Sequence[Level], mode_order: Sequence[int],
                 values: Any, fill_value: Any, spec: FormatSpec) -> None:
        self.shape = tuple(int(n) for n in shape)
        self.levels = tuple(levels)
        self.mode_order = tuple(int(m) for m in mode_order)
        if getattr(values, "ndim", None) != 1:
            raise ValueError("DeviceTensor values must be a 1-D device array")
        self.values = values
        self.fill_value = np.asarray(fill_value).astype(values.dtype)[()]
        self.spec = spec

    device = CUDA

    @property
    def dtype(self) -> np.dtype:
        """Element dtype."""
        return np.dtype(self.values.dtype)

    @property
    def ndim(self) -> int:
        """Number of axes."""
        return len(self.shape)

    @property
    def format(self) -> str:
        """The format's name."""
        return self.spec.name

    @property
    def full(self) -> bool:
        """Whether every entry is stored (as ``Tensor.full``): the kernel analysis reads it
        to tell an implicit fill region (which decides the result's fill) from a nominal
        fill of a dense tensor."""
        return all(lv.properties.full for lv in self.levels)

    @property
    def nnz(self) -> int:
        """Stored values."""
        return int(self.values.shape[0])

    @property
    def signature(self) -> tuple[Any, ...]:
        """Format spec, dtype, fill value, ndim (as ``Tensor.signature``) plus the device."""
        return (self.spec, str(self.dtype), repr(self.fill_value), self.ndim, CUDA)

    def __repr__(self) -> str:
        return (f"DeviceTensor(shape={self.shape}, format={self.format!r}, dtype={self.dtype},"
                f" nnz={self.nnz}, device='cuda')")


def device_of(x: Any) -> str:
    """``"cuda"`` for device tensors and CuPy arrays, else ``"cpu"``."""
    if isinstance(x, DeviceTensor):
        return CUDA
    mod = type(x).__module__ or ""
    return CUDA if mod.startswith("cupy") else CPU


def check_same_device(*xs: Any) -> str:
    """The common device of ``xs``; ValueError naming both when they differ."""
    devs = {device_of(x) for x in xs}
    if len(devs) > 1:
        raise ValueError("arrays on different devices (cpu and cuda) cannot be mixed in one "
                         "expression; move them first with x.to_device('cuda') or "
                         "x.to_device('cpu')")
    return devs.pop() if devs else CPU


def _level_to(level: Level, conv: Any) -> Level:
    arrays = level.arrays()
    return level.with_arrays(**{k: conv(v) for k, v in arrays.items()}) if arrays else level


def to_cuda(t: Tensor | DeviceTensor) -> DeviceTensor:
    """Copy a host tensor's storage arrays to the GPU (a device tensor is returned as is)."""
    if isinstance(t, DeviceTensor):
        return t
    if not isinstance(t, Tensor):
        raise TypeError(f"to_cuda expects a lazysparse Tensor, got {type(t).__name__}")
    cp = _cupy()
    t = canonical(t)  # the CUDA kernels read sorted dense/compressed/singleton levels
    levels = [_level_to(lv, cp.asarray) for lv in t.levels]
    return DeviceTensor(t.shape, levels, t.mode_order, cp.asarray(t.values), t.fill_value,
                        t.spec)


def to_host(t: DeviceTensor | Tensor) -> Tensor:
    """Copy a device tensor's storage arrays back to NumPy (a host tensor is returned as is)."""
    if isinstance(t, Tensor):
        return t
    if not isinstance(t, DeviceTensor):
        raise TypeError(f"to_host expects a DeviceTensor, got {type(t).__name__}")
    cp = _cupy()
    levels = [_level_to(lv, cp.asnumpy) for lv in t.levels]
    return Tensor(t.shape, levels, t.mode_order, cp.asnumpy(t.values), t.fill_value,
                  format=t.spec, check=False)


def from_cupyx(m: Any) -> DeviceTensor:
    """A device tensor sharing a ``cupyx.scipy.sparse`` matrix's arrays (CSR/CSC directly,
    other formats through CSR); duplicates are summed and indices sorted first."""
    cp = _cupy()
    import cupyx.scipy.sparse as cps

    if not cps.issparse(m):
        raise TypeError(f"from_cupyx expects a cupyx.scipy.sparse matrix, got {type(m).__name__}")
    if m.format not in ("csr", "csc"):
        m = m.tocsr()
    if not m.has_canonical_format:
        m = m.copy()
        m.sum_duplicates()
    rows, cols = m.shape
    outer, inner = (rows, cols) if m.format == "csr" else (cols, rows)
    idt = cp.int32 if max(rows, cols, m.nnz) < 2**31 - 1 else cp.int64
    levels = [Dense(outer), Compressed(inner, m.indptr.astype(idt, copy=False),
                                       m.indices.astype(idt, copy=False))]
    spec = format_spec(m.format, 2)
    return DeviceTensor((rows, cols), levels, spec.mode_order, m.data, 0, spec)


def to_cupyx(t: DeviceTensor | Tensor) -> Any:
    """A ``cupyx.scipy.sparse`` CSR/CSC matrix of a 2-D tensor with fill value 0 (CSR/CSC
    share their arrays; other formats convert on the host)."""
    if t.ndim != 2:
        raise ValueError(f"cupyx.scipy.sparse holds 2-D matrices, got a {t.ndim}-d tensor")
    fill = np.asarray(t.fill_value)
    if fill != 0:  # NaN != 0 too
        raise ValueError(f"cupyx.scipy.sparse needs fill value 0, this tensor has {fill!r}")
    _cupy()
    import cupyx.scipy.sparse as cps

    if t.format not in ("csr", "csc"):
        t = to_cuda(convert(to_host(t), "csr"))
    dev = to_cuda(t)
    lv = dev.levels[1]
    cls = cps.csr_matrix if dev.format == "csr" else cps.csc_matrix
    return cls((dev.values, lv.idx, lv.ptr), shape=dev.shape)  # type: ignore[attr-defined]


def dense_array(t: DeviceTensor) -> Any:
    """The tensor as a dense CuPy ndarray (what ``__dlpack__`` exports)."""
    cp = _cupy()
    if all(isinstance(lv, Dense) for lv in t.levels):
        dims = [t.shape[m] for m in t.mode_order]
        arr = t.values.reshape(dims) if dims else t.values.reshape(())
        return cp.ascontiguousarray(cp.transpose(arr, np.argsort(t.mode_order))) if dims else arr
    size = math.prod(t.shape)
    limit = get_densify_limit()
    if limit is not None and size * t.dtype.itemsize > limit:
        convert(to_host(t), "dense")  # raises DensifyError with the standard message
    return cp.asarray(to_host(t).to_numpy())
