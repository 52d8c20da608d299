"""Unread assignments leave a kernel before it is printed; everything read, stored or
returned stays, and the kernels' values still match NumPy."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.kernels.compile.ir.dead_code import drop_dead_assigns, read_names
from lazysparse.kernels.compile.ir.loop_ir import (
    Assign,
    Bin,
    CallExpr,
    Const,
    For,
    Function,
    If,
    Intrinsic,
    Load,
    Return,
    Store,
    Var,
    format_function,
)


def _fn(*body: object) -> Function:
    return Function("f", ("a", "n"), tuple(body))  # type: ignore[arg-type]


def test_unread_chain_goes_and_read_values_stay() -> None:
    fn = _fn(Assign("x", Load("a", Const(0))),
             Assign("y", Bin("+", Var("x"), Const(1))),  # read only by the unread z
             Assign("z", Var("y")),
             Assign("kept", Const(2)),
             For("i", Const(0), Var("n"), (Assign("pos", Var("i")),
                                           Store("a", Var("i"), Var("kept")))),
             Return(("kept",)))
    out = drop_dead_assigns(fn)
    text = format_function(out)
    for gone in ("x =", "y =", "z =", "pos ="):
        assert gone not in text, text
    assert "kept = 2" in text and "a[i] = kept" in text
    assert read_names(out.body) >= {"a", "i", "n", "kept"}


def test_nested_blocks_and_intrinsic_calls() -> None:
    probe = CallExpr(Intrinsic.WS_PROBE, (Var("a"), Var("n")))
    fn = _fn(If(Var("n"), (Assign("tmp", Const(1)),), (Assign("tmp", Const(2)),)),
             Assign("slot", probe),  # unread, but an intrinsic may write a workspace
             Store("a", Const(0), Var("n")))
    text = format_function(drop_dead_assigns(fn))
    assert "tmp =" not in text
    assert "slot =" in text


def test_function_with_nothing_unread_is_returned_as_is() -> None:
    fn = _fn(Assign("x", Const(1)), Return(("x",)))
    assert drop_dead_assigns(fn) is fn


def test_union_kernel_prints_no_unread_bookkeeping() -> None:
    a = sp.random(40, 30, density=0.2, format="csr", random_state=0)
    b = sp.random(40, 30, density=0.2, format="csr", random_state=1)
    r = xp.asarray(a) + xp.asarray(b)
    (k,) = xp.explain(r).kernels
    # the append's last group position and the counting pass's coordinates are unread
    assert "pos0 =" not in k.source
    np.testing.assert_array_equal(np.asarray(r), (a + b).toarray())
