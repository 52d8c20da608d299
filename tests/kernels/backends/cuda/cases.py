"""Normal-form queries the CUDA backend is tested on: SpMV, SpGEMM, SDDMM, sparse add,
reductions and elementwise ops, over several formats, dtypes and fill values."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from lazysparse.formats.tensor import Tensor
from lazysparse.logic.nodes import Alias, Plan, Query, Reorder, Table
from tests.kernels.backends.helpers import F, acc, agg, compute, mj, plan, tensor


@dataclass(frozen=True)
class Case:
    """One plan with exactly one compute query."""

    name: str
    build: Callable[[], Plan]

    def split(self) -> tuple[Plan, Query, dict[Alias, Any]]:
        p = self.build()
        env = {b.lhs: b.rhs.tns.val for b in p.bodies
               if isinstance(b, Query) and isinstance(b.rhs, Table)}
        (q,) = [b for b in p.bodies if isinstance(b, Query) and not isinstance(b.rhs, Table)]
        return p, q, env


def rand_sparse(m: int, n: int, density: float, seed: int, dtype: Any = np.float64,
                skew: bool = False) -> np.ndarray:
    """A dense array with random sparsity (``skew``: a few very long rows)."""
    rng = np.random.default_rng(seed)
    a = sp.random(m, n, density, random_state=seed, format="csr").toarray()
    if skew:
        a[rng.integers(0, m, 2)] = rng.random(n) + 0.5
    if np.dtype(dtype).kind == "c":
        a = a + 1j * (a != 0) * rng.random(a.shape)
    elif np.dtype(dtype).kind in "iu":
        a = np.where(a != 0, np.ceil(a * 9), 0)
    elif np.dtype(dtype).kind == "b":
        a = a != 0
    return a.astype(dtype)


def T(a: np.ndarray, fmt: str, fill: Any = 0, mode_order: Any = None) -> Tensor:
    return tensor(np.asarray(a), fmt, fill, mode_order)


def spmv(dtype: Any = np.float64, fmt: str = "csr", skew: bool = False, m: int = 70,
         n: int = 50, density: float = 0.15) -> Callable[[], Plan]:
    def build() -> Plan:
        A = T(rand_sparse(m, n, density, 1, dtype, skew), fmt)
        x = T((np.arange(n) % 7 + 1).astype(dtype), "dense")
        body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("x", "j")),
                                     F("i", "j")), "j")
        return plan({"A": A, "x": x}, compute("out", "dense", 1, body))
    return build


def random_spmv(m: int, n: int, density: float, seed: int, skew: bool) -> Callable[[], Plan]:
    def build() -> Plan:
        A = T(rand_sparse(m, n, density, seed, skew=skew), "csr")
        x = T(np.random.default_rng(seed).random(n), "dense")
        body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("x", "j")),
                                     F("i", "j")), "j")
        return plan({"A": A, "x": x}, compute("out", "dense", 1, body))
    return build


def spgemm(dtype: Any = np.float64, m: int = 40, k: int = 30, n: int = 35, density: float = 0.12,
           seed: int = 2) -> Callable[[], Plan]:
    def build() -> Plan:
        A = T(rand_sparse(m, k, density, seed, dtype), "csr")
        B = T(rand_sparse(k, n, density, seed + 1, dtype), "csr")
        body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "k"), acc("B", "k", "j")),
                                     F("i", "k", "j")), "k")
        return plan({"A": A, "B": B}, compute("out", "csr", 2, body))
    return build


def sddmm() -> Plan:
    A = T(rand_sparse(30, 25, 0.2, 4), "csr")
    X = T(np.random.default_rng(5).random((30, 8)), "dense")
    Y = T(np.random.default_rng(6).random((25, 8)), "dense")
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"),
                                    mj("multiply", acc("X", "i", "k"), acc("Y", "j", "k"))),
                                 F("i", "j", "k")), "k")
    return plan({"A": A, "X": X, "Y": Y}, compute("out", "csr", 2, body))


def sparse_add(dtype: Any = np.float64, op: str = "add", fill: Any = 0) -> Callable[[], Plan]:
    def build() -> Plan:
        a, b = rand_sparse(30, 40, 0.1, 7, dtype), rand_sparse(30, 40, 0.1, 8, dtype)
        if fill != 0:
            a[a == 0], b[b == 0] = fill, fill
        A, B = T(a, "csr", fill=fill), T(b, "csr", fill=fill)
        body = Reorder(mj(op, acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
        return plan({"A": A, "B": B}, compute("out", "csr", 2, body))
    return build


def row_reduce(op: str, dtype: Any, init: Any, fmt: str = "csr") -> Callable[[], Plan]:
    def build() -> Plan:
        A = T(rand_sparse(45, 33, 0.2, 9, dtype), fmt)
        if fmt == "csc":  # column reduction, loop order concordant with CSC
            body = agg(op, init, Reorder(acc("A", "i", "j"), F("j", "i")), "i")
        else:
            body = agg(op, init, Reorder(acc("A", "i", "j"), F("i", "j")), "j")
        return plan({"A": A}, compute("out", "dense", 1, body))
    return build


def col_sum() -> Plan:
    A = T(rand_sparse(45, 33, 0.2, 10), "csr")
    body = agg("add", 0, Reorder(acc("A", "i", "j"), F("i", "j")), "i")
    return plan({"A": A}, compute("out", "dense", 1, body))


def full_sum(dtype: Any = np.float64) -> Callable[[], Plan]:
    def build() -> Plan:
        A = T(rand_sparse(50, 20, 0.2, 11, dtype), "csr")
        body = agg("add", 0, Reorder(acc("A", "i", "j"), F("i", "j")), "i", "j")
        return plan({"A": A}, compute("out", "dense", 0, body))
    return build


def scale_nan_fill() -> Plan:
    a = rand_sparse(20, 15, 0.3, 12)
    a[a == 0] = np.nan
    A = T(a, "csr", fill=np.nan)
    body = Reorder(mj("multiply", acc("A", "i", "j"), acc("A", "i", "j")), F("i", "j"))
    return plan({"A": A}, compute("out", "csr", 2, body))


def rowsum_nan_fill() -> Plan:
    """Row sums of a NaN-filled matrix: the CPU backend folds the skipped NaNs in on the
    host (``execute.fold_skipped``); the CUDA backend lowers without folding and must visit
    every coordinate to get the same NaNs."""
    a = rand_sparse(25, 18, 0.3, 14)
    a[a == 0] = np.nan
    a[3] = np.nan  # an all-fill row
    a[5] = np.arange(1.0, 19.0)  # a full row: no NaN
    A = T(a, "csr", fill=np.nan)
    body = agg("add", 0, Reorder(acc("A", "i", "j"), F("i", "j")), "j")
    return plan({"A": A}, compute("out", "dense", 1, body))


def rowmax_keepdims() -> Plan:
    """max(A, axis=1, keepdims=True): a loop field ``k`` no access indexes (extent 1)."""
    A = T(rand_sparse(30, 22, 0.2, 15) - 0.5 * (rand_sparse(30, 22, 0.2, 16) != 0), "csr")
    body = agg("maximum", -np.inf, Reorder(acc("A", "i", "j"), F("i", "k", "j")), "j")
    return plan({"A": A}, compute("out", "dense", 2, body))


def coo_spmv() -> Plan:
    A = T(rand_sparse(30, 20, 0.2, 13), "coo")
    x = T(np.arange(20.0), "dense")
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("x", "j")),
                                 F("i", "j")), "j")
    return plan({"A": A, "x": x}, compute("out", "dense", 1, body))


CASES: list[Case] = [
    Case("spmv_f64", spmv()),
    Case("spmv_f32", spmv(np.float32)),
    Case("spmv_i8", spmv(np.int8)),
    Case("spmv_u64", spmv(np.uint64)),
    Case("spmv_c128", spmv(np.complex128)),
    Case("spmv_skew", spmv(skew=True, m=120, n=400, density=0.02)),
    Case("spmv_long_rows", spmv(m=20, n=300)),
    Case("spmv_coo", coo_spmv),
    Case("spgemm_f64", spgemm()),
    Case("spgemm_i32", spgemm(np.int32)),
    Case("spgemm_wide", spgemm(np.float64, 20, 30, 3000, 0.01, 21)),  # sorted-list drain
    Case("sddmm", sddmm),
    Case("add_f64", sparse_add()),
    Case("add_c64", sparse_add(np.complex64)),
    Case("max_bool_or", sparse_add(np.bool_, "logical_or")),
    Case("add_fill1_u32", sparse_add(np.uint32, "add", fill=1)),
    Case("mul_fill1_f64", sparse_add(np.float64, "multiply", fill=1)),
    Case("spmv_u8", spmv(np.uint8)),
    Case("spmv_empty", spmv(m=0, n=7)),
    Case("spmv_no_cols", spmv(m=5, n=0)),
    Case("rowsum_f64", row_reduce("add", np.float64, 0)),
    Case("rowmax_f64", row_reduce("maximum", np.float64, -np.inf)),
    Case("rowprod_i16", row_reduce("multiply", np.int16, 1)),
    Case("rowany_bool", row_reduce("logical_or", np.bool_, False)),
    Case("colsum_csc", row_reduce("add", np.float64, 0, "csc")),
    Case("colsum", col_sum),
    Case("fullsum_f64", full_sum()),
    Case("fullsum_i64", full_sum(np.int64)),
    Case("square_nan_fill", scale_nan_fill),
    Case("rowsum_nan_fill", rowsum_nan_fill),
    Case("rowmax_keepdims", rowmax_keepdims),
]

CASE_IDS = [c.name for c in CASES]
STRATEGIES = ("thread", "warp", "nzsplit")


@dataclass(frozen=True)
class Built:
    """A case lowered and generated under one strategy (with its GPU arguments)."""

    case: Case
    kind: str
    plan: Plan
    gpu: Any  # GpuKernelPlan
    program: Any  # CudaProgram
    args: list[Any]
    hash_capacity: int = 0
    chunks: int | None = None  # cap on the chunk count (None: one row per chunk)
    atomic: bool = False  # atomic partials requested


def build(case: Case, kind: str, chunks: int | None = None,
          workspace: str = "dense", atomic: bool = False) -> Built:
    """Plan, lower and generate ``case`` under strategy ``kind`` (and row workspace,
    atomic partials)."""
    from lazysparse.kernels.backends.cuda.program import hash_capacity_for, plan_query, program_for
    from lazysparse.kernels.backends.cuda.runtime import launch_args

    p, q, env = case.split()
    gp = plan_query(q, env)
    args = launch_args(gp)
    cap = hash_capacity_for(gp, args, np)[0] if workspace == "hash" else 0
    prog = program_for(gp, kind, workspace=workspace, args=args, atomic=atomic)
    return Built(case, kind, p, gp, prog, args, cap, chunks, atomic)


_ALL: list[Built] = []
HASH_CASES = ("spgemm_f64", "spgemm_i32", "spgemm_wide")


def all_built() -> list[Built]:
    """Every case under every strategy, the SpGEMMs with hash workspaces and the
    reductions over the outer loop with atomic partials (built once)."""
    if not _ALL:
        _ALL.extend(build(c, k) for c in CASES for k in STRATEGIES)
        _ALL.extend(build(c, "thread", workspace="hash") for c in CASES
                    if c.name in HASH_CASES)
        _ALL.extend(build(b.case, "thread", atomic=True) for b in list(_ALL)
                    if b.kind == "thread" and b.gpu.partials and b.program.workspace == "dense")
    return _ALL


def dense_result(t: Any) -> np.ndarray:
    """A result tensor (host arrays, any tensor class) as a dense NumPy array."""
    host = Tensor(t.shape, t.levels, t.mode_order, t.values, t.fill_value,
                  format=t.spec.name if t.spec.name != "custom" else None)
    return np.asarray(host.to_numpy())


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal dtype and shape; values equal (NaN == NaN), floats to a tight tolerance."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if want.dtype.kind in "fc":
        tol = 1e-5 if want.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)
