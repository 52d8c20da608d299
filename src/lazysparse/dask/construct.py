"""Dask arrays of lazysparse chunks from sparse matrices and files, split into row blocks.

The blocks are cut on the client and placed in the graph as data (each task, and each
worker, receives only its own block). 2-D inputs with fill value 0 are cut by scipy.sparse
(CSR rows, or CSC for a CSC input: the format is kept) and wrapped without copying; other
inputs (n-d, other fill values) are cut by lazysparse's own slicing.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

import lazysparse as xp
from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.dask.dispatch import tensor_nbytes
from lazysparse.formats import Tensor


def _to_lazy(a: Any) -> LazyArray:
    """``a`` as a computed lazysparse array."""
    x = a if isinstance(a, LazyArray) else xp.asarray(a)
    return xp.compute(x)


def _row_chunks(shape: tuple[int, ...], nbytes: int) -> tuple[int, ...]:
    """Row blocks of about Dask's ``array.chunk-size`` stored bytes each."""
    import dask
    from dask.utils import parse_bytes

    target = parse_bytes(dask.config.get("array.chunk-size"))
    nblocks = max(1, min(shape[0], math.ceil(nbytes / target))) if shape else 1
    return (math.ceil(shape[0] / nblocks),)


def _normalize(chunks: Any, shape: tuple[int, ...], dtype: np.dtype,
               nbytes: int) -> tuple[tuple[int, ...], ...]:
    """Dask chunks of ``shape``: an int is rows per block (the other axes whole); a tuple
    shorter than ``shape`` leaves the axes it does not name whole (``((10, 50),)``: two row
    blocks of 10 and 50 rows); otherwise Dask's own notation (``(20, 20)``: 20 × 20 blocks).
    A spec that cannot describe ``shape`` is a ValueError (:func:`_check_axis_spec`)."""
    from dask.array.core import normalize_chunks

    if chunks is None or chunks == "auto":
        chunks = _row_chunks(shape, nbytes)
    if isinstance(chunks, int | np.integer) and not isinstance(chunks, bool):
        chunks = (int(chunks),)
    if isinstance(chunks, list):
        chunks = tuple(chunks)
    if not isinstance(chunks, tuple | dict):
        raise TypeError(f"from_sparse: chunks must be an int, a tuple, a dict or 'auto', "
                        f"got {type(chunks).__name__}")
    if isinstance(chunks, tuple):
        if len(chunks) > len(shape):
            raise ValueError(f"from_sparse: chunks {chunks!r} name {len(chunks)} axes, the "
                             f"array has {len(shape)}")
        chunks = (*chunks, *shape[len(chunks):])
        for axis, (spec, n) in enumerate(zip(chunks, shape, strict=True)):
            _check_axis_spec(spec, n, axis)
    else:
        for axis, spec in chunks.items():
            if not isinstance(axis, int | np.integer) or not -len(shape) <= axis < len(shape):
                raise ValueError(f"from_sparse: chunks name axis {axis!r}, the array has "
                                 f"{len(shape)}")
            _check_axis_spec(spec, shape[axis], int(axis))
    norm = normalize_chunks(chunks, shape, dtype=dtype)
    for axis, (blocks, n) in enumerate(zip(norm, shape, strict=True)):
        if sum(blocks) != n or any(b < 0 for b in blocks):
            raise ValueError(f"from_sparse: chunks {blocks!r} of axis {axis} do not cover its "
                             f"{n} entries")
    return norm


def _check_axis_spec(spec: Any, n: int, axis: int) -> None:
    """ValueError/TypeError for one axis's chunk spec that is not: a positive int (block
    size), -1 or None (the whole axis), 'auto', or explicit non-negative block sizes
    summing to the axis length ``n``."""
    if spec is None or spec == "auto" or isinstance(spec, str):
        return
    if isinstance(spec, bool) or not isinstance(spec, int | np.integer | tuple | list):
        raise TypeError(f"from_sparse: chunks of axis {axis} must be an int or a tuple of "
                        f"ints, got {spec!r}")
    if isinstance(spec, tuple | list):
        sizes = list(spec)
        if not all(isinstance(b, int | np.integer) and not isinstance(b, bool) and b >= 0
                   for b in sizes) or sum(sizes) != n:
            raise ValueError(f"from_sparse: explicit chunks {tuple(spec)!r} of axis {axis} "
                             f"must be non-negative ints summing to its length {n}")
        return
    if spec == -1:
        return
    if spec <= 0:
        raise ValueError(f"from_sparse: chunk size {int(spec)} of axis {axis} must be a "
                         "positive int (or -1 / None for the whole axis)")


def _offsets(sizes: tuple[int, ...]) -> list[slice]:
    ends = np.cumsum((0, *sizes))
    return [slice(int(s), int(e)) for s, e in zip(ends[:-1], ends[1:], strict=True)]


def _scipy_source(a: Any) -> Any:
    """A scipy CSR/CSC matrix holding ``a`` (2-D, fill 0), or None."""
    import scipy.sparse as sp

    if sp.issparse(a):
        if a.ndim != 2:
            return None
        m = a
    elif type(a).__module__.split(".")[0] == "sparse" and getattr(a, "ndim", 0) == 2 \
            and getattr(a, "fill_value", 0) == 0:
        m = a.to_scipy_sparse()
    else:
        t = a.tensor() if isinstance(a, LazyArray) else a if isinstance(a, Tensor) else None
        if t is None or t.ndim != 2 or t.fill_value != 0 or t.format == "dense":
            return None
        m = t.to_scipy()
    return m if m.format in ("csr", "csc") else m.tocsr()


def _blocks(a: Any, chunks: tuple[tuple[int, ...], ...]) -> dict[tuple[int, ...], LazyArray]:
    """The computed lazysparse block of ``a`` at every block index of ``chunks``."""
    import itertools

    m = _scipy_source(a)
    x = None if m is not None else _to_lazy(a)
    out: dict[tuple[int, ...], LazyArray] = {}
    slices = [_offsets(c) for c in chunks]
    for idx in itertools.product(*(range(len(c)) for c in chunks)):
        sl = tuple(s[i] for s, i in zip(slices, idx, strict=True))
        if m is not None:
            out[idx] = xp.asarray(m[sl])
        else:
            assert x is not None
            out[idx] = xp.compute(x[sl])
    return out


def from_sparse(a: Any, chunks: Any = None, *, format: str | None = None,  # noqa: A002
                name: str | None = None) -> Any:
    """A Dask array of lazysparse chunks holding ``a`` (a scipy.sparse matrix or array, a
    pydata ``sparse`` array, a lazysparse array or ``formats.Tensor``).

    ``chunks``: an int (rows per block) splits the rows and keeps the other axes whole, as
    does ``((r0, r1, ...),)`` (explicit row-block sizes); any Dask chunk spec for every axis
    works too (``(20, 20)``: 20 × 20 blocks); None splits the rows into blocks of about
    Dask's ``array.chunk-size`` stored bytes. ``format`` stores every block
    in that format (default: the input's own, CSR for scipy COO/DOK/LIL…)."""
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    from lazysparse.dask.dispatch import register

    register()
    if not hasattr(a, "shape") or not hasattr(a, "dtype"):
        a = xp.asarray(a)  # lists, scalars, buffers: what the namespace's asarray takes
    shape = tuple(int(s) for s in a.shape)
    dtype = np.dtype(a.dtype)
    nbytes = _stored_bytes(a)
    norm = _normalize(chunks, shape, dtype, nbytes)
    blocks = _blocks(a, norm)
    if format is not None:
        blocks = {k: xp.asformat(b, format) for k, b in blocks.items()}
    name = name or f"lazysparse-{tokenize(*blocks.values())}"
    dsk = {(name, *k): b for k, b in blocks.items()}
    first = next(iter(blocks.values()))
    meta = xp.compute(first[(slice(0, 0),) * first.ndim])
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=())
    return da.Array(graph, name, norm, meta=meta)


def _stored_bytes(a: Any) -> int:
    """Stored bytes of ``a`` (for the default row split)."""
    if isinstance(a, LazyArray):
        return tensor_nbytes(a.tensor())
    if isinstance(a, Tensor):
        return tensor_nbytes(a)
    total = 0
    for attr in ("data", "indices", "indptr", "coords", "row", "col"):
        total += int(getattr(getattr(a, attr, None), "nbytes", 0) or 0)
    return total or int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize


def from_file(path: str | os.PathLike[str], chunks: Any = None, *,
              format: str | None = None) -> Any:  # noqa: A002
    """A Dask array of lazysparse row blocks read from a Matrix Market file (``.mtx``,
    also gzipped) or a lazysparse ``.npz`` archive (``lazysparse.io.save_npz``). The file is
    read once, on the client, and split as :func:`from_sparse` splits."""
    from lazysparse import io

    p = os.fspath(path)
    if p.endswith(".npz"):
        t = io.load_npz(p)
    elif p.endswith((".mtx", ".mtx.gz", ".mm", ".mm.gz")):
        t = io.read_mtx(p)
    else:
        raise ValueError(f"from_file: {p!r} is neither Matrix Market (.mtx) nor a lazysparse "
                         ".npz archive")
    return from_sparse(t, chunks, format=format)
