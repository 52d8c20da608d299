"""Reading and writing tensors: Matrix Market (via scipy.io) and lossless ``.npz`` archives."""

from __future__ import annotations

import os
import zipfile
import zlib
from typing import Any

import numpy as np

from lazysparse.formats.conversion.convert import as_tensor

from .formats.levels import Level, level_attrs, level_of_kind
from .formats.levels.registry import level_class
from .formats.specs import LEVEL_KINDS, format_spec
from .formats.tensor import Tensor

_NPZ_MAGIC = "lazysparse-tensor-v1"

PathLike = str | os.PathLike[str]


def read_mtx(path: PathLike) -> Tensor:
    """Read Matrix Market: a coordinate file gives a coo Tensor, an array file a dense one."""
    import scipy.io
    import scipy.sparse as sp

    data = scipy.io.mmread(path)
    if sp.issparse(data):
        return Tensor.from_scipy(sp.coo_array(data))
    return Tensor.from_numpy(np.asarray(data), format="dense")


def write_mtx(path: PathLike, t: Any, *, comment: str = "") -> None:
    """Write a 2-D tensor (or ``__lazysparse_tensor__`` object) as Matrix Market.

    Sparse formats are written as coordinates, dense as an array (every value is stored, so the
    fill value is not needed). Matrix Market has no fill values: a sparse tensor with a nonzero
    fill value raises ValueError.
    """
    import scipy.io

    t = as_tensor(t)
    if t.ndim != 2:
        raise ValueError(f"Matrix Market stores 2-D matrices; this tensor has shape {t.shape}")
    if t.format == "dense":
        scipy.io.mmwrite(path, np.ascontiguousarray(t.to_numpy()), comment=comment)
        return
    scipy.io.mmwrite(path, t.to_scipy("coo"), comment=comment)


def save_npz(path: PathLike, t: Any) -> None:
    """Save a tensor losslessly: format, mode order, index arrays, values, fill, dtype, shape."""
    t = as_tensor(t)
    arrays: dict[str, np.ndarray] = {
        "magic": np.array(_NPZ_MAGIC),
        "format": np.array(t.format),
        "shape": np.array(t.shape, dtype=np.int64),
        "mode_order": np.array(t.mode_order, dtype=np.int64),
        "level_kinds": np.array([level.kind for level in t.levels], dtype="U32"),
        "level_sizes": np.array([level.size for level in t.levels], dtype=np.int64),
        "fill_value": np.array(t.fill_value, dtype=t.dtype),
        "values": t.values,
    }
    for k, level in enumerate(t.levels):
        for name, a in level.arrays().items():
            arrays[f"level{k}_{name}"] = a
        # a structured level's scalars (DIA length, ELL width, BSR block shape)
        for name, v in level_attrs(level).items():
            arrays[f"attr{k}_{name}"] = np.array(v, dtype=np.int64)
    np.savez(path, **arrays)


def load_npz(path: PathLike) -> Tensor:
    """Load a tensor written by :func:`save_npz` (checked like any user-built tensor), or a
    ``scipy.sparse.save_npz`` archive. Anything else (not an ``.npz`` archive, an archive of
    other arrays, one with an array missing or damaged) raises ValueError naming the file
    and the problem; a missing or unreadable file raises the OSError ``open`` gives."""
    try:
        f = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, zipfile.BadZipFile) as exc:
        # np.load takes bytes that are neither .npy nor .npz for a pickle and refuses it
        raise _not_an_archive(path, "the file is not an .npz (zip) archive") from exc
    if not isinstance(f, np.lib.npyio.NpzFile):
        raise _not_an_archive(path, "it holds one .npy array, not an .npz archive")
    with f:
        if "magic" in f.files:
            if str(f["magic"]) != _NPZ_MAGIC:
                raise _not_an_archive(path, f"unknown archive version {str(f['magic'])!r}")
            return _read_tensor(f, path)
        if _SCIPY_KEYS <= set(f.files):
            return _read_scipy(path)
        raise _not_an_archive(path, f"it holds the arrays {sorted(f.files)}")


_SCIPY_KEYS = {"format", "shape", "data"}  # what scipy.sparse.save_npz always writes


def _not_an_archive(path: PathLike, why: str) -> ValueError:
    return ValueError(f"{path} is not a lazysparse tensor archive (written by "
                      f"lazysparse.io.save_npz) nor a scipy.sparse .npz file: {why}")


def _array(f: Any, name: str, path: PathLike) -> np.ndarray:
    """Array ``name`` of a lazysparse archive (ValueError when missing or unreadable)."""
    try:
        return f[name]
    except KeyError:
        raise ValueError(f"{path}: the lazysparse tensor archive has no array {name!r} "
                         "(incomplete, or not written by save_npz)") from None
    except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error) as exc:
        raise ValueError(f"{path}: array {name!r} of the lazysparse tensor archive cannot "
                         f"be read ({exc})") from exc


def _attr(f: Any, name: str, path: PathLike, attr: str) -> Any:
    """Scalar level attribute ``name`` (a block shape: a pair) as Python ints."""
    a = _array(f, name, path)
    want = (2,) if attr == "block" else ()
    if a.dtype.kind not in "iu" or a.shape != want:
        raise ValueError(f"{path}: array {name!r} of the lazysparse tensor archive must be "
                         f"{'a pair of integers' if want else 'an integer'}, got "
                         f"{a.dtype}{list(a.shape)}")
    return tuple(int(v) for v in a) if want else int(a)


def _read_tensor(f: Any, path: PathLike) -> Tensor:
    """The Tensor a lazysparse archive holds (its arrays checked like any user-built one)."""
    kinds = [str(k) for k in _array(f, "level_kinds", path)]
    sizes = [int(s) for s in _array(f, "level_sizes", path)]
    if len(kinds) != len(sizes):
        raise ValueError(f"{path}: {len(kinds)} level kinds but {len(sizes)} level sizes")
    levels: list[Level] = []
    for k, (kind, size) in enumerate(zip(kinds, sizes, strict=True)):
        if kind not in LEVEL_KINDS:
            raise ValueError(f"{path}: unknown level kind {kind!r}")
        names = [n[len(f"level{k}_"):] for n in f.files if n.startswith(f"level{k}_")]
        attrs = {a: _attr(f, f"attr{k}_{a}", path, a) for a in level_class(kind).attr_names}
        try:
            levels.append(level_of_kind(kind, size, {n: _array(f, f"level{k}_{n}", path)
                                                     for n in names}, attrs))
        except KeyError as exc:  # the standard "has no array" message for the missing one
            _array(f, f"level{k}_{exc.args[0]}", path)
            raise
    fmt = str(_array(f, "format", path))
    return Tensor(
        tuple(int(n) for n in _array(f, "shape", path)),
        levels,
        tuple(int(m) for m in _array(f, "mode_order", path)),
        _array(f, "values", path),
        _array(f, "fill_value", path)[()],
        # an unordered level's spec carries its ordered format's name: infer it from kinds
        format=_saved_format(fmt, kinds, tuple(int(m) for m in _array(f, "mode_order", path))),
    )


def _saved_format(fmt: str, kinds: list[str], mode_order: tuple[int, ...]) -> str | None:
    """The saved format name when it names these levels; None (inferred from the levels)
    for a custom layout or one whose spec differs from the name's (an unordered csr)."""
    try:
        spec = format_spec(fmt, len(kinds), mode_order)
    except (ValueError, TypeError):
        return None
    return fmt if spec.level_kinds == tuple(kinds) else None


def _read_scipy(path: PathLike) -> Tensor:
    """The Tensor of a ``scipy.sparse.save_npz`` archive (ValueError when scipy cannot
    read it back)."""
    import scipy.sparse as sp

    try:
        m = sp.load_npz(path)
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"{path}: the scipy.sparse .npz file cannot be read: "
                         f"{exc!s}") from exc
    try:
        return Tensor.from_scipy(m)
    except ValueError as exc:  # its arrays are inconsistent: the same error, with the file
        raise type(exc)(f"{path}: {exc}") from exc
