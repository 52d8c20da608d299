"""Backend-neutral loop IR: a small imperative language that every kernel backend prints.

Lowering (``compile.lowering.kernel``) produces a :class:`Function` made of these frozen nodes; the
Numba backend prints it as Python source and a CUDA backend can print the same tree as C.
Operator applications stay symbolic (:class:`Apply` holds the registry ``Operator``) so each
backend picks the operator's own source form. Array indices are non-negative by
construction; backends may index unsigned (see docs/kernels.md).

One generic traversal serves every pass: :func:`children` / :func:`walk` read a tree,
:func:`map_children`, :func:`transform` and :func:`map_blocks` rebuild it. One printer base,
:class:`LoopPrinter`, holds the statement structure (blocks, indentation, ``if``/``else``);
each dialect (the readable text here, Numba's Python, CUDA C) overrides its hooks.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from functools import cache
from typing import Any, TypeVar


class BinOp(StrEnum):
    """Binary operators of index/control arithmetic; the value is the Python spelling
    (the readable text and the Numba dialect print it as is, other dialects map it)."""

    ADD = "+"
    SUB = "-"
    MUL = "*"
    FLOORDIV = "//"
    MOD = "%"
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    EQ = "=="
    NE = "!="
    AND = "and"
    OR = "or"
    MIN = "min"
    MAX = "max"

    def __repr__(self) -> str:
        return repr(self.value)  # reads like the spelled operator in node reprs

    @property
    def is_comparison(self) -> bool:
        """``< <= > >= == !=``: a bool result from two values."""
        return self in _COMPARISONS

    @property
    def is_logical(self) -> bool:
        """``and`` / ``or`` over bools."""
        return self in (BinOp.AND, BinOp.OR)

    @property
    def is_call(self) -> bool:
        """``min`` / ``max``: printed as a function call in Python."""
        return self in (BinOp.MIN, BinOp.MAX)

    def evaluate(self, x: Any, y: Any) -> Any:
        """The operator on two Python values (host-side sizes and counts)."""
        return _EVAL[self](x, y)


_COMPARISONS = frozenset({BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE, BinOp.EQ, BinOp.NE})
_EVAL: dict[BinOp, Callable[[Any, Any], Any]] = {
    BinOp.ADD: operator.add, BinOp.SUB: operator.sub, BinOp.MUL: operator.mul,
    BinOp.FLOORDIV: operator.floordiv, BinOp.MOD: operator.mod, BinOp.LT: operator.lt,
    BinOp.LE: operator.le, BinOp.GT: operator.gt, BinOp.GE: operator.ge,
    BinOp.EQ: operator.eq, BinOp.NE: operator.ne,
    BinOp.AND: lambda x, y: bool(x) and bool(y), BinOp.OR: lambda x, y: bool(x) or bool(y),
    BinOp.MIN: min, BinOp.MAX: max}


class Intrinsic(StrEnum):
    """Backend-supplied helpers that :class:`Call` and :class:`CallExpr` name (the value is
    the helper's name in the Numba support module; docs/kernels.md describes each)."""

    SORT_TOUCHED = "sort_touched"  # sort a touched list (counting sort or sort)
    WS_PROBE = "ws_probe"  # the slot of a key in a hash workspace
    HASHED_LOCATE_SHIFT = "hashed_locate_shift"  # the shift of a hashed level's table

    def __repr__(self) -> str:
        return repr(self.value)


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
    """Index/control arithmetic (:class:`BinOp`; its spelling is accepted too)."""

    op: BinOp
    a: Expr
    b: Expr

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", BinOp(self.op))  # validates a spelled operator


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

    name: Intrinsic
    args: tuple[Expr, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", Intrinsic(self.name))


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

    name: Intrinsic
    args: tuple[Expr, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", Intrinsic(self.name))


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




# ---------------------------------------------------------------- generic traversal

Node = Expr | Stmt
N = TypeVar("N", Expr, Stmt)


_NODE_TYPES = ("Expr", "Stmt", "Node")


@cache
def _child_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """The fields of a node class that hold children, and whether each is a tuple: those
    annotated with a node type (``Expr``, ``Stmt | None``, ``tuple[Stmt, ...]``); a backend's
    own node classes follow the same rule."""
    out = []
    for f in fields(cls):
        ann = f.type if isinstance(f.type, str) else repr(f.type)
        if any(t in ann for t in _NODE_TYPES):
            out.append((f.name, ann.startswith("tuple")))
    return tuple(out)


def _is_node(x: object) -> bool:
    return isinstance(x, Expr | Stmt)


def _kids(node: Node) -> list[Node]:
    out: list[Node] = []
    for name, many in _child_fields(type(node)):
        v = getattr(node, name)
        if many:
            out.extend(v)
        elif v is not None:
            out.append(v)
    return out


def children(node: Node) -> Iterator[Node]:
    """The direct sub-expressions and sub-statements of ``node``, in field order (the fields
    annotated with a node type; backend-specific nodes follow the same rule)."""
    return iter(_kids(node))


def walk(roots: Node | Iterable[Node]) -> Iterator[Node]:
    """Every node of ``roots`` (a node or a block) and below, in pre-order (program order
    for statements: a loop before its body, ``then`` before ``orelse``)."""
    stack = [roots] if _is_node(roots) else list(roots)[::-1]  # type: ignore[list-item]
    while stack:
        n = stack.pop()
        yield n
        kids = _kids(n)
        if kids:
            kids.reverse()
            stack.extend(kids)


@cache
def _block_fields(cls: type) -> tuple[str, ...]:
    """The fields of a statement class that hold statement blocks."""
    return tuple(f.name for f in fields(cls)
                 if "Stmt" in (f.type if isinstance(f.type, str) else repr(f.type)))


def statements(body: Iterable[Stmt]) -> Iterator[Stmt]:
    """Every statement of a block and of the blocks nested in it, in program order (as
    :func:`walk`, without descending into expressions)."""
    stack = list(body)[::-1]
    while stack:
        s = stack.pop()
        yield s
        for name in reversed(_block_fields(type(s))):
            stack.extend(reversed(getattr(s, name)))


def map_children(node: N, fn: Callable[[Any], Any]) -> N:
    """``node`` with ``fn`` applied to each direct child (rebuilt only where one changed)."""
    changes: dict[str, Any] = {}
    for name, many in _child_fields(type(node)):
        v = getattr(node, name)
        if v is None:
            continue
        if many:
            new = tuple(fn(x) for x in v)
            if all(a is b for a, b in zip(new, v, strict=True)):
                continue
        else:
            new = fn(v)
        if new is not v:
            changes[name] = new
    return replace(node, **changes) if changes else node  # type: ignore[type-var]


def transform(node: N, fn: Callable[[Any], Any]) -> N:
    """Bottom-up rewrite: ``fn`` sees each node after its children were rewritten and
    returns the node to keep (itself where nothing changes)."""
    return fn(map_children(node, lambda c: transform(c, fn)))  # type: ignore[no-any-return]


def transform_block(body: tuple[Stmt, ...], fn: Callable[[Any], Any]) -> tuple[Stmt, ...]:
    """:func:`transform` over each statement of a block."""
    return tuple(transform(s, fn) for s in body)


def map_blocks(stmt: Stmt, fn: Callable[[tuple[Stmt, ...]], tuple[Stmt, ...]]) -> Stmt:
    """``stmt`` with ``fn`` applied to each statement block it holds (loop bodies, both
    branches of an ``If``): for rewrites that turn one statement into several."""
    changes: dict[str, Any] = {}
    for name, many in _child_fields(type(stmt)):
        v = getattr(stmt, name)
        if many and v and all(isinstance(x, Stmt) for x in v):
            new = fn(v)
            if new != v:
                changes[name] = tuple(new)
    return replace(stmt, **changes) if changes else stmt  # type: ignore[type-var]


# ---------------------------------------------------------------- printers


class LoopPrinter:
    """The statement structure every printer of the loop IR shares: blocks, indentation,
    ``if``/``else``/``while``, comments, and one dispatch over the node classes. The defaults
    print Python-like syntax; a dialect overrides the hooks where its syntax differs
    (expressions, types, loops, block delimiters, intrinsics). Backend-specific nodes are
    handled by overriding :meth:`other_stmt` / :meth:`other_expr`."""

    indent = "    "
    comment_mark = "#"
    end = ""  # statement terminator
    empty_block: str | None = "pass"  # the line of an empty block (None: no line)
    block_end: str | None = None  # the line closing a block (C: ``}``)

    # ------------------------------------------------------------ structure

    def block(self, body: tuple[Stmt, ...], ind: int) -> list[str]:
        """Lines of a block at depth ``ind``."""
        lines = [ln for s in body for ln in self.stmt(s, ind)]
        if not lines and self.empty_block is not None:
            return [self.indent * ind + self.empty_block]
        return lines

    def nested(self, head: str, body: tuple[Stmt, ...], ind: int) -> list[str]:
        """``head`` (opening a block), the block one deeper, and the block's end."""
        pad = self.indent * ind
        return [pad + head, *self.block(body, ind + 1), *self.close(ind)]

    def close(self, ind: int) -> list[str]:
        """The line closing a block at depth ``ind`` (none in Python)."""
        return [] if self.block_end is None else [self.indent * ind + self.block_end]

    def stmt(self, s: Stmt, ind: int) -> list[str]:
        """Lines of one statement at depth ``ind``."""
        pad = self.indent * ind
        match s:
            case For():
                return self.for_loop(s, ind)
            case While(cond, body):
                return self.nested(self.head("while", cond), body, ind)
            case If(cond, then, orelse):
                out = [pad + self.head("if", cond), *self.block(then, ind + 1)]
                if orelse:
                    out += [pad + self.else_line(), *self.block(orelse, ind + 1)]
                return [*out, *self.close(ind)]
            case Function():
                return self.function(s, ind)
            case Comment(text):
                return [f"{pad}{self.comment_mark} {text}"]
        return [pad + ln for ln in self.simple(s)]

    def simple(self, s: Stmt) -> list[str]:
        """Lines (relative to the statement's depth) of a statement without a block."""
        match s:
            case Assign(var, value):
                return [f"{var} = {self.stored(value, var)}{self.end}"]
            case Store(array, index, value):
                return [f"{array}[{self.index(index)}] = {self.stored(value, array)}{self.end}"]
            case Alloc():
                return self.alloc(s)
            case Slice():
                return self.slice_view(s)
            case SortRange():
                return self.sort_range(s)
            case ArgSortRange():
                return self.argsort_range(s)
            case Call(name, args):
                return [f"{self.intrinsic(name)}({self.args(args)}){self.end}"]
            case Return(values):
                return self.ret(values)
        return self.other_stmt(s)

    # ------------------------------------------------------------ statement hooks

    def head(self, keyword: str, cond: Expr) -> str:
        """The line opening an ``if`` / ``while`` block."""
        return f"{keyword} {self.expr(cond)}:"

    def else_line(self) -> str:
        """The line between an ``if``'s two branches."""
        return "else:"

    def for_loop(self, s: For, ind: int) -> list[str]:
        """A counted loop (Python: ``for v in range(a, b):``)."""
        return self.nested(f"for {s.var} in range({self.expr(s.start)}, {self.expr(s.stop)}):",
                           s.body, ind)

    def stored(self, value: Expr, target: str) -> str:
        """``value`` as written into the name or array ``target``."""
        return self.expr(value)

    def index(self, e: Expr) -> str:
        """An array index."""
        return self.expr(e)

    def intrinsic(self, name: Intrinsic) -> str:
        """The callable a :class:`Call` / :class:`CallExpr` names."""
        return str(name)

    def args(self, args: tuple[Expr, ...]) -> str:
        """Comma-separated arguments."""
        return ", ".join(self.expr(a) for a in args)

    def alloc(self, s: Alloc) -> list[str]:
        """A new array (default: unsupported)."""
        return self.unsupported(s)

    def slice_view(self, s: Slice) -> list[str]:
        """A view of part of an array (Python slice syntax)."""
        return [f"{s.var} = {s.array}[{self.expr(s.lo)}:{self.expr(s.hi)}]"]

    def sort_range(self, s: SortRange) -> list[str]:
        """Sort part of an array in place (default: unsupported)."""
        return self.unsupported(s)

    def argsort_range(self, s: ArgSortRange) -> list[str]:
        """Stable argsort of part of an array (default: unsupported)."""
        return self.unsupported(s)

    def ret(self, values: tuple[str, ...]) -> list[str]:
        """Return the named results (default: unsupported)."""
        return self.unsupported(Return(values))

    def function(self, fn: Function, ind: int) -> list[str]:
        """A whole kernel (default: unsupported)."""
        return self.unsupported(fn)

    def other_stmt(self, s: Stmt) -> list[str]:
        """A statement this base does not know (a backend's own nodes)."""
        return self.unsupported(s)

    def unsupported(self, s: Stmt) -> list[str]:
        """Raise: the dialect cannot print ``s``."""
        raise TypeError(f"not a loop-IR statement: {s!r}")

    # ------------------------------------------------------------ expressions

    def expr(self, e: Expr) -> str:
        """Source of an expression."""
        match e:
            case Var(name):
                return name
            case Const():
                return self.const(e)
            case Load(array, index):
                return f"{array}[{self.index(index)}]"
            case Bin():
                return self.binary(e)
            case Not(a):
                return self.negate(a)
            case Select():
                return self.select(e)
            case Apply():
                return self.apply(e)
            case Cast():
                return self.cast(e)
            case CallExpr(name, args):
                return f"{self.intrinsic(name)}({self.args(args)})"
            case NumThreads():
                return self.num_threads()
        return self.other_expr(e)

    def const(self, c: Const) -> str:
        """A literal."""
        return repr(c.value)

    def binary(self, e: Bin) -> str:
        """A binary operation (Python syntax: the operator's value)."""
        a, b = self.expr(e.a), self.expr(e.b)
        return f"{e.op}({a}, {b})" if e.op.is_call else f"({a} {e.op} {b})"

    def negate(self, a: Expr) -> str:
        """Logical negation."""
        return f"(not {self.expr(a)})"

    def select(self, e: Select) -> str:
        """``a if cond else b``."""
        return f"({self.expr(e.a)} if {self.expr(e.cond)} else {self.expr(e.b)})"

    def apply(self, e: Apply) -> str:
        """A registry operator applied to values."""
        return f"{getattr(e.op, 'name', str(e.op))}({self.args(e.args)})"

    def cast(self, e: Cast) -> str:
        """A conversion to a dtype."""
        return f"{e.dtype}({self.expr(e.a)})"

    def num_threads(self) -> str:
        """The worker count."""
        return "num_threads()"

    def other_expr(self, e: Expr) -> str:
        """An expression this base does not know (a backend's own nodes)."""
        raise TypeError(f"not a loop-IR expression: {e!r}")


class TextPrinter(LoopPrinter):
    """The backend-neutral readable text of the loop IR (``xp.explain``, kernel keys)."""

    def const(self, c: Const) -> str:
        return f"{c.value!r}:{c.dtype}" if c.dtype else repr(c.value)

    def negate(self, a: Expr) -> str:
        return f"not {self.expr(a)}"

    def for_loop(self, s: For, ind: int) -> list[str]:
        kw = "parallel for" if s.parallel else "for"
        return self.nested(f"{kw} {s.var} in {self.expr(s.start)}:{self.expr(s.stop)}:",
                           s.body, ind)

    def alloc(self, s: Alloc) -> list[str]:
        f = "uninit" if s.fill is None else self.expr(s.fill)
        return [f"{s.var} = alloc({self.expr(s.size)}, {s.dtype}, {f})"]

    def sort_range(self, s: SortRange) -> list[str]:
        return [f"sort({s.array}[{self.expr(s.lo)}:{self.expr(s.hi)}])"]

    def argsort_range(self, s: ArgSortRange) -> list[str]:
        return [f"{s.var} = argsort({s.array}[{self.expr(s.lo)}:{self.expr(s.hi)}])"]

    def ret(self, values: tuple[str, ...]) -> list[str]:
        return [f"return {', '.join(values)}"]

    def function(self, fn: Function, ind: int) -> list[str]:
        pad = self.indent * ind
        par = " parallel" if fn.parallel else ""
        head = f"{pad}kernel {fn.name}({', '.join(fn.params)}){par}:"
        return [head, *[f"{pad}    # {n}" for n in fn.notes], *self.block(fn.body, ind + 1)]


_TEXT = TextPrinter()


def format_expr(e: Expr) -> str:
    """Readable text for an expression (backend-neutral notation)."""
    return _TEXT.expr(e)


def format_stmt(s: Stmt, indent: int = 0) -> list[str]:
    """Readable lines for a statement."""
    return _TEXT.stmt(s, indent)


def format_block(body: tuple[Stmt, ...], indent: int) -> list[str]:
    """Lines of a statement block (``pass`` when empty)."""
    return _TEXT.block(body, indent)


def format_function(fn: Function) -> str:
    """The whole kernel as readable text."""
    return "\n".join(_TEXT.stmt(fn, 0))
