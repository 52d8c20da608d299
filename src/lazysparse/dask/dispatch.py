"""lazysparse in Dask's dispatch registries (``dask.array.dispatch``, ``dask.sizeof``,
``dask.base.normalize_token``).

Dask calls these on chunks: ``concatenate_lookup`` to join blocks (rechunk, reductions,
``compute``'s final assembly), ``tensordot_lookup``/``einsum_lookup`` for blocked products,
``divide_lookup``/``numel_lookup`` for means, ``take_lookup`` for integer-array indexing,
``to_numpy_dispatch`` for ``d.to_backend("numpy")``. Each maps to the lazysparse function of
the same meaning, so chunks stay lazysparse arrays in their formats. ``sizeof`` reports the
stored bytes (distributed's memory accounting); tokens come from the array's process-unique
alias, never from hashing its data.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

import lazysparse as xp
from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.formats import Tensor

_PROCESS = uuid.uuid4().hex  # aliases are unique within one process only
_REGISTERED = False


def _as_lazy(x: Any) -> LazyArray:
    return x if isinstance(x, LazyArray) else xp.asarray(x)


def concatenate(arrays: Sequence[Any], axis: int = 0) -> LazyArray:
    """``np.concatenate`` of chunks (NumPy blocks among them are wrapped, not densified).
    One block is returned as it is: still lazy, so a reduction's chunk step and its
    aggregate step (Dask concatenates the partials between them) stay one plan."""
    if len(arrays) == 1:
        return _as_lazy(arrays[0])
    return xp.concat([_as_lazy(a) for a in arrays], axis=axis)


def tensordot(a: Any, b: Any, axes: Any = 2) -> LazyArray:
    """``np.tensordot`` of two chunks (lazy: the contraction fuses with what follows)."""
    return xp.tensordot(_as_lazy(a), _as_lazy(b), axes=axes)


def einsum(subscripts: str, *operands: Any, dtype: Any = None, **kwargs: Any) -> LazyArray:
    """``np.einsum`` of chunks; Dask's ``casting``/``order``/``optimize`` have no lazy
    meaning (plans are optimized anyway) and are dropped."""
    out = xp.einsum(subscripts, *(_as_lazy(o) for o in operands))
    return out if dtype is None else xp.astype(out, np.dtype(dtype))


def empty(shape: Any, dtype: Any = float, **kwargs: Any) -> LazyArray:
    """``np.empty``: an all-fill (zero) lazysparse array, stored sparse."""
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    return xp.empty(shape, dtype=np.dtype(dtype))


def divide(x1: Any, x2: Any, out: Any = None, dtype: Any = None) -> LazyArray:
    """Dask's ``divide(total, count, dtype=)`` of means."""
    if out is not None:
        raise TypeError("divide: out= is not supported for lazysparse chunks")
    q = xp.divide(_as_lazy(x1), _as_lazy(x2))
    return q if dtype is None else xp.astype(q, np.dtype(dtype))


def nannumel(x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None,
             **kwargs: Any) -> LazyArray:
    """Count of the entries that are not NaN (lazy; fuses with the chunk's reduction)."""
    x = _as_lazy(x)
    kept = xp.logical_not(xp.isnan(x)) if x.dtype.kind in "fc" else xp.ones_like(x, dtype=bool)
    return xp.sum(kept, axis=axis, keepdims=keepdims,
                  dtype=np.dtype(dtype) if dtype is not None else None)


def take(a: Any, indices: Any, axis: int = 0) -> LazyArray:
    """``np.take`` along one axis (integer-array indexing of a chunk)."""
    return xp.take(_as_lazy(a), xp.asarray(np.asarray(indices, dtype=np.intp)), axis=axis)


def to_numpy(x: LazyArray, **kwargs: Any) -> np.ndarray:
    """The dense NumPy array of a chunk (``d.to_backend("numpy")``; the densify limit
    applies)."""
    return x.tensor().to_numpy()


def percentile(a: Any, q: Any, method: str = "linear") -> Any:
    """Dask's per-chunk percentile: a 1-d chunk densified (implicit zeros count as values)."""
    from dask.array.percentile import _percentile

    q = q.tensor().to_numpy() if isinstance(q, LazyArray) else q  # made with like=meta
    return _percentile(to_numpy(_as_lazy(a)), q, method)


def tensor_nbytes(t: Tensor) -> int:
    """Bytes of a tensor's values and index arrays."""
    n = int(getattr(t.values, "nbytes", 0))
    for level in t.levels:
        n += sum(int(a.nbytes) for a in level.arrays().values())
    return n


def sizeof_lazy(x: LazyArray) -> int:
    """Stored bytes of a computed array; a lazy one holds only a plan (and shares its
    inputs with the arrays it was built from)."""
    t = x._result  # noqa: SLF001 - observing it must not compute
    if t is None or not isinstance(t, Tensor):
        return sys.getsizeof(x)
    return tensor_nbytes(t)


def token_lazy(x: LazyArray) -> tuple[str, str, str]:
    """Dask token: the alias of the array's current plan (unique in this process, and names
    one immutable value; ``expr`` first brings a view up to date with writes into its array
    and merges queued sparse writes), plus this process's id."""
    return ("lazysparse", _PROCESS, x.expr.lhs.name)


def register() -> None:
    """Register lazysparse with Dask (idempotent; ``import lazysparse.dask`` calls it)."""
    global _REGISTERED
    if _REGISTERED:
        return
    from dask.array import backends  # noqa: F401 - numpy's defaults first
    from dask.array.backends import _numel_ndarray
    from dask.array.chunk_types import register_chunk_type
    from dask.array.dispatch import (
        concatenate_lookup,
        divide_lookup,
        einsum_lookup,
        empty_lookup,
        nannumel_lookup,
        numel_lookup,
        percentile_lookup,
        take_lookup,
        tensordot_lookup,
        to_numpy_dispatch,
    )
    from dask.base import normalize_token
    from dask.sizeof import sizeof

    register_chunk_type(LazyArray)  # Dask handles it (``d @ x``), not defers to it
    concatenate_lookup.register(LazyArray, concatenate)
    tensordot_lookup.register(LazyArray, tensordot)
    einsum_lookup.register(LazyArray, einsum)
    empty_lookup.register(LazyArray, empty)
    divide_lookup.register(LazyArray, divide)
    numel_lookup.register(LazyArray, _numel_ndarray)  # a count: dense, like pydata's
    nannumel_lookup.register(LazyArray, nannumel)
    take_lookup.register(LazyArray, take)
    to_numpy_dispatch.register(LazyArray, to_numpy)
    percentile_lookup.register(LazyArray, percentile)
    sizeof.register(LazyArray, sizeof_lazy)
    sizeof.register(Tensor, tensor_nbytes)
    normalize_token.register(LazyArray, token_lazy)
    _REGISTERED = True
