"""``python -m lazysparse warm``: compile the kernels of the common operations ahead of use.

A new user's first session waits on Numba for every new kernel (~0.5 s each). The kernels are
keyed by structure (operator, formats, dtypes), not by shape, and kept in the disk cache
(``LAZYSPARSE_CACHE_DIR``), so running each common operation once, on arrays large enough to
take the compiled path rather than the NumPy one
(``compile.planning.runners.NUMPY_MAX_ITERATIONS``), leaves them ready for every later
process. Each operation is checked against NumPy/scipy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.engine.tiers import CompileMode, compile_mode_set
from lazysparse.kernels.backends import STATS

#: the vector length and the sparse matrices' side: above the NumPy runner's size bound
VECTOR = 1 << 15
SIDE = 4096
ENTRIES_PER_ROW = 8


class Layout(Enum):
    """The storage the warmed operations take their matrix operands in."""

    CSR = "csr"
    DENSE = "dense"


DTYPES: tuple[str, ...] = ("float64", "float32", "int64")


@dataclass(frozen=True)
class Operation:
    """One common operation: its name, the lazy expression and the reference answer."""

    name: str
    lazy: Callable[[dict[str, Any]], Any]
    reference: Callable[[dict[str, Any]], Any]
    floats_only: bool = False


def _ref(x: Any) -> np.ndarray:
    return x.toarray() if sp.issparse(x) else np.asarray(x)


VECTOR_OPS: tuple[Operation, ...] = (
    Operation("add", lambda d: d["v"] + d["w"], lambda d: d["nv"] + d["nw"]),
    Operation("multiply", lambda d: d["v"] * d["w"], lambda d: d["nv"] * d["nw"]),
    Operation("axpy", lambda d: d["v"] + 2 * d["w"], lambda d: d["nv"] + 2 * d["nw"]),
    Operation("divide", lambda d: d["v"] / 3, lambda d: d["nv"] / 3, floats_only=True),
    Operation("dot", lambda d: xp.vecdot(d["v"], d["w"]), lambda d: d["nv"] @ d["nw"]),
    Operation("sum of a product", lambda d: xp.sum(d["v"] * d["w"]),
              lambda d: np.sum(d["nv"] * d["nw"])),
    Operation("sum", lambda d: xp.sum(d["v"]), lambda d: np.sum(d["nv"])),
    Operation("max", lambda d: xp.max(d["v"]), lambda d: np.max(d["nv"])),
)

MATRIX_OPS: tuple[Operation, ...] = (
    Operation("SpMV A @ x", lambda d: d["A"] @ d["x"], lambda d: d["nA"] @ d["nx"]),
    Operation("A.T @ x", lambda d: d["A"].T @ d["x"], lambda d: d["nA"].T @ d["nx"]),
    Operation("A + B", lambda d: d["A"] + d["B"], lambda d: d["nA"] + d["nB"]),
    Operation("A * B", lambda d: d["A"] * d["B"], lambda d: d["nA"].multiply(d["nB"])
              if sp.issparse(d["nA"]) else d["nA"] * d["nB"]),
    Operation("scale A * 2", lambda d: d["A"] * 2, lambda d: d["nA"] * 2),
    Operation("row sums", lambda d: xp.sum(d["A"], axis=1),
              lambda d: np.asarray(d["nA"].sum(axis=1)).ravel()),
    Operation("column sums", lambda d: xp.sum(d["A"], axis=0),
              lambda d: np.asarray(d["nA"].sum(axis=0)).ravel()),
    Operation("SpGEMM A @ B", lambda d: d["A"] @ d["B"], lambda d: d["nA"] @ d["nB"]),
)


def _matrix(layout: Layout, dtype: np.dtype, seed: int) -> Any:
    """A SIDE x SIDE matrix with ENTRIES_PER_ROW random entries per row, as scipy CSR or a
    NumPy array (dense matrices have a sixteenth of the side, to stay small)."""
    rng = np.random.default_rng(seed)
    if layout is Layout.DENSE:
        n = SIDE // 16
        return (rng.random((n, n)) * 10).astype(dtype)
    nnz = SIDE * ENTRIES_PER_ROW
    rows = np.repeat(np.arange(SIDE), ENTRIES_PER_ROW)
    cols = rng.integers(0, SIDE, nnz)
    vals = (rng.random(nnz) * 10 + 1).astype(dtype)
    return sp.csr_array((vals, (rows, cols)), shape=(SIDE, SIDE))


def _operands(layout: Layout, dtype: np.dtype) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    nv, nw = ((rng.random(VECTOR) * 10).astype(dtype) for _ in range(2))
    nA, nB = _matrix(layout, dtype, 1), _matrix(layout, dtype, 2)
    nx = (rng.random(nA.shape[1]) * 10).astype(dtype)
    plain = {"nv": nv, "nw": nw, "nA": nA, "nB": nB, "nx": nx}
    return plain | {k[1:]: xp.asarray(v) for k, v in plain.items()}


@dataclass(frozen=True)
class Warmed:
    """What warming one operation did: its kernels compiled or loaded, and its seconds
    (``layout`` is None for the vector operations)."""

    name: str
    layout: Layout | None
    dtype: str
    compiled: int
    loaded: int
    seconds: float


def _check(op: Operation, d: dict[str, Any], dtype: np.dtype) -> None:
    got, want = np.asarray(xp.compute(op.lazy(d))), _ref(op.reference(d))
    rtol = 1e-4 if dtype == np.float32 else 1e-9
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol):
        raise AssertionError(f"warm: {op.name} ({dtype}) differs from NumPy/scipy")


def operation_names() -> tuple[str, ...]:
    """The names of the warmed operations, matrix ones first."""
    return tuple(op.name for op in MATRIX_OPS + VECTOR_OPS)


def _run(ops: tuple[Operation, ...], d: dict[str, Any], dtype: np.dtype,
         layout: Layout | None, only: frozenset[str] | None) -> Iterator[Warmed]:
    """Check each of ``ops`` (those named in ``only``) on the operands ``d``, counting what
    its kernels compiled or loaded."""
    for op in ops:
        if (op.floats_only and dtype.kind not in "fc") or (
                only is not None and op.name not in only):
            continue
        c0, l0, t0 = STATS["compiled"], STATS["disk_loaded"], time.perf_counter()
        _check(op, d, dtype)
        yield Warmed(op.name, layout, str(dtype), STATS["compiled"] - c0,
                     STATS["disk_loaded"] - l0, time.perf_counter() - t0)


def warm(layouts: tuple[Layout, ...] = tuple(Layout), dtypes: tuple[str, ...] = DTYPES,
         only: frozenset[str] | None = None) -> Iterator[Warmed]:
    """Run each common operation (those named in ``only``, if given) once per layout and
    dtype (vector operations once per dtype), yielding what each compiled or loaded from
    the disk cache. Kernels compile here, in this process, whatever ``LAZYSPARSE_COMPILE``
    says (the eager tier would otherwise run these small operands without compiling)."""
    with compile_mode_set(CompileMode.SYNC):
        yield from _warm(layouts, dtypes, only)


def _warm(layouts: tuple[Layout, ...], dtypes: tuple[str, ...],
          only: frozenset[str] | None) -> Iterator[Warmed]:
    for dtype_name in dtypes:
        dtype = np.dtype(dtype_name)
        for layout in layouts:
            yield from _run(MATRIX_OPS, _operands(layout, dtype), dtype, layout, only)
        if layouts:
            yield from _run(VECTOR_OPS, _operands(layouts[0], dtype), dtype, None, only)


__all__ = ["DTYPES", "Layout", "Operation", "Warmed", "operation_names", "warm"]
