"""Print a loop-IR :class:`Function` as a readable Python module compiled by Numba.

Array indices are cast to unsigned (``_u(i)``) so Numba emits no negative-index wraparound
checks (signed indexing costs 2-5x on a large SpMV). Parallel loops become ``prange``;
the thread count follows Numba's settings (``get_num_threads()``).
"""

from __future__ import annotations

import cmath
import math
from dataclasses import replace
from typing import Any

import numpy as np

from lazysparse.backends.numba import ops as lsops
from lazysparse.compile.loop_ir import (
    Alloc,
    Apply,
    ArgSortRange,
    Assign,
    Bin,
    Call,
    CallExpr,
    Cast,
    Comment,
    Const,
    Expr,
    For,
    Function,
    If,
    Load,
    Not,
    Return,
    Select,
    Slice,
    SortRange,
    Stmt,
    Store,
    Var,
    While,
)

HEADER = '''"""lazysparse generated kernel (Numba). Structure key: {key}"""
import cmath
import math

import numpy as np
from numba import njit

from lazysparse.backends.numba import support as lsk
from lazysparse.backends.numba import ops as lsops

_u = np.uint64
'''

_NP = {"bool": "np.bool_"}

# the names operator Numba forms may use (``logic.operators``: ``np``, ``math``, ``cmath``, and
# ``lsops`` = this backend's operator helpers, :mod:`backends.numba.ops`)
NUMBA_GLOBALS: dict[str, Any] = {"np": np, "math": math, "cmath": cmath, "lsops": lsops}


def np_type(dtype: str) -> str:
    """NumPy constructor name for a dtype name (``np.float64``, ``np.bool_``); ``"index"``
    is the output index dtype, taken from the ``iproto`` argument."""
    if dtype == "index":
        return "iproto.dtype"
    name = np.dtype(dtype).name
    return _NP.get(name, f"np.{name}")


def expr_src(e: Expr, types: dict[str, str] | None = None) -> str:
    """Python source of an expression."""
    match e:
        case Var(name):
            return name
        case Const(value, dtype):
            if dtype:
                return f"{np_type(dtype)}({value!r})"
            return repr(value)
        case Load(array, index):
            return f"{array}[{_index(index)}]"
        case Bin(op, a, b):
            if op in ("min", "max"):
                return f"{op}({expr_src(a)}, {expr_src(b)})"
            return f"({expr_src(a)} {op} {expr_src(b)})"
        case Not(a):
            return f"(not {expr_src(a)})"
        case Select(c, a, b):
            return f"({expr_src(a)} if {expr_src(c)} else {expr_src(b)})"
        case Apply(op, args, dtypes):
            return "(" + op.numba_expr(tuple(expr_src(a) for a in args),
                                       tuple(np.dtype(d) for d in dtypes)) + ")"
        case Cast(dtype, a):
            inner = expr_src(a)
            if isinstance(a, Cast) and a.dtype == dtype:
                return inner
            if np.dtype(dtype).kind == "b":
                return f"({inner} != 0)" if not _is_boolish(a) else inner
            return f"{np_type(dtype)}({inner})"
        case CallExpr(name, args):
            return f"lsk.{name}({', '.join(expr_src(a) for a in args)})"
    raise TypeError(f"not a loop-IR expression: {e!r}")


def _is_boolish(e: Expr) -> bool:
    return (isinstance(e, Cast) and np.dtype(e.dtype).kind == "b") or (
        isinstance(e, Const) and isinstance(e.value, bool))


def _index(e: Expr) -> str:
    """Unsigned index source (constants stay literal)."""
    if isinstance(e, Const):
        return repr(e.value)
    return f"_u({expr_src(e)})"


def stmt_src(s: Stmt, ind: int) -> list[str]:
    """Python source lines of a statement."""
    pad = "    " * ind
    match s:
        case Assign(var, value):
            return [f"{pad}{var} = {expr_src(value)}"]
        case Store(array, index, value):
            return [f"{pad}{array}[{_index(index)}] = {expr_src(value)}"]
        case Alloc(var, size, dtype, fill):
            out = [f"{pad}{var} = np.empty({expr_src(size)}, {np_type(dtype)})"]
            if fill is not None:  # a loop, not np.zeros/np.full: each NumPy constructor
                # overload Numba compiles costs a kernel's first call 50-250 ms
                out += [f"{pad}for {var}_z in range({var}.shape[0]):",
                        f"{pad}    {var}[_u({var}_z)] = {expr_src(Cast(dtype, fill))}"]
            return out
        case Slice(var, array, lo, hi):
            return [f"{pad}{var} = {array}[{expr_src(lo)}:{expr_src(hi)}]"]
        case SortRange(array, lo, hi):
            return [f"{pad}{array}[{expr_src(lo)}:{expr_src(hi)}].sort()"]
        case ArgSortRange(var, array, lo, hi):
            return [f"{pad}{var} = np.argsort({array}[{expr_src(lo)}:{expr_src(hi)}], "
                    "kind='mergesort')"]
        case Call(name, args):
            return [f"{pad}lsk.{name}({', '.join(expr_src(a) for a in args)})"]
        case For(var, start, stop, body, _):
            return [f"{pad}for {var} in range({expr_src(start)}, {expr_src(stop)}):",
                    *block_src(body, ind + 1)]
        case While(cond, body):
            return [f"{pad}while {expr_src(cond)}:", *block_src(body, ind + 1)]
        case If(cond, then, orelse):
            out = [f"{pad}if {expr_src(cond)}:", *block_src(then, ind + 1)]
            if orelse:
                out += [f"{pad}else:", *block_src(orelse, ind + 1)]
            return out
        case Comment(text):
            return [f"{pad}# {text}"]
        case Return(values):
            return [f"{pad}return ({', '.join(values)},)"]
    raise TypeError(f"not a loop-IR statement: {s!r}")


def block_src(body: tuple[Stmt, ...], ind: int) -> list[str]:
    """Lines of a block (``pass`` when empty)."""
    lines = [ln for s in body for ln in stmt_src(s, ind)]
    return lines or ["    " * ind + "pass"]


def _sized_by_extents(e: Expr, extents: frozenset[str]) -> bool:
    """Whether ``e`` is built from constants and loop extents (``extents``) only."""
    match e:
        case Const(value, _):
            return isinstance(value, int) and not isinstance(value, bool)
        case Var(name):
            return name in extents
        case Bin(op, a, b):
            return op in ("+", "*") and _sized_by_extents(a, extents) and \
                _sized_by_extents(b, extents)
    return False


def hoist_workspaces(fns: tuple[Function, ...], extents: frozenset[str]
                     ) -> tuple[tuple[Function, ...], dict[str, tuple[Alloc, ...]]]:
    """Move each function's chunk-level workspace allocations (sized by loop extents) to
    trailing parameters the host allocates once per worker thread (the kernels leave a
    workspace as they found it: a row workspace's drain clears its marks). Saves the
    allocations per chunk and Numba's compile of the NumPy constructors (0.2-0.3 s on the
    first such kernel of a process). ``extents``: the loop-extent parameters' names.
    Returns the functions and, per name, the hoisted allocations in parameter order."""
    out: list[Function] = []
    hoisted: dict[str, tuple[Alloc, ...]] = {}
    for fn in fns:
        keep: list[Stmt] = []
        moved: list[Alloc] = []
        for st in fn.body:
            if (isinstance(st, Alloc) and st.var.startswith("ws_")
                    and _sized_by_extents(st.size, extents)
                    and (st.fill is None or isinstance(st.fill, Const))):
                moved.append(st)
            else:
                keep.append(st)
        hoisted[fn.name] = tuple(moved)
        out.append(replace(fn, params=fn.params + tuple(a.var for a in moved),
                           body=tuple(keep)) if moved else fn)
    return tuple(out), hoisted


def eval_size(e: Expr, env: dict[str, Any]) -> int:
    """The value of a size accepted by ``hoist_workspaces`` (``env``: extent arguments)."""
    match e:
        case Const(value, _):
            return int(value)
        case Var(name):
            return int(env[name])
        case Bin("+", a, b):
            return eval_size(a, env) + eval_size(b, env)
        case Bin("*", a, b):
            return eval_size(a, env) * eval_size(b, env)
    raise ValueError(f"internal: not a workspace size {e!r}")


def module_src(fns: tuple[Function, ...], key: str, reassoc: bool = False) -> str:
    """A complete module defining the kernel's chunk functions (njit, cached on disk).

    ``reassoc``: compile with LLVM's ``reassoc`` fast-math flag only (lets a float sum
    reduction vectorize; NaN/inf/signed-zero handling stays IEEE)."""
    lines = [HEADER.format(key=key)]
    fm = ", fastmath={'reassoc'}" if reassoc else ""
    for fn in fns:
        lines += ["", "", f"@njit(cache=True, error_model='numpy', nogil=True{fm})",
                  f"def {fn.name}({', '.join(fn.params)}):"]
        lines += [f"    # {n}" for n in fn.notes]
        lines += block_src(fn.body, 1)
    return "\n".join(lines) + "\n"
