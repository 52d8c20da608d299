"""Backend-neutral loop IR: a small imperative language that every kernel backend prints.

Lowering (``compile.lower``) produces a :class:`Function` made of these frozen nodes; the
Numba backend prints it as Python source and a CUDA backend can print the same tree as C.
Operator applications stay symbolic (:class:`Apply` holds the registry ``Operator``) so each
backend picks the operator's own source form. Array indices are non-negative by
construction; backends may index unsigned (see docs/kernels.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# ---------------------------------------------------------------- expressions


class Expr:
    """Base of loop-IR expressions."""

    __slots__ = ()


@dataclass(frozen=True)
class Var(Expr):
    """A scalar or array variable (kernel argument or local)."""

    name: str


@dataclass(frozen=True)
class Const(Expr):
    """A literal: an int index constant, a bool, or a scalar of a NumPy dtype (``dtype``)."""

    value: Any
    dtype: str | None = None


@dataclass(frozen=True)
class Load(Expr):
    """``array[index]`` for a 1-D array; ``index`` is never negative."""

    array: str
    index: Expr


@dataclass(frozen=True)
class Bin(Expr):
    """Index/control arithmetic: ``+ - * // < <= > >= == != and or min max``."""

    op: str
    a: Expr
    b: Expr


@dataclass(frozen=True)
class Not(Expr):
    """Logical negation of a control expression."""

    a: Expr


@dataclass(frozen=True)
class Select(Expr):
    """``a if cond else b``."""

    cond: Expr
    a: Expr
    b: Expr


@dataclass(frozen=True)
class Apply(Expr):
    """A registry operator applied to values; backends render the operator's own form."""

    op: Any
    args: tuple[Expr, ...]
    dtypes: tuple[str, ...] = ()  # operand dtypes the args were cast to (picks the form)


@dataclass(frozen=True)
class CallExpr(Expr):
    """An intrinsic returning a value; backends supply it."""

    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Cast(Expr):
    """Convert a value to a NumPy dtype (by name, e.g. ``"float64"``)."""

    dtype: str
    a: Expr


@dataclass(frozen=True)
class NumThreads(Expr):
    """The number of worker threads the backend will use (Numba: ``get_num_threads()``)."""


# ---------------------------------------------------------------- statements


class Stmt:
    """Base of loop-IR statements."""

    __slots__ = ()


@dataclass(frozen=True)
class Assign(Stmt):
    """``var = value`` (declares on first use)."""

    var: str
    value: Expr


@dataclass(frozen=True)
class Store(Stmt):
    """``array[index] = value``."""

    array: str
    index: Expr
    value: Expr


@dataclass(frozen=True)
class Alloc(Stmt):
    """``var = new 1-D array of `size` elements of `dtype`, every element `fill` (or
    uninitialized when fill is None)``."""

    var: str
    size: Expr
    dtype: str
    fill: Expr | None = None


@dataclass(frozen=True)
class Slice(Stmt):
    """``var = array[lo:hi]`` (a view; used to return trimmed or per-chunk arrays)."""

    var: str
    array: str
    lo: Expr
    hi: Expr


@dataclass(frozen=True)
class SortRange(Stmt):
    """Sort ``array[lo:hi]`` ascending in place (workspace touched lists)."""

    array: str
    lo: Expr
    hi: Expr


@dataclass(frozen=True)
class ArgSortRange(Stmt):
    """``var = stable argsort of array[lo:hi]`` (insert-sort-merge workspaces)."""

    var: str
    array: str
    lo: Expr
    hi: Expr


@dataclass(frozen=True)
class Call(Stmt):
    """An intrinsic with side effects (documented in docs/kernels.md), e.g.
    ``sort_touched(list, n, extent)``. Each backend supplies its implementation."""

    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class For(Stmt):
    """``for var in range(start, stop)``; ``parallel`` marks iterations as independent."""

    var: str
    start: Expr
    stop: Expr
    body: tuple[Stmt, ...]
    parallel: bool = False


@dataclass(frozen=True)
class While(Stmt):
    """``while cond: body``."""

    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class If(Stmt):
    """``if cond: then else: orelse``."""

    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class Comment(Stmt):
    """A comment line kept in the generated source for readers."""

    text: str


@dataclass(frozen=True)
class Return(Stmt):
    """Return a tuple of variables."""

    values: tuple[str, ...]


@dataclass(frozen=True)
class Function(Stmt):
    """A kernel: named parameters, a body, and whether it uses parallel loops."""

    name: str
    params: tuple[str, ...]
    body: tuple[Stmt, ...]
    parallel: bool = False
    notes: tuple[str, ...] = field(default=())


# ---------------------------------------------------------------- printer


def format_expr(e: Expr) -> str:
    """Readable text for an expression (backend-neutral notation)."""
    match e:
        case Var(name):
            return name
        case Const(value, dtype):
            return f"{value!r}:{dtype}" if dtype else repr(value)
        case Load(array, index):
            return f"{array}[{format_expr(index)}]"
        case Bin(op, a, b):
            if op in ("min", "max"):
                return f"{op}({format_expr(a)}, {format_expr(b)})"
            return f"({format_expr(a)} {op} {format_expr(b)})"
        case Not(a):
            return f"not {format_expr(a)}"
        case Select(c, a, b):
            return f"({format_expr(a)} if {format_expr(c)} else {format_expr(b)})"
        case Apply(op, args, _):
            name = getattr(op, "name", str(op))
            return f"{name}({', '.join(format_expr(a) for a in args)})"
        case Cast(dtype, a):
            return f"{dtype}({format_expr(a)})"
        case CallExpr(name, args):
            return f"{name}({', '.join(format_expr(a) for a in args)})"
        case NumThreads():
            return "num_threads()"
    raise TypeError(f"not a loop-IR expression: {e!r}")


def format_stmt(s: Stmt, indent: int = 0) -> list[str]:
    """Readable lines for a statement."""
    pad = "    " * indent
    match s:
        case Assign(var, value):
            return [f"{pad}{var} = {format_expr(value)}"]
        case Store(array, index, value):
            return [f"{pad}{array}[{format_expr(index)}] = {format_expr(value)}"]
        case Alloc(var, size, dtype, fill):
            f = "uninit" if fill is None else format_expr(fill)
            return [f"{pad}{var} = alloc({format_expr(size)}, {dtype}, {f})"]
        case Slice(var, array, lo, hi):
            return [f"{pad}{var} = {array}[{format_expr(lo)}:{format_expr(hi)}]"]
        case SortRange(array, lo, hi):
            return [f"{pad}sort({array}[{format_expr(lo)}:{format_expr(hi)}])"]
        case ArgSortRange(var, array, lo, hi):
            return [f"{pad}{var} = argsort({array}[{format_expr(lo)}:{format_expr(hi)}])"]
        case Call(name, args):
            return [f"{pad}{name}({', '.join(format_expr(a) for a in args)})"]
        case For(var, start, stop, body, parallel):
            kw = "parallel for" if parallel else "for"
            head = f"{pad}{kw} {var} in {format_expr(start)}:{format_expr(stop)}:"
            return [head, *format_block(body, indent + 1)]
        case While(cond, body):
            return [f"{pad}while {format_expr(cond)}:", *format_block(body, indent + 1)]
        case If(cond, then, orelse):
            out = [f"{pad}if {format_expr(cond)}:", *format_block(then, indent + 1)]
            if orelse:
                out += [f"{pad}else:", *format_block(orelse, indent + 1)]
            return out
        case Comment(text):
            return [f"{pad}# {text}"]
        case Return(values):
            return [f"{pad}return {', '.join(values)}"]
        case Function(name, params, body, parallel, notes):
            head = f"{pad}kernel {name}({', '.join(params)}){' parallel' if parallel else ''}:"
            return [head, *[f"{pad}    # {n}" for n in notes], *format_block(body, indent + 1)]
    raise TypeError(f"not a loop-IR statement: {s!r}")


def format_block(body: tuple[Stmt, ...], indent: int) -> list[str]:
    """Lines of a statement block (``pass`` when empty)."""
    lines = [ln for s in body for ln in format_stmt(s, indent)]
    return lines or ["    " * indent + "pass"]


def format_function(fn: Function) -> str:
    """The whole kernel as readable text."""
    return "\n".join(format_stmt(fn))
