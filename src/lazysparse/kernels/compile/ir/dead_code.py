"""Drop the assignments to scalar locals that nothing reads: the lowering writes some
bookkeeping for every output group and loop level (a group's last position, a merge's
coordinate in a counting pass) whether or not a later statement uses it. LLVM removes such
stores anyway, so the machine code is the same; a backend's compiler still types and lowers
each one (Numba: ~1 % of a kernel's compile time per dead statement in a 60-line kernel),
and the printed source is shorter to read."""

from __future__ import annotations

from lazysparse.kernels.compile.ir.loop_ir import (
    Assign,
    CallExpr,
    Function,
    Return,
    Stmt,
    Var,
    map_blocks,
    statements,
    walk,
)


def read_names(body: tuple[Stmt, ...]) -> frozenset[str]:
    """Every variable a block reads: scalars in expressions, arrays loaded, stored, sliced
    or sorted (any node's ``array`` field), and returned values."""
    names: set[str] = set()
    for node in walk(body):
        if isinstance(node, Var):
            names.add(node.name)
        elif isinstance(node, Return):
            names.update(node.values)
        array = getattr(node, "array", None)
        if isinstance(array, str):
            names.add(array)
    return frozenset(names)


def _pure(a: Assign) -> bool:
    """Whether an assignment's value has no effect but its result (an intrinsic call may
    write a workspace, so it stays)."""
    return not any(isinstance(n, CallExpr) for n in walk(a.value))


def _drop(body: tuple[Stmt, ...], dead: frozenset[str]) -> tuple[Stmt, ...]:
    """``body`` without the assignments to ``dead`` names, in nested blocks too."""
    out = []
    for s in body:
        if isinstance(s, Assign) and s.var in dead:
            continue
        out.append(map_blocks(s, lambda b: _drop(b, dead)))
    return tuple(out)


def drop_dead_assigns(fn: Function) -> Function:
    """``fn`` without assignments whose variable is never read (repeated until none is
    left: dropping one can leave the variables it read unread)."""
    body = fn.body
    while True:
        read = read_names(body)
        assigns = [s for s in statements(body) if isinstance(s, Assign)]
        kept = read | {s.var for s in assigns if not _pure(s)}
        dead = frozenset(s.var for s in assigns if s.var not in kept)
        if not dead:
            return fn if body is fn.body else Function(fn.name, fn.params, body, fn.parallel,
                                                        fn.notes)
        body = _drop(body, dead)
