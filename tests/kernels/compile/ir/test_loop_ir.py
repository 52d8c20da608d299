"""The loop IR's typed operators, its one generic traversal, and the printer base its three
dialects (readable text, Numba Python, CUDA C) share."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from lazysparse.kernels.backends.cuda.render import CudaCodegenError, CudaPrinter, LaneFor, VarType
from lazysparse.kernels.backends.numba.codegen import NumbaPrinter
from lazysparse.kernels.compile.ir.loop_ir import (
    Assign,
    Bin,
    BinOp,
    Call,
    CallExpr,
    Comment,
    Const,
    For,
    Function,
    If,
    Intrinsic,
    Load,
    LoopPrinter,
    Not,
    Return,
    Select,
    Slice,
    Store,
    Var,
    While,
    children,
    format_function,
    map_blocks,
    map_children,
    statements,
    transform,
    transform_block,
    walk,
)

I, N, ACC = Var("i"), Var("n"), Var("acc")


def _sum_positive() -> Function:
    """acc = sum of max(x[i], 0) over i < n, counting the negatives with a while loop."""
    body = (
        Assign("acc", Const(0.0, "float64")),
        Assign("neg", Const(0)),
        For("i", Const(0), N, (
            If(Bin(BinOp.GT, Load("x", I), Const(0.0, "float64")),
               (Assign("acc", Bin(BinOp.ADD, ACC, Load("x", I))),),
               (Assign("neg", Bin(BinOp.ADD, Var("neg"), Const(1))),)),)),
        Assign("k", Const(0)),
        While(Bin(BinOp.AND, Bin(BinOp.LT, Var("k"), N), Not(Bin(BinOp.EQ, Var("k"), N))),
              (Store("out", Var("k"), Select(Bin(BinOp.LE, Load("x", Var("k")), Const(0.0)),
                                            Const(0.0), Load("x", Var("k")))),
               Assign("k", Bin(BinOp.ADD, Var("k"), Const(1))))),
        Assign("half", Bin(BinOp.FLOORDIV, Bin(BinOp.MAX, Var("neg"), Const(1)), Const(2))),
        Comment("done"),
        Return(("acc", "neg", "half")),
    )
    return Function("kern", ("x", "n", "out"), body)


# ---------------------------------------------------------------- operators


def test_spelled_operators_become_enum_members() -> None:
    b = Bin("+", I, Const(1))
    assert b.op is BinOp.ADD and b == Bin(BinOp.ADD, I, Const(1))
    assert repr(b) == "Bin(op='+', a=Var(name='i'), b=Const(value=1, dtype=None))"
    with pytest.raises(ValueError, match="not a valid BinOp"):
        Bin("**", I, I)
    assert Call("sort_touched", ()).name is Intrinsic.SORT_TOUCHED
    assert CallExpr("ws_probe", ()).name is Intrinsic.WS_PROBE
    with pytest.raises(ValueError):
        Call("no_such_helper", ())


@pytest.mark.parametrize("x,y", [(7, 3), (3, 7), (0, 5), (-4, 3), (5, 5)])
def test_binop_evaluate_matches_python(x: int, y: int) -> None:
    py = {BinOp.ADD: operator.add, BinOp.SUB: operator.sub, BinOp.MUL: operator.mul,
          BinOp.FLOORDIV: operator.floordiv, BinOp.MOD: operator.mod, BinOp.LT: operator.lt,
          BinOp.LE: operator.le, BinOp.GT: operator.gt, BinOp.GE: operator.ge,
          BinOp.EQ: operator.eq, BinOp.NE: operator.ne, BinOp.MIN: min, BinOp.MAX: max,
          BinOp.AND: lambda a, b: bool(a) and bool(b), BinOp.OR: lambda a, b: bool(a) or bool(b)}
    assert set(py) == set(BinOp)
    for op, f in py.items():
        assert op.evaluate(x, y) == f(x, y), op


def test_operator_classes() -> None:
    assert {op for op in BinOp if op.is_comparison} == {BinOp.LT, BinOp.LE, BinOp.GT,
                                                       BinOp.GE, BinOp.EQ, BinOp.NE}
    assert {op for op in BinOp if op.is_logical} == {BinOp.AND, BinOp.OR}
    assert {op for op in BinOp if op.is_call} == {BinOp.MIN, BinOp.MAX}


# ---------------------------------------------------------------- traversal


def test_children_in_field_order() -> None:
    loop = For("i", Const(0), N, (Assign("a", I), Comment("c")))
    assert list(children(loop)) == [Const(0), N, Assign("a", I), Comment("c")]
    assert list(children(I)) == []
    cond = If(ACC, (Assign("a", I),), (Assign("b", N),))
    assert list(children(cond)) == [ACC, Assign("a", I), Assign("b", N)]


def test_walk_is_pre_order_program_order() -> None:
    fn = _sum_positive()
    assigned = [n.var for n in walk(fn.body) if isinstance(n, Assign)]
    assert assigned == ["acc", "neg", "acc", "neg", "k", "k", "half"]
    loads = [n for n in walk(fn) if isinstance(n, Load)]
    assert len(loads) == 4 and all(ld.array == "x" for ld in loads)


def test_statements_skip_expressions() -> None:
    fn = _sum_positive()
    stmts = list(statements(fn.body))
    assert stmts == [n for n in walk(fn.body) if not isinstance(n, Bin | Load | Var | Const
                                                              | Not | Select)]
    assert [type(s).__name__ for s in stmts[:6]] == ["Assign", "Assign", "For", "If", "Assign",
                                                     "Assign"]
    lane = LaneFor("j", Const(0), N, (Comment("inner"),))
    assert list(statements((lane,))) == [lane, Comment("inner")]


def test_walk_sees_backend_nodes() -> None:
    lane = LaneFor("j", Const(0), N, (Store("y", Var("j"), Load("x", Var("j"))),))
    arrays = [n.array for n in walk((lane,)) if isinstance(n, Load | Store)]
    assert arrays == ["y", "x"]


def test_map_children_keeps_unchanged_nodes() -> None:
    fn = _sum_positive()
    assert map_children(fn, lambda c: c) is fn
    assert transform(fn, lambda n: n) is fn
    e = Bin(BinOp.ADD, I, Const(1))
    assert map_children(e, lambda c: Var("j") if c == I else c) == Bin(BinOp.ADD, Var("j"),
                                                                       Const(1))


def test_transform_rewrites_bottom_up() -> None:
    fn = _sum_positive()
    renamed = transform(fn, lambda n: Load("z", n.index) if isinstance(n, Load) else n)
    assert not any(isinstance(n, Load) and n.array == "x" for n in walk(renamed))
    assert sum(isinstance(n, Load) and n.array == "z" for n in walk(renamed)) == 4
    # constants folded bottom-up: the inner sum is folded before the outer one sees it
    nested = Bin(BinOp.ADD, Bin(BinOp.ADD, Const(1), Const(2)), Const(3))

    def fold(n: object) -> object:
        if isinstance(n, Bin) and isinstance(n.a, Const) and isinstance(n.b, Const):
            return Const(n.op.evaluate(n.a.value, n.b.value))
        return n

    assert transform(nested, fold) == Const(6)
    assert transform_block((Assign("a", nested),), fold) == (Assign("a", Const(6)),)


def test_map_blocks_expands_statements_in_every_block() -> None:
    def dup(block: tuple) -> tuple:
        out: list = []
        for s in block:
            s = map_blocks(s, dup)
            out += [s, Comment("after")] if isinstance(s, Assign) else [s]
        return tuple(out)

    cond = If(ACC, (Assign("a", I),), (For("i", Const(0), N, (Assign("b", N),)),))
    (new,) = dup((cond,))
    assert new.then == (Assign("a", I), Comment("after"))
    assert new.orelse[0].body == (Assign("b", N), Comment("after"))
    assert map_blocks(Assign("a", I), dup) == Assign("a", I)


# ---------------------------------------------------------------- printers


def test_text_dialect() -> None:
    fn = Function("k", ("x", "n"), (
        For("i", Const(0), N, (If(Bin(BinOp.LT, I, Const(2)), (Store("x", I, Const(1.5, "f8")),),
                                  (Comment("skip"),)),), True),
        While(Not(ACC), ()), Slice("v", "x", Const(0), N), Return(("v",))), True, ("note",))
    assert format_function(fn) == "\n".join([
        "kernel k(x, n) parallel:",
        "    # note",
        "    parallel for i in 0:n:",
        "        if (i < 2):",
        "            x[i] = 1.5:f8",
        "        else:",
        "            # skip",
        "    while not acc:",
        "        pass",
        "    v = x[0:n]",
        "    return v"])


def test_numba_dialect_runs_as_python() -> None:
    src = "\n".join(NumbaPrinter().function(_sum_positive(), 0))
    assert "_u(i)" in src and "max(neg, 1)" in src and "np.float64(0.0)" in src
    ns = {"np": np, "_u": np.uint64}
    exec(compile(src, "<kern>", "exec"), ns)  # noqa: S102 - our own generated source
    x = np.array([1.5, -2.0, 3.0, -1.0, -4.0])
    out = np.zeros_like(x)
    acc, neg, half = ns["kern"](x, len(x), out)
    assert acc == 4.5 and neg == 3 and half == 1
    np.testing.assert_array_equal(out, np.maximum(x, 0))


def test_cuda_dialect_syntax() -> None:
    types = {n: VarType(np.dtype(np.int64)) for n in ("i", "n", "k", "neg", "half")}
    types.update(x=VarType(np.dtype(np.float64), True), out=VarType(np.dtype(np.float64), True),
                 acc=VarType(np.dtype(np.float64)))
    fn = _sum_positive()
    lines = CudaPrinter(types).block(fn.body[:-1], 1)  # Return has no C form in a kernel
    src = "\n".join(lines)
    assert src.count("{") == src.count("}")
    assert "&&" in src and " / 2LL" in src and "? (neg) : (1LL)" in src
    assert "  // done" in lines and "pass" not in src
    assert "for (i = 0LL; i < i_end1; ++i) {" in src
    with pytest.raises(CudaCodegenError, match="Slice cannot appear"):
        CudaPrinter(types).stmt(Slice("v", "x", Const(0), N), 0)
    with pytest.raises(CudaCodegenError, match="no CUDA helper"):
        CudaPrinter(types).expr(CallExpr(Intrinsic.WS_PROBE, (Var("x"), I)))


def test_a_dialect_overrides_only_its_hooks() -> None:
    class Bracketed(LoopPrinter):
        """A toy dialect: C-like blocks, Python expressions."""

        indent = "\t"
        comment_mark = "--"
        empty_block = None
        block_end = "end"

        def head(self, keyword: str, cond: object) -> str:
            return f"{keyword} {self.expr(cond)} then"  # type: ignore[arg-type]

    s = If(Bin(BinOp.OR, I, N), (Comment("yes"),), (Assign("a", Bin(BinOp.MIN, I, N)),))
    assert Bracketed().stmt(s, 1) == ["\tif (i or n) then", "\t\t-- yes", "\telse:",
                                      "\t\ta = min(i, n)", "\tend"]
    assert Bracketed().block((While(ACC, ()),), 0) == ["while acc then", "end"]
    with pytest.raises(TypeError, match="not a loop-IR statement"):
        Bracketed().stmt(Return(("a",)), 0)
