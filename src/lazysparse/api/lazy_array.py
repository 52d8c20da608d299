"""``LazyArray``: a Finch-Logic expression plus eagerly known metadata.

Nothing runs when a LazyArray is built. Its ``expr`` is a ``Subquery`` whose fields are its
axes in order; its shape, dtype, device and fill value are derived as the plan is built.
Observing values (``__array__``, ``__bool__``, ``repr``…) computes it once and keeps the
resulting ``formats.Tensor``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from lazysparse.api import execution
from lazysparse.logic.nodes import Immediate, Subquery, Table

if TYPE_CHECKING:
    from lazysparse.formats import FormatSpec, Tensor


class Device:
    """A device on which arrays live: ``"cpu"`` (NumPy/Numba) or ``"cuda"`` (CuPy)."""

    __slots__ = ("name",)

    def __init__(self, name: str = "cpu") -> None:
        if name not in ("cpu", "cuda"):
            raise ValueError(f"unknown device {name!r}; lazysparse knows 'cpu' and 'cuda'")
        self.name = name

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self.name == other
        return isinstance(other, Device) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("Device", self.name))

    def __repr__(self) -> str:
        return f"Device({self.name!r})"


CPU = Device("cpu")


class LazyArray:
    """A lazily evaluated (possibly sparse) array of the lazysparse namespace."""

    __slots__ = ("_expr", "_shape", "_dtype", "_fill_value", "_device", "_format",
                 "_requested_format", "_result", "__weakref__")

    def __init__(self, expr: Subquery, shape: tuple[int, ...], dtype: np.dtype,
                 fill_value: Any, device: Device = CPU, format: str | None = None,
                 requested_format: FormatSpec | None = None) -> None:
        self._expr = expr
        self._shape = tuple(int(d) for d in shape)
        self._dtype = np.dtype(dtype)
        self._fill_value = self._dtype.type(fill_value) if fill_value is not None else None
        self._device = device
        self._format = format
        self._requested_format = requested_format
        self._result: Tensor | None = None

    @classmethod
    def from_tensor(cls, tensor: Tensor, device: Device = CPU) -> LazyArray:
        """Wrap a stored tensor (no copy) as a lazy leaf."""
        from lazysparse.api.building import fresh_alias, fresh_fields

        expr = Subquery(fresh_alias(), Table(Immediate(tensor), fresh_fields(tensor.ndim)))
        arr = cls(expr, tensor.shape, tensor.dtype, tensor.fill_value, device, tensor.format)
        arr._result = tensor
        return arr

    # --- metadata (eager, never computes) ---
    @property
    def expr(self) -> Subquery:
        """The Finch-Logic expression of this array (its fields are its axes)."""
        return self._expr

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def fill_value(self) -> Any:
        """The value of unstored entries."""
        return self._fill_value

    @property
    def format(self) -> str | None:
        """The storage format name once known (leaves, computed results, asformat)."""
        if self._result is not None:
            return self._result.format
        return self._format

    @property
    def requested_format(self) -> FormatSpec | None:
        """The format ``asformat`` asked for, which the optimizer keeps."""
        return self._requested_format

    # --- results ---
    @property
    def result(self) -> Tensor | None:
        """The computed tensor, or None when not computed yet."""
        return self._result

    def set_result(self, tensor: Tensor) -> None:
        """Store the computed tensor; later plans read it instead of recomputing."""
        self._result = tensor
        execution.memoize(self._expr.lhs, tensor)

    def tensor(self) -> Tensor:
        """Compute (once) and return the stored ``formats.Tensor``."""
        if self._result is None:
            execution.compute(self)
        assert self._result is not None
        return self._result

    def __lazysparse_tensor__(self) -> Tensor:
        return self.tensor()

    @property
    def nnz(self) -> int:
        """Number of stored entries (computes the array)."""
        return self.tensor().nnz

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self.tensor().to_numpy()
        if dtype is not None:
            out = out.astype(dtype, copy=False)
        return out
