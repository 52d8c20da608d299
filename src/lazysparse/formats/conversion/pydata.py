"""Conversions to and from pydata ``sparse`` (COO, GCXS), imported only when used."""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.formats.conversion.convert import convert, from_coords
from lazysparse.formats.conversion.numpy_arrays import from_numpy
from lazysparse.formats.conversion.scipy_sparse import coo_levels
from lazysparse.formats.dtypes import check_dtype
from lazysparse.formats.levels import Compressed, Dense, Level
from lazysparse.formats.tensor import Tensor


def _sparse() -> Any:
    """The ``sparse`` module, or ImportError saying how to get it."""
    try:
        import sparse
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("pydata sparse is not installed: pip install sparse") from exc
    return sparse


def from_pydata(s: Any) -> Tensor:
    """A Tensor for a pydata sparse array, keeping its fill value.

    Canonical COO and 2-D GCXS (compressed axis 0 or 1) share their arrays.
    """
    sparse = _sparse()
    if not isinstance(s, sparse.SparseArray):
        raise TypeError(f"from_pydata expects a pydata sparse array, got {type(s).__name__}")
    check_dtype(s.dtype, "from_pydata")
    if s.ndim == 0:
        return from_numpy(s.todense(), "dense", s.fill_value)
    if isinstance(s, sparse.GCXS) and s.ndim == 2 and tuple(s.compressed_axes) in ((0,), (1,)):
        axis = s.compressed_axes[0]
        n_major, n_minor = s.shape if axis == 0 else s.shape[::-1]
        levels: list[Level] = [Dense(n_major), Compressed(n_minor, s.indptr, s.indices)]
        try:
            return Tensor(
                s.shape,
                levels,
                (0, 1) if axis == 0 else (1, 0),
                s.data,
                s.fill_value,
                format="csr" if axis == 0 else "csc",
            )
        except ValueError:
            s = s.tocoo()  # unsorted or duplicate indices: canonicalize through COO
    if not isinstance(s, sparse.COO):
        s = s.asformat("coo")
    coords = tuple(s.coords)
    try:
        return Tensor(
            s.shape,
            coo_levels(s.shape, coords),
            tuple(range(s.ndim)),
            s.data,
            s.fill_value,
            format="coo",
        )
    except ValueError:
        return from_coords(
            coords, s.data, s.shape, format="coo", fill_value=s.fill_value, sum_duplicates=True
        )


def to_pydata(t: Tensor, format: str = "coo") -> Any:  # noqa: A002
    """``t`` as a pydata ``sparse.COO`` (``format="coo"``) or ``sparse.GCXS`` (``"gcxs"``)."""
    sparse = _sparse()
    fmt = format.lower()
    if fmt not in ("coo", "gcxs"):
        raise ValueError(f"to_pydata format must be 'coo' or 'gcxs', got {format!r}")
    if fmt == "gcxs" and t.ndim == 2:
        u = t if t.format in ("csr", "csc") and t.spec.ordered else convert(t, "csr")
        low = u.levels[1]
        assert isinstance(low, Compressed)
        axes = (0,) if u.format == "csr" else (1,)
        return sparse.GCXS(
            (u.values, low.idx, low.ptr),
            shape=t.shape,
            compressed_axes=axes,
            fill_value=t.fill_value,
        )
    u = convert(t, "coo")
    if t.ndim == 0:
        coords = np.zeros((0, u.values.size), dtype=np.intp)
    else:
        coords = np.stack([level.idx for level in u.levels])  # type: ignore[attr-defined]
    out = sparse.COO(
        coords, u.values, shape=t.shape, fill_value=t.fill_value, has_duplicates=False, sorted=True
    )
    return out.asformat("gcxs") if fmt == "gcxs" else out
