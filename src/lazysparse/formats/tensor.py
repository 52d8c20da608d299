"""The Tensor: a tree of levels over a values array, with a fill value."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lazysparse.formats.dtypes import choose_index_dtype, fill_key, normalize_fill
from lazysparse.formats.levels import Banded, Blocked, Compressed, Dense, Ell, Level, Singleton
from lazysparse.formats.specs import FormatSpec, format_spec, infer_spec
from lazysparse.formats.validation.inputs import as_index_array, as_values_array, check_shape
from lazysparse.formats.validation.levels import check_levels

if TYPE_CHECKING:
    import scipy.sparse


class Tensor:
    """An n-d array stored as levels (``levels[k]`` stores axis ``mode_order[k]``) over values.

    ``values`` has one entry per position of the last level (a 0-d tensor has no levels and
    one value); every coordinate not stored reads as ``fill_value``. The constructor checks
    the structure (``check=False`` skips the O(nnz) checks for trusted, internally built data).
    """

    __slots__ = ("shape", "levels", "mode_order", "values", "fill_value", "spec", "_index_dtype",
                 "__weakref__")  # weakly keyed statistics (formats.statistics)

    def __init__(
        self,
        shape: Sequence[int],
        levels: Sequence[Level],
        mode_order: Sequence[int],
        values: Any,
        fill_value: Any = 0,
        *,
        format: str | FormatSpec | None = None,  # noqa: A002 - the format's name or spec
        check: bool = True,
    ) -> None:
        self.shape: tuple[int, ...] = check_shape(shape)
        levels = tuple(levels)
        for level in levels:
            if not isinstance(level, Level):
                raise TypeError(f"levels must be Level objects, got {type(level).__name__}")
        if len(levels) != len(self.shape):
            raise ValueError(
                f"a tensor of shape {self.shape} needs {len(self.shape)} levels, got {len(levels)}"
            )
        kinds = tuple(level.kind for level in levels)
        try:
            order = tuple(int(m) for m in mode_order)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"mode_order must be a sequence of ints, got {mode_order!r}") from exc
        if format is None:
            spec = infer_spec(kinds, order)
        elif isinstance(format, FormatSpec):
            spec = format.layout
            if spec.mode_order != order:
                raise ValueError(f"mode_order {order} does not match format spec {spec}")
        else:
            spec = format_spec(format, len(order), order)
        if spec.level_kinds != kinds:
            raise ValueError(
                f"levels {kinds} do not match format {spec.name!r} ({spec.level_kinds})"
            )
        self.spec: FormatSpec = spec
        self.mode_order: tuple[int, ...] = spec.mode_order
        self.values: np.ndarray = as_values_array(values)
        self.fill_value: np.generic = normalize_fill(fill_value, self.values.dtype)
        self.levels: tuple[Level, ...]
        self.levels, index_dtype = _unify_index_dtype(levels, self.shape)
        self._index_dtype = (
            index_dtype if index_dtype is not None
            else choose_index_dtype(self.shape, self.values.size)
        )
        if check:
            dims = tuple(self.shape[m] for m in self.mode_order)
            npos = check_levels(self.levels, dims)
            if npos != self.values.size:
                raise ValueError(
                    f"values has length {self.values.size}, but the levels have {npos} positions "
                    "(mismatched lengths)"
                )

    # ---- attributes -------------------------------------------------------------------------
    @property
    def format(self) -> str:
        """The format's name (``"csr"``, ``"coo"``, ...; ``"custom"`` for unnamed layouts)."""
        return self.spec.name

    @property
    def dtype(self) -> np.dtype:
        """Dtype of the values."""
        return self.values.dtype

    @property
    def ndim(self) -> int:
        """Number of axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements of the (dense) array."""
        return int(np.prod(self.shape, dtype=object))

    @property
    def full(self) -> bool:
        """Whether every entry is stored (every level full; a 0-d tensor too): the tensor
        has no implicit region, so its fill value is nominal and decides nothing (the fill
        rule of docs/api.md)."""
        return all(lv.properties.full for lv in self.levels)

    @property
    def nnz(self) -> int:
        """Number of stored values (for a dense format: every element; for a bytemap, whose
        values array spans every position, the entries its touched list holds; DIA: band
        entries inside the matrix; ELL: slots that are not padding; BSR: every block
        entry; run-length: one per run)."""
        last = self.levels[-1] if self.levels else None
        if last is None or type(last) in _COMPACT_LEVELS:
            return int(self.values.size)  # one value per stored entry
        if isinstance(last, Banded):  # band positions inside the matrix (scipy's count)
            return last.stored_count(self.shape[0])
        if isinstance(last, Ell):
            return last.nstored
        if last is not None and not last.properties.compact and "idx" in last.arrays() \
                and not isinstance(last, Blocked):
            return int(last.arrays()["idx"].size)
        return int(self.values.size)

    @property
    def index_dtype(self) -> np.dtype:
        """Dtype of every ptr/idx array (int32 where dimensions and nnz fit, else int64)."""
        return np.dtype(self._index_dtype)

    @property
    def signature(self) -> tuple[Any, ...]:
        """Hashable cache key of the data: (format spec, dtype, fill value (NaN-safe), ndim;
        a BSR's block shape, which its kernels are compiled for)."""
        key = (self.spec, self.dtype.str, fill_key(self.fill_value), self.ndim)
        if self.levels and isinstance(self.levels[-1], Blocked):
            return (*key, self.levels[-1].block)  # type: ignore[attr-defined]
        return key

    def level_arrays(self, k: int) -> dict[str, np.ndarray]:
        """Index arrays of level ``k`` by name (``ptr``/``idx``); no copies."""
        return self.levels[k].arrays()

    def __lazysparse_tensor__(self) -> Tensor:
        """A Tensor is its own storage."""
        return self

    def __repr__(self) -> str:
        return (
            f"Tensor(format={self.format!r}, shape={self.shape}, dtype={self.dtype}, "
            f"nnz={self.nnz}, fill_value={self.fill_value!r}, mode_order={self.mode_order})"
        )

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    @classmethod
    def dense_result(cls, shape: tuple[int, ...], spec: FormatSpec, values: np.ndarray,
                     fill_value: np.generic) -> Tensor:
        """An all-dense tensor a kernel built (the NumPy executor's results): what the
        constructor would make of these parts, without its generic checks. The caller
        guarantees a tuple ``shape`` of ints, an all-dense ``spec`` of its ndim, a native
        1-d ``values`` array of ``prod(shape)`` entries of a supported dtype, and a fill
        that is a NumPy scalar of that dtype (it is a result's every call: issue 34)."""
        t = cls.__new__(cls)
        t.shape = shape
        t.levels = tuple([Dense(shape[m]) for m in spec.mode_order])
        t.mode_order = spec.mode_order
        t.spec = spec
        t.values = values
        t.fill_value = fill_value
        t._index_dtype = choose_index_dtype(shape, values.size)
        return t

    # ---- constructors (the converter modules' functions; see TensorConversions) --------------
    @classmethod
    def from_numpy(
        cls,
        a: Any,
        format: str | FormatSpec = "dense",  # noqa: A002
        fill_value: Any = 0,
        *,
        mode_order: Sequence[int] | None = None,
    ) -> Tensor:
        """Store ``a`` in ``format``; entries equal to ``fill_value`` (NaN-aware) are not stored."""
        return _conversions().from_numpy(a, format, fill_value, mode_order=mode_order)

    @classmethod
    def from_coords(
        cls,
        coords: Any,
        values: Any,
        shape: Sequence[int],
        *,
        format: str | FormatSpec = "coo",  # noqa: A002
        fill_value: Any = 0,
        mode_order: Sequence[int] | None = None,
        sum_duplicates: bool = False,
    ) -> Tensor:
        """Build from coordinates ``coords[axis][entry]`` (any order) and one value per entry.

        Repeated coordinates raise ValueError unless ``sum_duplicates=True`` adds them.
        """
        return _conversions().from_coords(
            coords,
            values,
            shape,
            format=format,
            fill_value=fill_value,
            mode_order=mode_order,
            sum_duplicates=sum_duplicates,
        )

    @classmethod
    def from_scipy(cls, m: Any) -> Tensor:
        """Wrap a scipy.sparse array/matrix; csr/csc/coo share index and value arrays."""
        return _conversions().from_scipy(m)

    @classmethod
    def from_pydata(cls, s: Any) -> Tensor:
        """Wrap a pydata ``sparse`` COO/GCXS/DOK array, keeping its fill value."""
        return _conversions().from_pydata(s)

    # ---- exports ------------------------------------------------------------------------------
    def to_numpy(self) -> np.ndarray:
        """The dense NumPy array (DensifyError past the densify limit)."""
        return _conversions().to_numpy(self)

    def to_scipy(self, format: str | None = None, *, matrix: bool = False) -> scipy.sparse.sparray:  # noqa: A002
        """A scipy.sparse array (``matrix=True``: matrix); csr/csc/coo share memory."""
        return _conversions().to_scipy(self, format, matrix=matrix)

    def to_pydata(self, format: str = "coo") -> Any:  # noqa: A002
        """A pydata ``sparse`` array (``"coo"`` or ``"gcxs"``) with the same fill value."""
        return _conversions().to_pydata(self, format)

    def asformat(self, format: str | FormatSpec, mode_order: Sequence[int] | None = None,  # noqa: A002
                 *, blocksize: Sequence[int] | None = None) -> Tensor:
        """This tensor converted to ``format`` (same as ``convert(self, format)``);
        ``blocksize=(R, C)``: the block shape of a ``"bsr"`` result (else chosen)."""
        return _conversions().asformat(self, format, mode_order, blocksize=blocksize)


@dataclass(frozen=True)
class TensorConversions:
    """The functions behind Tensor's ``from_*``/``to_*``/``asformat`` methods.

    They live in the converter modules, which build Tensors and so import this one; Tensor
    reaches them through this record instead of importing them back (dependency
    inversion). ``formats/__init__.py`` installs the record (:func:`install_conversions`)
    before anything outside the formats package can hold a Tensor.
    """

    from_numpy: Callable[..., Tensor]
    from_coords: Callable[..., Tensor]
    from_scipy: Callable[[Any], Tensor]
    from_pydata: Callable[[Any], Tensor]
    to_numpy: Callable[[Tensor], np.ndarray]
    to_scipy: Callable[..., Any]
    to_pydata: Callable[[Tensor, str], Any]
    asformat: Callable[..., Tensor]


_INSTALLED: list[TensorConversions] = []


def install_conversions(conversions: TensorConversions) -> None:
    """Make ``conversions`` what Tensor's conversion methods call (formats/__init__.py)."""
    _INSTALLED[:] = [conversions]


def _conversions() -> TensorConversions:
    if not _INSTALLED:
        raise RuntimeError("Tensor conversions are not installed: import lazysparse.formats")
    return _INSTALLED[0]


def _unify_index_dtype(levels: tuple[Level, ...], shape: tuple[int, ...]
                       ) -> tuple[tuple[Level, ...], np.dtype | None]:
    """Give every ptr/idx array one int32/int64 dtype (kept as is when they already agree);
    other level arrays (a hashed level's table, a bytemap's mask) keep their own dtypes.
    Returns the levels and that dtype (None when there is no index array)."""
    arrays = [(k, name, a) for k, lv in enumerate(levels) for name, a in lv.arrays().items()
              if name in _INDEX_ARRAYS]
    if not arrays:
        return levels, None
    first = arrays[0][2].dtype
    if (first == _INT64 or first == _INT32 and max(shape, default=0) <= _INT32_MAX) and all(
            type(a) is np.ndarray and a.ndim == 1 and a.dtype == first for _, _, a in arrays):
        return levels, first  # already one index dtype that fits (what kernels return)
    converted = {
        (k, name): as_index_array(a, f"level {k} ({type(levels[k]).__name__}) {name}")
        for k, name, a in arrays
    }
    dtypes = {a.dtype for a in converted.values()}
    if len(dtypes) == 1 and next(iter(dtypes)) in (np.dtype(np.int32), np.dtype(np.int64)):
        target = next(iter(dtypes))
        if target == np.int32 and max(shape, default=0) > np.iinfo(np.int32).max:
            target = np.dtype(np.int64)
    else:
        nnz = max((int(a.size) for a in converted.values()), default=0)
        target = choose_index_dtype(shape, nnz)
        for a in converted.values():
            if a.size and a.dtype.kind == "u" and int(a.max()) > np.iinfo(np.int64).max:
                raise ValueError(f"index value {int(a.max())} does not fit in int64")
            if a.size and a.dtype.itemsize >= target.itemsize and a.dtype != target:
                hi, lo = int(a.max()), int(a.min())
                if hi > np.iinfo(target).max or lo < np.iinfo(target).min:
                    target = np.dtype(np.int64)
    out = []
    for k, lv in enumerate(levels):
        new = {name: _cast(converted[(k, name)], target) for name in lv.arrays()
               if name in _INDEX_ARRAYS}
        out.append(
            lv.with_arrays(**new) if any(new[n] is not a for n, a in lv.arrays().items()
                                         if n in new) else lv
        )
    return tuple(out), target


# last levels whose positions are their stored entries, one value each (Tensor.nnz)
_COMPACT_LEVELS = (Dense, Compressed, Singleton)

_INT32, _INT64 = np.dtype(np.int32), np.dtype(np.int64)
_INT32_MAX = int(np.iinfo(np.int32).max)

# the arrays that hold coordinates or positions, in the tensor's one index dtype
_INDEX_ARRAYS = ("ptr", "idx", "end")


def _cast(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``a`` in ``dtype``, without a copy when it already is."""
    return a if a.dtype == dtype else a.astype(dtype)


__all__ = ["Tensor", "TensorConversions", "install_conversions"]
