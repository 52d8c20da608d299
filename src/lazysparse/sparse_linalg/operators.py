"""Inputs of the native solvers: the matrix as an operator, vectors, preconditioners and
tolerances, validated once before the iteration starts.

Every product and update stays a lazy lazysparse expression on the matrix's device, so
a solver's iteration is a few fused compiled kernels; only scalars (dot products, norms)
are read to the host with ``float``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import Device, LazyArray
from lazysparse.api.array.replay import Replay
from lazysparse.api.namespace import NAMESPACE

# the user namespace (``import lazysparse as xp``), reached from the api stage
xp = SimpleNamespace(**NAMESPACE)

Vector = Callable[[LazyArray], LazyArray]
"""A linear map of lazy vectors (a product, a preconditioner)."""


@dataclass(frozen=True)
class Operator:
    """A square or rectangular linear map ``A`` given by its lazy products."""

    shape: tuple[int, int]
    dtype: np.dtype
    device: Device
    matvec: Vector
    rmatvec: Vector | None  # ``A^T v``; None when the input cannot transpose
    matrix: LazyArray | None = None  # the array itself, when A is one (block products)


def _check_real(dtype: np.dtype, what: str, solver: str) -> None:
    """The solvers run in real floating point: complex input is refused, not truncated."""
    if dtype.kind == "c":
        raise TypeError(f"{solver}: complex {what} ({dtype}) is not supported; "
                        "the native solvers are real (use scipy.sparse.linalg)")
    if dtype.kind not in "biuf":
        raise TypeError(f"{solver}: {what} has dtype {dtype}, expected a real number type")


def _is_linear_operator(obj: Any) -> bool:
    """An object with ``shape`` and ``matvec`` (scipy's LinearOperator protocol)."""
    return hasattr(obj, "matvec") and hasattr(obj, "shape") and not isinstance(obj, LazyArray)


def _lazy_result(out: Any, device: Device, n: int, solver: str) -> LazyArray:
    """A product's result as a lazy vector of length ``n`` on ``device``."""
    arr = out if isinstance(out, LazyArray) else xp.asarray(np.asarray(out), device=device)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = xp.reshape(arr, (arr.shape[0],))
    if arr.shape != (n,):
        raise ValueError(f"{solver}: the operator returned shape {arr.shape}, expected ({n},)")
    return arr


def _from_array(a: LazyArray, solver: str) -> Operator:
    if a.ndim != 2:
        raise ValueError(f"{solver}: A must be 2-D, got {a.ndim}-D with shape {a.shape}")
    _check_real(a.dtype, "A", solver)
    return Operator((a.shape[0], a.shape[1]), a.dtype, a.device,
                    lambda v: a @ v, lambda v: a.T @ v, a)


def _from_linear_operator(op: Any, device: Device, solver: str) -> Operator:
    shape = tuple(op.shape)
    if len(shape) != 2:
        raise ValueError(f"{solver}: A must be 2-D, got shape {shape}")
    dtype = np.dtype(getattr(op, "dtype", None) or np.float64)
    _check_real(dtype, "A", solver)
    m, n = int(shape[0]), int(shape[1])
    rmatvec = getattr(op, "rmatvec", None)
    return Operator(
        (m, n), dtype, device,
        lambda v: _lazy_result(op.matvec(v), device, m, solver),
        None if rmatvec is None else (lambda v: _lazy_result(rmatvec(v), device, n, solver)))


def as_operator(a: Any, solver: str, n: int | None = None, device: Device | None = None
                ) -> Operator:
    """``A`` as an ``Operator``: a lazysparse array (sparse or dense), anything
    ``xp.asarray`` takes (a scipy sparse matrix/array, a NumPy array), an object with
    ``shape`` and ``matvec`` (a scipy LinearOperator), or a callable ``v -> A v`` of a square
    ``n x n`` matrix (``n`` from the right-hand side). Products of host operators come back
    as arrays on ``device`` (the right-hand side's)."""
    dev = device if device is not None else xp.Device("cpu")
    if isinstance(a, LazyArray):
        return _from_array(a, solver)
    if _is_linear_operator(a):
        return _from_linear_operator(a, dev, solver)
    if callable(a):
        if n is None:
            raise TypeError(f"{solver}: a callable A needs a shape; pass an object with "
                            "shape, matvec and rmatvec")
        return Operator((n, n), np.dtype(np.float64), dev,
                        lambda v: _lazy_result(a(v), dev, n, solver), None)
    try:
        arr = xp.asarray(a, device=device)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{solver}: A must be a lazysparse, scipy.sparse or NumPy matrix, a "
                        f"LinearOperator or a callable, got {type(a).__name__}") from e
    return _from_array(arr, solver)


def result_dtype(op: Operator, b: LazyArray) -> np.dtype:
    """The solution's dtype: the promoted type of ``A`` and ``b``, float64 for integers
    (scipy's rule)."""
    dt = np.result_type(op.dtype, b.dtype)
    return dt if dt.kind == "f" else np.dtype(np.float64)


def as_vector(v: Any, n: int, dtype: np.dtype | None, device: Device, what: str,
              solver: str) -> LazyArray:
    """``v`` as a lazy vector of length ``n`` (an ``(n, 1)`` column is flattened, as
    scipy does) on ``device``, cast to ``dtype`` when given."""
    arr = v if isinstance(v, LazyArray) else xp.asarray(v, device=device)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = xp.reshape(arr, (arr.shape[0],))
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{solver}: {what} has shape {arr.shape}, expected ({n},) to match "
                         f"A")
    _check_real(arr.dtype, what, solver)
    if arr.device != device:
        arr = arr.to_device(device)
    return arr if dtype is None or arr.dtype == dtype else xp.astype(arr, dtype)


@dataclass(frozen=True)
class Jacobi:
    """The Jacobi preconditioner: ``v -> v / diag(A)`` (one elementwise product that fuses
    into the solver's update kernels)."""

    inverse_diagonal: LazyArray

    @property
    def shape(self) -> tuple[int, int]:
        n = self.inverse_diagonal.shape[0]
        return (n, n)

    def __call__(self, v: LazyArray) -> LazyArray:
        return self.inverse_diagonal * v


def jacobi(a: Any) -> Jacobi:
    """The Jacobi (inverse diagonal) preconditioner of a square matrix ``a``; a zero on
    the diagonal raises ``ValueError`` (the inverse does not exist)."""
    arr = a if isinstance(a, LazyArray) else xp.asarray(a)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"jacobi: A must be a square 2-D matrix, got shape {arr.shape}")
    _check_real(arr.dtype, "A", "jacobi")
    diag = xp.linalg.diagonal(arr)
    if arr.dtype.kind != "f":
        diag = xp.astype(diag, xp.float64)
    inv = xp.compute(1.0 / diag)
    if arr.shape[0] and float(xp.min(xp.abs(diag))) == 0.0:
        raise ValueError("jacobi: A has a zero on its diagonal; the Jacobi preconditioner "
                         "(1 / diag(A)) does not exist")
    return Jacobi(inv)


def as_preconditioner(m: Any, n: int, device: Device, solver: str) -> Vector | None:
    """``M`` (an approximation of ``A^-1``) as a lazy map, or None for no preconditioner:
    ``jacobi(A)``, a matrix (applied with ``@``), a LinearOperator or a callable."""
    if m is None:
        return None
    if isinstance(m, Jacobi):
        if m.shape != (n, n):
            raise ValueError(f"{solver}: M has shape {m.shape}, expected {(n, n)}")
        return m
    op = as_operator(m, solver, n, device)
    if op.shape != (n, n):
        raise ValueError(f"{solver}: M has shape {op.shape}, expected {(n, n)}")
    return op.matvec


def square_operator(a: Any, b: Any, solver: str) -> tuple[Operator, LazyArray]:
    """The operator of a square system ``A x = b`` and ``b`` as a lazy vector of the
    solution's dtype (shapes and dtypes checked)."""
    bdev = b.device if isinstance(b, LazyArray) else None
    op = as_operator(a, solver, _length(b), bdev)
    if op.shape[0] != op.shape[1]:
        raise ValueError(f"{solver}: A must be square, got shape {op.shape}")
    bv = as_vector(b, op.shape[0], None, op.device, "b", solver)
    dtype = result_dtype(op, bv)
    return op, (bv if bv.dtype == dtype else xp.astype(bv, dtype))


def _length(b: Any) -> int | None:
    """The length of a right-hand side (to size a callable ``A``)."""
    shape = getattr(b, "shape", None)
    if shape is None:
        shape = np.shape(b)
    return int(shape[0]) if len(shape) >= 1 else None


def zeros(shape: int | tuple[int, ...], like: LazyArray) -> LazyArray:
    """Dense zeros of ``like``'s dtype and device (``xp.zeros`` is stored sparse: a
    solution or basis is dense)."""
    return xp.asformat(xp.zeros(shape, dtype=like.dtype, device=like.device), "dense")


def start(op: Operator, b: LazyArray, x0: Any, solver: str) -> LazyArray:
    """The initial guess: ``x0`` (checked, cast to ``b``'s dtype) or zeros."""
    n = op.shape[1]
    if x0 is None:
        return zeros(n, b)
    return as_vector(x0, n, b.dtype, op.device, "x0", solver)


def tolerance(bnorm: float, rtol: float, atol: float, solver: str) -> float:
    """scipy's stopping threshold ``max(atol, rtol * ||b||)`` (negative values refused)."""
    if rtol < 0 or atol < 0 or math.isnan(rtol) or math.isnan(atol):
        raise ValueError(f"{solver}: rtol and atol must be non-negative, got rtol={rtol}, "
                         f"atol={atol}")
    return max(float(atol), float(rtol) * bnorm)


def iterations(maxiter: int | None, default: int, solver: str) -> int:
    """The iteration cap (``default`` when None; a negative one is refused)."""
    if maxiter is None:
        return default
    if int(maxiter) < 0:
        raise ValueError(f"{solver}: maxiter must be non-negative, got {maxiter}")
    return int(maxiter)


def norm(v: LazyArray) -> float:
    """``||v||_2`` as a Python float (one compute)."""
    return math.sqrt(max(float(xp.vecdot(v, v)), 0.0))


def ratio(a: Any, b: Any, dtype: np.dtype) -> LazyArray:
    """``a / b`` of a lazy 0-d array and a Python float (either way round) as a lazy 0-d
    array of ``dtype``, rounded as the host's float division rounds it: in float64, then
    to ``dtype`` (a float32 solver's step size is the value a ``float()`` read and a
    Python division would give, only not read to the host: the plan goes on without a
    break)."""
    if dtype == np.float64:
        return a / b
    wide = [xp.astype(v, xp.float64) if isinstance(v, LazyArray) else v for v in (a, b)]
    return xp.astype(wide[0] / wide[1], dtype)


def apply(m: Vector | None, v: LazyArray) -> LazyArray:
    """``M v`` (``v`` itself without a preconditioner)."""
    return v if m is None else m(v)


def replay_for(op: Operator, psolve: Vector | None) -> Replay | None:
    """A ``Replay`` for a loop's step (``api.array.replay``: its cached program run without
    building the step again) when every array the step reads is known to it: ``A`` a
    lazysparse array, no preconditioner or ``jacobi``'s; None for a LinearOperator, a
    callable or a matrix ``M`` (their products run code the step cannot see)."""
    if op.matrix is None or not (psolve is None or isinstance(psolve, Jacobi)):
        return None
    return Replay()


def step_arrays(op: Operator, psolve: Vector | None, vectors: tuple[LazyArray, ...]
                ) -> tuple[LazyArray, ...]:
    """The arrays a replayed step reads: ``A``, Jacobi's inverse diagonal, ``vectors``."""
    assert op.matrix is not None
    if isinstance(psolve, Jacobi):
        return (op.matrix, psolve.inverse_diagonal, *vectors)
    return (op.matrix, *vectors)
