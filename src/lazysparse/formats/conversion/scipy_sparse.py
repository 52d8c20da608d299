"""Conversions to and from scipy.sparse; csr, csc, coo, dia and bsr share their arrays (no
copies) where scipy's layout is canonical."""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.formats.compiled import checkkernels as K
from lazysparse.formats.compiled.checknumpy import checks
from lazysparse.formats.conversion.convert import convert, from_coords
from lazysparse.formats.dtypes import check_dtype, equals_fill
from lazysparse.formats.layouts import canonical
from lazysparse.formats.levels import (
    STRUCTURED_LEVELS,
    Banded,
    Blocked,
    Compressed,
    Dense,
    Level,
    Singleton,
)
from lazysparse.formats.levels.registry import DENSE_KIND, UNORDERED_KIND
from lazysparse.formats.tensor import Tensor
from lazysparse.formats.validation.inputs import CoordinateError, as_index_array

_SCIPY_FORMATS = ("csr", "csc", "coo", "dia", "bsr", "lil", "dok")


def from_scipy(m: Any) -> Tensor:
    """A Tensor (fill value 0) for any scipy.sparse array or matrix.

    csr/csc/coo in canonical form (sorted, no duplicates) are wrapped without copying; a
    csr/csc with unsorted but unique indices (what scipy's ``A @ B`` returns) is wrapped
    without copying or sorting as an unordered compressed level; duplicates are summed,
    as scipy defines them. A dia becomes a ``"dia"`` tensor (a banded level over its
    ``data``, no copy when its offsets ascend; unsorted offsets are sorted, duplicate ones
    summed), a bsr a ``"bsr"`` tensor (a blocked level over its ``indptr``/``indices``/
    ``data``, no copy in canonical form); lil/dok go through csr (2-D) or coo.
    """
    import scipy.sparse as sp

    if not sp.issparse(m):
        raise TypeError(
            f"from_scipy expects a scipy.sparse array or matrix, got {type(m).__name__}"
        )
    check_dtype(m.dtype, "from_scipy")
    fmt = m.format
    canonical = False
    if fmt in ("csr", "csc", "bsr") and m.ndim == 2:
        # scipy's own methods (has_canonical_format, sum_duplicates, tocsr) trust these
        # arrays: a decreasing indptr crashes them (RuntimeError, or worse); csr/csc are
        # checked for sorted, unique indices in the same pass (then not again)
        canonical = check_scipy_compressed(m, 2 if fmt in ("csr", "csc") else 0)
    if fmt in ("csr", "csc") and m.ndim == 2:
        n_major, n_minor = m.shape if fmt == "csr" else m.shape[::-1]
        ordered = True
        if not canonical:
            if not m.has_sorted_indices and _unique_unsorted(m, n_minor):
                ordered = False
            else:
                m = m.copy()
                m.sum_duplicates()
        nnz = int(m.indptr[-1])
        levels: list[Level] = [
            Dense(n_major), Compressed(n_minor, m.indptr, m.indices[:nnz], ordered=ordered)]
        order = (0, 1) if fmt == "csr" else (1, 0)
        return Tensor(m.shape, levels, order, m.data[:nnz], 0, format=fmt if ordered else None,
                      check=not canonical)
    if fmt == "coo":
        # scipy may hold strided views (unravel_index rows): levels get contiguous arrays
        coords = tuple(np.ascontiguousarray(c) for c in m.coords)
        if not m.has_canonical_format and not _coo_is_canonical(coords):
            return from_coords(coords, m.data, m.shape, format="coo", sum_duplicates=True)
        return Tensor(
            m.shape, coo_levels(m.shape, coords), tuple(range(m.ndim)), m.data, 0, format="coo"
        )
    if fmt == "dia" and m.ndim == 2:
        return _from_scipy_dia(m)
    if fmt == "bsr" and m.ndim == 2:
        return _from_scipy_bsr(m)
    if m.ndim == 2:
        return from_scipy(m.tocsr())
    return from_scipy(m.tocoo())


def _scipy_name(m: Any) -> str:
    return f"scipy {m.format}_{'matrix' if type(m).__name__.endswith('matrix') else 'array'}"


def _from_scipy_dia(m: Any) -> Tensor:
    """A ``"dia"`` tensor over a scipy dia's diagonals: ``data[d, j]`` is position
    ``d * length + j`` of the banded level, so ``data`` (C-contiguous) is shared as is when
    ``offsets`` ascend; otherwise the diagonals are sorted (one copy) and those of equal
    offset summed (scipy adds duplicates)."""
    name = _scipy_name(m)
    offsets = as_index_array(np.asarray(m.offsets), f"{name} offsets")
    data = np.asarray(m.data)
    if data.ndim == 1 and data.size == 0:
        data = data.reshape(0, 0)
    if offsets.ndim != 1 or data.ndim != 2 or data.shape[0] != offsets.size:
        raise ValueError(f"{name}: data has shape {data.shape} but offsets has shape "
                         f"{offsets.shape} (one row of data per offset)")
    if offsets.size > 1 and (offsets[1:] <= offsets[:-1]).any():
        order = np.argsort(offsets, kind="stable")
        offsets, data = offsets[order], data[order]
        first = np.flatnonzero(np.r_[True, offsets[1:] != offsets[:-1]])
        if first.size < offsets.size:  # duplicate offsets: scipy adds their diagonals
            offsets, data = offsets[first], np.add.reduceat(data, first, axis=0)
    length = int(data.shape[1])
    levels: list[Level] = [Dense(m.shape[0]), Banded(m.shape[1], offsets, length)]
    return Tensor(m.shape, levels, (0, 1), data.reshape(-1), 0, format="dia")


def _from_scipy_bsr(m: Any) -> Tensor:
    """A ``"bsr"`` tensor over a scipy bsr's blocks (``data[b, r, c]`` is position
    ``(b * R + r) * C + c`` of the blocked level): shared as is in canonical form (sorted
    block columns, no duplicate blocks), else summed and sorted in a copy first."""
    if not m.has_canonical_format:
        m = m.copy()
        m.sum_duplicates()
    nnzb = int(m.indptr[-1])
    block = tuple(int(b) for b in m.blocksize)
    levels: list[Level] = [Dense(m.shape[0]),
                           Blocked(m.shape[1], m.indptr, m.indices[:nnzb], block)]
    return Tensor(m.shape, levels, (0, 1), m.data[:nnzb].reshape(-1), 0, format="bsr")


def _unique_unsorted(m: Any, n_minor: int) -> bool:
    """Whether a scipy csr/csc with unsorted indices stores each coordinate once per row."""
    nnz = int(m.indptr[-1])
    if n_minor > 4 * nnz + (1 << 20):
        return False  # a mark per coordinate would be too large: sort instead
    code, _ = K.check_unique_unordered(m.indptr, m.indices[:nnz], np.full(n_minor, -1, np.int64))
    return code == K.OK


def check_scipy_compressed(m: Any, order: int = 0) -> bool:
    """ValueError naming the problem when a scipy csr/csc/bsr's ``indptr``/``indices``/
    ``data`` are inconsistent (checked before any scipy method reads them). With ``order``
    2, also whether each row's indices strictly ascend (canonical: the tensor needs no
    second check); ``order`` 0 skips that and returns False."""
    fmt = m.format
    name = f"scipy {fmt}_{'matrix' if type(m).__name__.endswith('matrix') else 'array'}"
    rows, cols = m.shape if fmt != "csc" else m.shape[::-1]
    if fmt == "bsr":
        r, c = m.blocksize
        rows, cols = rows // r, cols // c
    ptr = as_index_array(m.indptr, f"{name} indptr")
    idx = as_index_array(m.indices, f"{name} indices")
    major, minor = ("column", "row") if fmt == "csc" else ("row", "column")
    unit = "block " if fmt == "bsr" else ""
    if ptr.size != rows + 1:
        raise ValueError(f"{name}: indptr has length {ptr.size}, expected {rows + 1} (one more "
                         f"than the {rows} {unit}{major}s)")
    nvals = np.shape(m.data)[0] if np.ndim(m.data) else 0
    if nvals != idx.size:
        raise ValueError(f"{name}: data has {nvals} entries but indices has {idx.size} (one "
                         "value per index)")
    nnz = int(ptr[-1])
    if nnz > idx.size:
        raise ValueError(f"{name}: indptr[-1]={nnz} but indices has only {idx.size} entries")
    # scipy allows unused storage past indptr[-1]
    code, q = checks(ptr.size + max(nnz, 0)).check_compressed(ptr, idx[:max(nnz, 0)], cols,
                                                          order)
    if code == K.PTR_START:
        raise ValueError(f"{name}: indptr must start at 0, got {int(ptr[0])}")
    if code == K.PTR_DECREASES:
        raise ValueError(f"{name}: indptr decreases at {unit}{major} {q}: indptr[{q}]="
                         f"{int(ptr[q])} > indptr[{q + 1}]={int(ptr[q + 1])} (it must be "
                         "non-decreasing)")
    if code == K.OUT_OF_RANGE:
        raise CoordinateError(f"{name}: {unit}{minor} index {int(idx[q])} at position {q} is "
                              f"out of range for {cols} {unit}{minor}s")
    return order > 0 and code == K.OK


def coo_levels(shape: tuple[int, ...], coords: tuple[np.ndarray, ...]) -> list[Level]:
    """COO levels (compressed-nonunique root, singletons below) over coordinate arrays."""
    n = coords[0].size if coords else 0
    ptr = np.array([0, n], dtype=coords[0].dtype if coords else np.int64)
    if len(shape) == 1:
        return [Compressed(shape[0], ptr, coords[0])]
    return [Compressed(shape[0], ptr, coords[0], unique=False)] + [
        Singleton(shape[k], coords[k]) for k in range(1, len(shape))
    ]


def _coo_is_canonical(coords: tuple[np.ndarray, ...]) -> bool:
    """Whether COO coordinates strictly ascend in row-major order."""
    if not coords or coords[0].size < 2:
        return True
    dtype = np.result_type(*coords)
    if dtype.kind not in "iu":
        return False
    # one array type for the compiled check: same dtype, C-contiguous (scipy keeps views)
    chain = tuple(np.ascontiguousarray(c, dtype=dtype) for c in coords)
    code, _ = checks(chain[0].size * len(chain)).check_coo_chain(
        np.array([0, chain[0].size], dtype=np.int64), chain)
    return code == 0


def _check_zero_fill(t: Tensor) -> None:
    """scipy has no fill values: a tensor whose fill value is not 0 raises ValueError."""
    if bool(~equals_fill(np.asarray(t.fill_value), t.dtype.type(0))):
        raise ValueError(
            f"scipy.sparse has no fill values, and this tensor's fill value is {t.fill_value!r} "
            "(not 0); convert it to a dense array with to_numpy(), to pydata sparse with "
            "to_pydata(), or build it with fill_value=0"
        )


def _scipy_target(t: Tensor, format: str | None, matrix: bool  # noqa: A002
                  ) -> tuple[Tensor, str]:
    """The tensor to read (a structured one's csr-like layout unless it goes to dia/bsr)
    and the scipy format it becomes, checked (known, 2-D unless an n-d coo_array)."""
    if format is not None:
        format = format.lower()  # noqa: A001
    structured = bool(t.levels) and isinstance(t.levels[-1], STRUCTURED_LEVELS)
    if structured and format not in ("dia", "bsr") and not (format is None and t.format in (
            "dia", "bsr")):
        # structured levels have ptr/idx arrays of other meanings (block columns, run
        # starts): read a csr-like layout of theirs instead
        t = canonical(t)
    if format is None:
        format = (  # noqa: A001
            t.format if t.format in ("csr", "csc", "coo", "dia", "bsr")
            else ("csr" if t.ndim == 2 else "coo")
        )
    if format not in _SCIPY_FORMATS:
        raise ValueError(
            f"unknown scipy.sparse format {format!r}; expected one of {_SCIPY_FORMATS}"
        )
    if t.ndim != 2 and (format != "coo" or matrix):
        raise ValueError(
            f"scipy.sparse {'matrices' if matrix else format + '_array'} are 2-D; this tensor has "
            f"shape {t.shape} (use format='coo' for a {t.ndim}-d coo_array)"
        )
    return t, format


def _scipy_dia(sp: Any, t: Tensor, kind: str) -> Any:
    """A dia array/matrix sharing the band's offsets and values."""
    u = t if isinstance(t.levels[-1], Banded) else convert(t, "dia")
    band = u.levels[1]
    assert isinstance(band, Banded)
    m = getattr(sp, f"dia_{kind}")(t.shape, dtype=t.dtype)
    m.data = u.values.reshape(band.offsets.size, band.length)
    m.offsets = band.offsets
    return m


def _scipy_bsr(sp: Any, t: Tensor, kind: str) -> Any:
    """A bsr array/matrix sharing the blocks' pointers, indices and values."""
    u = t if isinstance(t.levels[-1], Blocked) else convert(t, "bsr")
    blk = u.levels[1]
    assert isinstance(blk, Blocked)
    r, c = blk.block
    m = getattr(sp, f"bsr_{kind}")(t.shape, blocksize=(r, c), dtype=t.dtype)
    m.indptr, m.indices = blk.ptr, blk.idx
    m.data = u.values.reshape(blk.idx.size, r, c)
    m.has_sorted_indices = True
    m.has_canonical_format = True
    return m


def _scipy_compressed(sp: Any, t: Tensor, kind: str, format: str) -> Any:  # noqa: A002
    """A csr/csc array/matrix sharing the compressed level's arrays."""
    u = t if t.spec.ordered_spec().name == format and t.spec.level_kinds == (
        DENSE_KIND, UNORDERED_KIND) else convert(t, format)
    low = u.levels[1]
    assert isinstance(low, Compressed)
    m = getattr(sp, f"{format}_{kind}")(t.shape, dtype=t.dtype)
    m.indptr, m.indices, m.data = low.ptr, low.idx, u.values
    m.has_sorted_indices = low.ordered  # scipy sorts lazily where it needs to
    m.has_canonical_format = low.ordered
    return m


def _scipy_coo(sp: Any, t: Tensor, kind: str, matrix: bool) -> Any:
    """A coo array/matrix sharing the coo layout's coordinates and values."""
    u = convert(t, "coo")
    coords = tuple(level.idx for level in u.levels)  # type: ignore[attr-defined]
    m = getattr(sp, f"coo_{kind}")(t.shape, dtype=t.dtype)
    if matrix:
        m.row, m.col = coords
    else:
        m.coords = coords
    m.data = u.values
    m.has_canonical_format = True
    return m


def to_scipy(t: Tensor, format: str | None = None, *, matrix: bool = False) -> Any:  # noqa: A002
    """``t`` as a scipy.sparse array (``matrix=True``: matrix) of ``format``.

    The default format is the tensor's own when scipy has it (csr, csc, coo, dia, bsr),
    else csr (coo for n-d); ell and run-length tensors go through their csr-like layout
    (:func:`formats.layouts.canonical`). csr/csc/coo/dia/bsr results share the tensor's
    arrays. scipy has no fill values, so a tensor whose fill value is not 0 raises
    ValueError.
    """
    import scipy.sparse as sp

    _check_zero_fill(t)
    t, format = _scipy_target(t, format, matrix)  # noqa: A001
    kind = "matrix" if matrix else "array"
    if format == "dia":
        return _scipy_dia(sp, t, kind)
    if format == "bsr":
        return _scipy_bsr(sp, t, kind)
    if format in ("csr", "csc"):
        return _scipy_compressed(sp, t, kind, format)
    if format == "coo":
        return _scipy_coo(sp, t, kind, matrix)
    return to_scipy(t, "csr", matrix=matrix).asformat(format)
