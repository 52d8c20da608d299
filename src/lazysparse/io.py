"""Reading and writing tensors: Matrix Market (via scipy.io) and lossless ``.npz`` archives."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .formats.convert import as_tensor
from .formats.levels import Compressed, Dense, Level, Singleton
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
    np.savez(path, **arrays)


def load_npz(path: PathLike) -> Tensor:
    """Load a tensor written by :func:`save_npz` (checked like any user-built tensor)."""
    with np.load(path, allow_pickle=False) as f:
        if "magic" not in f.files or str(f["magic"]) != _NPZ_MAGIC:
            raise ValueError(f"{path} is not a lazysparse tensor archive (written by save_npz)")
        kinds = [str(k) for k in f["level_kinds"]]
        sizes = [int(s) for s in f["level_sizes"]]
        levels: list[Level] = []
        for k, (kind, size) in enumerate(zip(kinds, sizes, strict=True)):
            if kind == "dense":
                levels.append(Dense(size))
            elif kind in ("compressed", "compressed-nonunique"):
                levels.append(
                    Compressed(
                        size, f[f"level{k}_ptr"], f[f"level{k}_idx"], unique=kind == "compressed"
                    )
                )
            elif kind == "singleton":
                levels.append(Singleton(size, f[f"level{k}_idx"]))
            else:
                raise ValueError(f"{path}: unknown level kind {kind!r}")
        fill = f["fill_value"][()]
        return Tensor(
            tuple(int(n) for n in f["shape"]),
            levels,
            tuple(int(m) for m in f["mode_order"]),
            f["values"],
            fill,
            format=None if str(f["format"]) == "custom" else str(f["format"]),
        )
