"""scipy-style methods of lazysparse arrays: the linear-operator protocol and conversions.

``scipy.sparse.linalg.aslinearoperator`` (and so ``cg``, ``gmres``, ``eigsh``, ``svds``,
``lsqr`` ...) accepts any object with ``.shape`` and ``.matvec`` (plus ``.rmatvec``,
``.rmatmat`` and ``.dtype`` when present); ``expm_multiply`` and ``onenormest`` also call
``.trace()`` and ``.dot``. Each product here is one lazy matmul computed into NumPy, so
repeated calls reuse one cached compiled kernel. The conversions are the names pydata/sparse
and scipy users reach for (``todense``, ``toarray``, ``tocsr``, ``tocsc``, ``tocoo``,
``to_scipy``, ``to_pydata``): scipy results share the stored arrays, NumPy results obey
the densify limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lazysparse.api.protocols.numpy_dispatch import _NS

if TYPE_CHECKING:  # scipy loads with the first conversion, not with ``import lazysparse``
    import scipy.sparse as sp


def _matrix(x: Any, what: str) -> None:
    """ValueError unless ``x`` is 2-D (the linear-operator methods are for matrices)."""
    if x.ndim != 2:
        raise ValueError(f"{what}: needs a 2-D array, got shape {x.shape}")


def _adjoint(x: Any) -> Any:
    """The lazy conjugate transpose of a 2-D array."""
    return _NS["conj"](x).mT if x.dtype.kind == "c" else x.mT


class ScipyMethods:
    """Mixin of ``LazyArray``: scipy's linear-operator protocol and sparse conversions."""

    __slots__ = ()

    # --- scipy.sparse.linalg.LinearOperator protocol (2-D arrays; NumPy results) ---
    def matvec(self, v: Any) -> np.ndarray:
        """``A @ v`` for a vector ``v`` (or an ``(n, 1)`` column), as NumPy."""
        _matrix(self, "matvec")
        return np.asarray(self @ np.asarray(v))  # type: ignore[operator]

    def rmatvec(self, v: Any) -> np.ndarray:
        """``A^H @ v`` (the adjoint product), as NumPy."""
        _matrix(self, "rmatvec")
        return np.asarray(_adjoint(self) @ np.asarray(v))

    def matmat(self, m: Any) -> np.ndarray:
        """``A @ M`` for a 2-D ``M``, as NumPy."""
        _matrix(self, "matmat")
        m = np.asarray(m)
        if m.ndim != 2:
            raise ValueError(f"matmat: expected a 2-D operand, got shape {m.shape}")
        return np.asarray(self @ m)  # type: ignore[operator]

    def rmatmat(self, m: Any) -> np.ndarray:
        """``A^H @ M`` for a 2-D ``M``, as NumPy."""
        _matrix(self, "rmatmat")
        m = np.asarray(m)
        if m.ndim != 2:
            raise ValueError(f"rmatmat: expected a 2-D operand, got shape {m.shape}")
        return np.asarray(_adjoint(self) @ m)

    def trace(self, offset: int = 0) -> Any:
        """Sum of the diagonal (``offset`` as in NumPy), a NumPy scalar."""
        _matrix(self, "trace")
        return np.asarray(_NS["linalg"].trace(self, offset=offset))[()]

    # --- conversions ---
    def toarray(self) -> np.ndarray:
        """The dense NumPy array (``DensifyError`` past the densify limit)."""
        return np.asarray(self)

    def todense(self) -> np.ndarray:
        """The dense NumPy array (as pydata/sparse's ``todense``)."""
        return np.asarray(self)

    def to_scipy(self, format: str | None = None) -> sp.sparray:  # noqa: A002
        """A ``scipy.sparse`` array sharing the stored arrays (1-D or 2-D, fill value 0);
        ``format`` defaults to the array's own when scipy has it (else csr, coo for 1-D)."""
        if self.ndim not in (1, 2):  # type: ignore[attr-defined]
            raise ValueError(f"to_scipy: scipy.sparse holds 1-D and 2-D arrays, got shape "
                             f"{self.shape}")  # type: ignore[attr-defined]
        if self.ndim == 1 and format not in (None, "coo"):  # type: ignore[attr-defined]
            raise ValueError(f"to_scipy: a 1-D array converts to format 'coo' only, got "
                             f"{format!r}")
        return self.tensor().to_scipy("coo" if self.ndim == 1 else format)  # type: ignore[attr-defined]

    def to_pydata(self, format: str = "coo") -> Any:  # noqa: A002
        """A pydata ``sparse`` array (``"coo"`` or ``"gcxs"``, any ndim) keeping the fill
        value (needs the optional ``sparse`` package)."""
        return self.tensor().to_pydata(format)  # type: ignore[attr-defined]

    def tocsr(self) -> sp.csr_array:
        """A ``scipy.sparse.csr_array`` (2-D, fill value 0)."""
        _matrix(self, "tocsr")
        return self.to_scipy("csr")

    def tocsc(self) -> sp.csc_array:
        """A ``scipy.sparse.csc_array`` (2-D, fill value 0)."""
        _matrix(self, "tocsc")
        return self.to_scipy("csc")

    def tocoo(self) -> sp.coo_array:
        """A ``scipy.sparse.coo_array`` (1-D or 2-D, fill value 0)."""
        return self.to_scipy("coo")
