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

from lazysparse.kernels.compile.ir.loop_ir import (
    Alloc,
    Apply,
    ArgSortRange,
    Assign,
    Bin,
    BinOp,
    Call,
    Cast,
    Comment,
    Const,
    Expr,
    For,
    If,
    Intrinsic,
    Load,
    LoopPrinter,
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
    statements,
)
from lazysparse.logic.internal_ops import cuda_type

I64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)
#: C spellings of the loop-IR operators that C spells differently from Python (``//``: the
#: loop IR divides non-negative indices only, where C's truncation is floor division)
C_OPS = {BinOp.AND: "&&", BinOp.OR: "||", BinOp.FLOORDIV: "/"}


#: loop-IR ``Call`` intrinsics -> CUDA helpers (prelude); same arguments as on the CPU.
INTRINSICS = {Intrinsic.SORT_TOUCHED: "ls_sort_touched"}


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
            if op.is_comparison or op.is_logical:
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


class _Inference:
    """Types of the names a block assigns, in program order (``known``: typed already)."""

    def __init__(self, known: dict[str, VarType]) -> None:
        self.known = known
        self.env = dict(known)
        self.local: dict[str, VarType] = {}
        self.weak: set[str] = set()  # typed by an untyped integer literal only

    def bind(self, name: str, vt: VarType, is_weak: bool = False) -> None:
        if name in self.known and name not in self.local:
            raise CudaCodegenError(f"kernel assigns {name!r}, which is one of its inputs")
        if name not in self.local or (name in self.weak and not is_weak):
            self.local[name] = self.env[name] = vt
            if is_weak:
                self.weak.add(name)
            else:
                self.weak.discard(name)

    def visit(self, s: Stmt) -> None:
        """Bind what ``s`` itself assigns (its blocks come next in the walk)."""
        match s:
            case Assign(var, value):
                if isinstance(value, Var) and self.env.get(value.name, VarType(I64)).pointer:
                    raise CudaCodegenError("array re-binding (growable workspaces) is not "
                                           "supported by the CUDA backend")
                self.bind(var, VarType(type_of(value, self.env)),
                          isinstance(value, Const) and not value.dtype)
            case Alloc(var, _, dtype, _):
                self.bind(var, VarType(np.dtype(dtype), True))
            case For(var) | LaneFor(var):
                self.bind(var, VarType(I64))
            case WarpReduce(var, other, _):
                self.bind(other, self.env[var])
            case ArgSortRange() | Slice():
                raise CudaCodegenError(
                    f"{type(s).__name__} (insert-sort-merge workspaces, sliced results) is "
                    "not supported by the CUDA backend")
            case Call(name, _) if name not in INTRINSICS:
                raise CudaCodegenError(f"loop-IR intrinsic {name!r} has no CUDA "
                                       "implementation")
            case (While() | If() | LaneZero() | AtomicCombine() | Call() | Store()
                  | SortRange() | Comment() | Return()):
                pass
            case _:
                raise CudaCodegenError(f"not a loop-IR statement: {s!r}")


def infer_types(body: tuple[Stmt, ...], types: dict[str, VarType]) -> dict[str, VarType]:
    """Types of the names ``body`` assigns (``types`` holds the names already known)."""
    inf = _Inference(types)
    for s in statements(body):
        inf.visit(s)
    return inf.local


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
    return CudaPrinter(types).expr(e)


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


class CudaPrinter(LoopPrinter):
    """The loop IR as CUDA C: typed locals (``types``), casts with NumPy semantics,
    braces, and the CUDA-only statements above. In-kernel allocations are per-worker pool
    slices bound at kernel entry (``sizes``: their element counts)."""

    indent = "  "
    comment_mark = "//"
    end = ";"
    empty_block = None
    block_end = "}"

    def __init__(self, types: dict[str, VarType], sizes: dict[str, Expr] | None = None) -> None:
        self.types = types
        self.sizes = sizes or {}  # element counts of in-kernel allocations
        self.counter = 0

    # ------------------------------------------------------------ statements

    def head(self, keyword: str, cond: Expr) -> str:
        return f"{keyword} ({self.expr(cond)}) {{"

    def else_line(self) -> str:
        return "} else {"

    def stored(self, value: Expr, target: str) -> str:
        return cast_src(self.expr(value), type_of(value, self.types), self.types[target].dtype)

    def intrinsic(self, name: Intrinsic) -> str:
        if name not in INTRINSICS:
            raise CudaCodegenError(f"loop-IR intrinsic {name!r} has no CUDA helper")
        return INTRINSICS[name]

    def alloc(self, s: Alloc) -> list[str]:
        return [f"// {s.var}: per-worker workspace (bound at kernel entry)"]

    def slice_view(self, s: Slice) -> list[str]:
        return self.unsupported(s)

    def sort_range(self, s: SortRange) -> list[str]:
        return [f"ls_sort_range({s.array}, {self.expr(s.lo)}, {self.expr(s.hi)});"]

    def counted(self, var: str, start: str, stop: Expr, step: str, body: tuple[Stmt, ...],
                ind: int) -> list[str]:
        """``for (var = start; var < stop; step)`` with the bound evaluated once."""
        pad, one = self.indent * ind, self.indent
        self.counter += 1
        end = f"{var}_end{self.counter}"
        return [f"{pad}{{", f"{pad}{one}const ls_i64 {end} = {self.expr(stop)};",
                f"{pad}{one}for ({var} = {start}; {var} < {end}; {step}) {{",
                *self.block(body, ind + 2), f"{pad}{one}}}", f"{pad}}}"]

    def for_loop(self, s: For, ind: int) -> list[str]:
        return self.counted(s.var, self.expr(s.start), s.stop, f"++{s.var}", s.body, ind)

    def stmt(self, s: Stmt, ind: int) -> list[str]:
        match s:
            case LaneFor(var, start, stop, body):
                return self.counted(var, f"{self.expr(start)} + ls_lane", stop, f"{var} += 32",
                                    body, ind)
            case LaneZero(body):
                return self.nested("if (ls_lane == 0) {", body, ind)
        return super().stmt(s, ind)

    def other_stmt(self, s: Stmt) -> list[str]:
        match s:
            case WarpReduce(var, other, combine):
                return ["for (int ls_d = 16; ls_d > 0; ls_d >>= 1) {",
                        f"  {other} = ls_shfl_down({var}, ls_d);",
                        f"  {var} = {self.stored(combine, var)};", "}"]
            case AtomicCombine(helper, array, index, value):
                return [f"{helper}(&{array}[{self.expr(index)}], {self.stored(value, array)});"]
        return self.unsupported(s)

    def unsupported(self, s: Stmt) -> list[str]:
        raise CudaCodegenError(f"{type(s).__name__} cannot appear inside a CUDA kernel")

    # ------------------------------------------------------------ expressions

    def const(self, c: Const) -> str:
        return literal(c.value, const_dtype(c))

    def binary(self, e: Bin) -> str:
        sa, sb = self.expr(e.a), self.expr(e.b)
        if e.op.is_call:
            cmp = "<" if e.op is BinOp.MIN else ">"
            return f"(({sa}) {cmp} ({sb}) ? ({sa}) : ({sb}))"
        src = f"({sa} {C_OPS.get(e.op, e.op)} {sb})"
        return src if e.op.is_logical else narrow(src, type_of(e, self.types))

    def negate(self, a: Expr) -> str:
        return f"(!{self.expr(a)})"

    def select(self, e: Select) -> str:
        t = type_of(e, self.types)
        sa = cast_src(self.expr(e.a), type_of(e.a, self.types), t)
        sb = cast_src(self.expr(e.b), type_of(e.b, self.types), t)
        return f"({self.expr(e.cond)} ? {sa} : {sb})"

    def apply(self, e: Apply) -> str:
        dts = (tuple(np.dtype(d) for d in e.dtypes)
               or tuple(type_of(a, self.types) for a in e.args))
        srcs = [cast_src(self.expr(a), type_of(a, self.types), d)
                for a, d in zip(e.args, dts, strict=True)]
        return narrow("(" + e.op.cuda_expr(srcs, dts) + ")", type_of(e, self.types))

    def cast(self, e: Cast) -> str:
        return cast_src(self.expr(e.a), type_of(e.a, self.types), np.dtype(e.dtype))

    def num_threads(self) -> str:
        return "ls_nworkers"

    def other_expr(self, e: Expr) -> str:
        if isinstance(e, HashProbe):
            return (f"ls_hash_probe({e.keys}, {self.expr(e.cap)}, "
                    f"{self.expr(e.key)})")
        raise CudaCodegenError(f"not a loop-IR expression: {e!r}")
