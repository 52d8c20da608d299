"""Print loop-IR expressions and statements as CUDA C, with the C type of every local.

The loop IR is dynamically typed (like the Python it was first printed as); C needs each
local declared once. :func:`infer_types` walks a statement block in program order and gives
each assigned name the dtype of its first typed assignment (an untyped integer literal only
types a name nothing else types). Indices are ``long long``; values keep their NumPy dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.compile.loop_ir import (
    Alloc,
    Apply,
    ArgSortRange,
    Assign,
    Bin,
    Call,
    Cast,
    Comment,
    Const,
    Expr,
    For,
    If,
    Load,
    Not,
    NumThreads,
    Return,
    Select,
    Slice,
    SortRange,
    Stmt,
    Store,
    Var,
    While,
)
from lazysparse.logic.internal_ops import cuda_type

I64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)
_CMP = {"<", "<=", ">", ">=", "==", "!="}
_LOGIC = {"and": "&&", "or": "||"}


#: loop-IR ``Call`` intrinsics -> CUDA helpers (prelude); same arguments as on the CPU.
INTRINSICS = {"sort_touched": "ls_sort_touched"}


class CudaCodegenError(ValueError):
    """The loop IR uses something the CUDA backend cannot express."""


@dataclass(frozen=True)
class VarType:
    """A name's C type: a scalar of ``dtype`` or a pointer to ``dtype`` elements."""

    dtype: np.dtype
    pointer: bool = False

    @property
    def c(self) -> str:
        """C spelling (``double``, ``long long*``)."""
        return ctype(self.dtype) + ("*" if self.pointer else "")


def ctype(dtype: Any) -> str:
    """C type of a NumPy dtype (index arithmetic is ``long long``)."""
    return cuda_type(np.dtype(dtype))


def const_dtype(c: Const) -> np.dtype:
    """The dtype of a literal (untyped ints are int64, untyped floats float64)."""
    if c.dtype:
        return np.dtype(c.dtype)
    if isinstance(c.value, bool | np.bool_):
        return BOOL
    if isinstance(c.value, int | np.integer):
        return I64
    if isinstance(c.value, complex | np.complexfloating):
        return np.dtype(np.complex128)
    return np.dtype(np.float64)


def type_of(e: Expr, types: dict[str, VarType]) -> np.dtype:
    """The dtype of an expression given the types of the names it uses."""
    match e:
        case Var(name):
            if name not in types:
                raise CudaCodegenError(f"internal: {name!r} used before it has a type")
            return types[name].dtype
        case Const():
            return const_dtype(e)
        case Load(array, _):
            if array not in types:
                raise CudaCodegenError(f"internal: array {array!r} has no type")
            return types[array].dtype
        case Bin(op, a, b):
            if op in _CMP or op in _LOGIC:
                return BOOL
            ta, tb = type_of(a, types), type_of(b, types)
            return np.result_type(ta, tb) if ta != BOOL or tb != BOOL else I64
        case Not():
            return BOOL
        case Select(_, a, b):
            return np.result_type(type_of(a, types), type_of(b, types))
        case Apply(op, args, dtypes):
            dts = dtypes or tuple(str(type_of(a, types)) for a in args)
            return np.dtype(op.result_dtype(*(np.dtype(d) for d in dts)))
        case Cast(dtype, _):
            return np.dtype(dtype)
        case NumThreads() | HashProbe():
            return I64
    raise CudaCodegenError(f"not a loop-IR expression: {e!r}")


def infer_types(body: tuple[Stmt, ...], types: dict[str, VarType]) -> dict[str, VarType]:
    """Types of the names ``body`` assigns (``types`` holds the names already known)."""
    env = dict(types)
    local: dict[str, VarType] = {}
    weak: set[str] = set()

    def bind(name: str, vt: VarType, is_weak: bool) -> None:
        if name in types and name not in local:
            raise CudaCodegenError(f"kernel assigns {name!r}, which is one of its inputs")
        if name not in local or (name in weak and not is_weak):
            local[name] = env[name] = vt
            if is_weak:
                weak.add(name)
            else:
                weak.discard(name)

    def walk(stmts: tuple[Stmt, ...]) -> None:
        for s in stmts:
            match s:
                case Assign(var, value):
                    if isinstance(value, Var) and env.get(value.name, VarType(I64)).pointer:
                        raise CudaCodegenError("array re-binding (growable workspaces) is not "
                                               "supported by the CUDA backend")
                    bind(var, VarType(type_of(value, env)), isinstance(value, Const)
                         and not value.dtype)
                case Alloc(var, _, dtype, _):
                    bind(var, VarType(np.dtype(dtype), True), False)
                case For(var, _, _, inner, _):
                    bind(var, VarType(I64), False)
                    walk(inner)
                case While(_, inner):
                    walk(inner)
                case If(_, then, orelse):
                    walk(then)
                    walk(orelse)
                case LaneFor(var, _, _, inner):
                    bind(var, VarType(I64), False)
                    walk(inner)
                case WarpReduce(var, other, _):
                    bind(other, env[var], False)
                case LaneZero(inner):
                    walk(inner)
                case AtomicCombine():
                    pass
                case ArgSortRange() | Slice():
                    raise CudaCodegenError(
                        f"{type(s).__name__} (insert-sort-merge workspaces, sliced results) is "
                        "not supported by the CUDA backend")
                case Call(name, _):
                    if name not in INTRINSICS:
                        raise CudaCodegenError(f"loop-IR intrinsic {name!r} has no CUDA "
                                               "implementation")
                case Store() | SortRange() | Comment() | Return():
                    pass
                case _:
                    raise CudaCodegenError(f"not a loop-IR statement: {s!r}")

    walk(body)
    return local


# ---------------------------------------------------------------- expressions


def float_literal(v: float, dtype: np.dtype) -> str:
    """A C literal of a float value (NaN and infinities through bit patterns)."""
    if dtype == np.float32:
        if math.isnan(v):
            return "__int_as_float(0x7fc00000)"
        if math.isinf(v):
            return "__int_as_float(0x7f800000)" if v > 0 else "__int_as_float(0xff800000)"
        return f"{float(np.float32(v))!r}f"
    if math.isnan(v):
        return "__longlong_as_double(0x7ff8000000000000LL)"
    if math.isinf(v):
        return ("__longlong_as_double(0x7ff0000000000000LL)" if v > 0
                else "__longlong_as_double(0xfff0000000000000LL)")
    return repr(float(v))


def literal(value: Any, dtype: np.dtype) -> str:
    """C source of a constant of ``dtype``."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return "true" if bool(value) else "false"
    if dtype.kind == "c":
        z = complex(value)
        real = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        return (f"{ctype(dtype)}({float_literal(z.real, real)}, "
                f"{float_literal(z.imag, real)})")
    if dtype.kind == "f":
        return f"{ctype(dtype)}({float_literal(float(value), dtype)})"
    v = int(value)
    if dtype == I64:
        return f"{v}LL" if v != -(2**63) else "(-9223372036854775807LL - 1)"
    if dtype == np.uint64:
        return f"{v}ULL"
    return f"(({ctype(dtype)}){v}LL)"


def cast_src(src: str, frm: np.dtype, to: np.dtype) -> str:
    """C source converting a value of dtype ``frm`` to ``to`` with NumPy semantics."""
    if frm == to:
        return src
    if to.kind == "b":
        return f"ls_nonzero({src})"
    if frm.kind == "c" and to.kind != "c":
        return f"static_cast<{ctype(to)}>(({src}).real())"
    if to.kind == "c":
        real = "float" if to == np.complex64 else "double"
        if frm.kind == "c":
            return f"{ctype(to)}(({src}).real(), ({src}).imag())"
        return f"{ctype(to)}(static_cast<{real}>({src}))"
    return f"static_cast<{ctype(to)}>({src})"


def narrow(src: str, dtype: np.dtype) -> str:
    """``src`` as ``dtype`` when C's integer promotion would widen it: arithmetic on
    8/16-bit integers yields ``int`` in C but keeps (and wraps in) its dtype in NumPy; the
    wide value would also make overloaded helpers (``ls_minimum(signed char, int)``)
    ambiguous."""
    if dtype.kind in "iu" and dtype.itemsize < 4:
        return f"static_cast<{ctype(dtype)}>({src})"
    return src


def expr_c(e: Expr, types: dict[str, VarType]) -> str:
    """CUDA C source of an expression."""
    match e:
        case Var(name):
            return name
        case Const(value, _):
            return literal(value, const_dtype(e))
        case Load(array, index):
            return f"{array}[{expr_c(index, types)}]"
        case Bin(op, a, b):
            sa, sb = expr_c(a, types), expr_c(b, types)
            if op in ("min", "max"):
                cmp = "<" if op == "min" else ">"
                return f"(({sa}) {cmp} ({sb}) ? ({sa}) : ({sb}))"
            if op in _LOGIC:
                return f"({sa} {_LOGIC[op]} {sb})"
            if op == "//":
                return narrow(f"({sa} / {sb})", type_of(e, types))  # indices are >= 0
            return narrow(f"({sa} {op} {sb})", type_of(e, types))
        case Not(a):
            return f"(!{expr_c(a, types)})"
        case Select(c, a, b):
            t = type_of(e, types)
            sa = cast_src(expr_c(a, types), type_of(a, types), t)
            sb = cast_src(expr_c(b, types), type_of(b, types), t)
            return f"({expr_c(c, types)} ? {sa} : {sb})"
        case Apply(op, args, dtypes):
            dts = tuple(np.dtype(d) for d in dtypes) or tuple(type_of(a, types) for a in args)
            srcs = [cast_src(expr_c(a, types), type_of(a, types), d)
                    for a, d in zip(args, dts, strict=True)]
            return narrow("(" + op.cuda_expr(srcs, dts) + ")", type_of(e, types))
        case Cast(dtype, a):
            return cast_src(expr_c(a, types), type_of(a, types), np.dtype(dtype))
        case NumThreads():
            return "ls_nworkers"
        case HashProbe(keys, cap, key):
            return f"ls_hash_probe({keys}, {expr_c(cap, types)}, {expr_c(key, types)})"
    raise CudaCodegenError(f"not a loop-IR expression: {e!r}")


# ---------------------------------------------------------------- statements


class StmtPrinter:
    """Prints statements of one kernel body; ``pools`` maps in-kernel allocations to the
    per-worker slices the host allocated for them."""

    def __init__(self, types: dict[str, VarType], sizes: dict[str, Expr] | None = None) -> None:
        self.types = types
        self.sizes = sizes or {}  # element counts of in-kernel allocations
        self.counter = 0

    def expr(self, e: Expr) -> str:
        return expr_c(e, self.types)

    def block(self, body: tuple[Stmt, ...], ind: int) -> list[str]:
        return [ln for s in body for ln in self.stmt(s, ind)]

    def stmt(self, s: Stmt, ind: int) -> list[str]:
        pad = "  " * ind
        match s:
            case Assign(var, value):
                src = cast_src(self.expr(value), type_of(value, self.types),
                               self.types[var].dtype)
                return [f"{pad}{var} = {src};"]
            case Store(array, index, value):
                src = cast_src(self.expr(value), type_of(value, self.types),
                               self.types[array].dtype)
                return [f"{pad}{array}[{self.expr(index)}] = {src};"]
            case Alloc(var, _, _, _):
                # in-kernel allocations are per-worker pool slices bound at kernel entry
                return [f"{pad}// {var}: per-worker workspace (bound at kernel entry)"]
            case SortRange(array, lo, hi):
                return [f"{pad}ls_sort_range({array}, {self.expr(lo)}, {self.expr(hi)});"]
            case Call(name, args):
                if name not in INTRINSICS:
                    raise CudaCodegenError(f"loop-IR intrinsic {name!r} has no CUDA helper")
                srcs = [self.expr(a) for a in args]
                return [f"{pad}{INTRINSICS[name]}({', '.join(srcs)});"]
            case For(var, start, stop, body, _):
                self.counter += 1
                end = f"{var}_end{self.counter}"
                return [f"{pad}{{",
                        f"{pad}  const ls_i64 {end} = {self.expr(stop)};",
                        f"{pad}  for ({var} = {self.expr(start)}; {var} < {end}; ++{var}) {{",
                        *self.block(body, ind + 2), f"{pad}  }}", f"{pad}}}"]
            case While(cond, body):
                return [f"{pad}while ({self.expr(cond)}) {{", *self.block(body, ind + 1),
                        f"{pad}}}"]
            case If(cond, then, orelse):
                out = [f"{pad}if ({self.expr(cond)}) {{", *self.block(then, ind + 1)]
                if orelse:
                    out += [f"{pad}}} else {{", *self.block(orelse, ind + 1)]
                return [*out, f"{pad}}}"]
            case Comment(text):
                return [f"{pad}// {text}"]
        raise CudaCodegenError(f"{type(s).__name__} cannot appear inside a CUDA kernel")


# ---------------------------------------------------------------- CUDA-only nodes
# (produced by :mod:`backends.cuda.strategies` / :mod:`backends.cuda.workspaces` rewrites of
# the loop IR; never by lowering)


@dataclass(frozen=True)
class HashProbe(Expr):
    """The slot of ``key`` in the open-addressing table ``keys`` (capacity ``cap``, a power
    of two, empty slots -1): where it is stored, else the empty slot it would take."""

    keys: str
    cap: Expr
    key: Expr


# ---------------------------------------------------------------- CUDA-only statements
# (produced by :mod:`backends.cuda.strategies` rewrites of the loop IR; never by lowering)


@dataclass(frozen=True)
class LaneFor(Stmt):
    """``for var in range(start + lane, stop, 32)``: a loop split across a warp's lanes."""

    var: str
    start: Expr
    stop: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class WarpReduce(Stmt):
    """Combine ``var`` across the warp's lanes (tree of shuffles); lane 0 holds the result.
    ``combine`` is the reduction over ``Var(var)`` and ``Var(other)``."""

    var: str
    other: str
    combine: Expr


@dataclass(frozen=True)
class LaneZero(Stmt):
    """``if lane == 0: body`` (the warp's single write)."""

    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class AtomicCombine(Stmt):
    """``array[index] = combine(array[index], value)`` atomically, via the named helper."""

    helper: str
    array: str
    index: Expr
    value: Expr


class CudaStmtPrinter(StmtPrinter):
    """:class:`StmtPrinter` plus the CUDA-only statements above."""

    def stmt(self, s: Stmt, ind: int) -> list[str]:
        pad = "  " * ind
        match s:
            case LaneFor(var, start, stop, body):
                self.counter += 1
                end = f"{var}_end{self.counter}"
                return [f"{pad}{{",
                        f"{pad}  const ls_i64 {end} = {self.expr(stop)};",
                        f"{pad}  for ({var} = {self.expr(start)} + ls_lane; {var} < {end}; "
                        f"{var} += 32) {{",
                        *self.block(body, ind + 2), f"{pad}  }}", f"{pad}}}"]
            case WarpReduce(var, other, combine):
                return [f"{pad}for (int ls_d = 16; ls_d > 0; ls_d >>= 1) {{",
                        f"{pad}  {other} = ls_shfl_down({var}, ls_d);",
                        f"{pad}  {var} = {cast_src(self.expr(combine), type_of(combine, self.types), self.types[var].dtype)};",  # noqa: E501
                        f"{pad}}}"]
            case LaneZero(body):
                return [f"{pad}if (ls_lane == 0) {{", *self.block(body, ind + 1), f"{pad}}}"]
            case AtomicCombine(helper, array, index, value):
                src = cast_src(self.expr(value), type_of(value, self.types),
                               self.types[array].dtype)
                return [f"{pad}{helper}(&{array}[{self.expr(index)}], {src});"]
        return super().stmt(s, ind)
