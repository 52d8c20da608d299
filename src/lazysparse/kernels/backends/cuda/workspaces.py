"""Hash workspaces for SpGEMM rows on the GPU: a loop-IR rewrite of the dense-row workspace.

The loop IR's row workspace (``compile/lowering/workspaces.py``, Gustavson) is a mark array,
a touched list and a values array, each as long as the output row. On a GPU every resident
worker needs its own, so wide outputs leave few workers. This rewrite keeps the touched
list and values but addresses them through an open-addressing table whose capacity
(``ls_hcap``, a power of two) is at least twice the most distinct columns any row can
produce, bounded from the operands' row lengths (:func:`spgemm_row_bound`):

- ``mark[w]`` tests become a probe ``s = ls_hash_probe(keys, cap, w)`` and ``keys[s] != w``;
  ``mark[w] = True`` becomes ``keys[s] = w`` (its slot is remembered in ``hslots``);
- ``val[w]`` becomes ``val[s]``; the ordered drain sorts the list;
- after a row's drain, the slots it used are emptied (``keys[hslots[u]] = -1``), so the
  table is clean for the worker's next row without an O(capacity) reset.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from lazysparse.kernels.backends.cuda.render import HashProbe
from lazysparse.kernels.compile.ir.loop_ir import (
    Alloc,
    Assign,
    Bin,
    BinOp,
    Call,
    Const,
    Expr,
    For,
    If,
    Intrinsic,
    Load,
    N,
    Not,
    SortRange,
    Stmt,
    Store,
    Var,
    map_blocks,
    transform,
)

CAP = Var("ls_hcap")


class WorkspaceKind(StrEnum):
    """A SpGEMM row workspace on the GPU: the loop IR's dense row, or a hash table."""

    DENSE = "dense"
    HASH = "hash"


def _sub_val(node: N, w: Expr, slot: Expr) -> N:
    """``ws_val[w]`` -> ``ws_val[slot]`` everywhere inside an expression or statement."""
    here = Load("ws_val", w)
    return transform(node, lambda n: Load("ws_val", slot) if n == here else n)


class _Rewriter:
    def __init__(self) -> None:
        self.matched = 0

    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        slot_of: dict[Expr, Expr] = {}  # workspace coordinate -> its slot variable
        for s in body:
            out += self.stmt(s, slot_of)
        return tuple(out)

    def stmt(self, s: Stmt, slot_of: dict[Expr, Expr]) -> list[Stmt]:
        match s:
            case Alloc(var, _, dtype, _) if var in ("ws_mark", "ws_mark_c"):
                tag = var[len("ws_mark"):]
                return [Alloc(f"ws_hkeys{tag}", CAP, "int64", Const(-1)),
                        Alloc(f"ws_hslots{tag}", CAP, "int64", None)]
            case Alloc(var, _, dtype, fill) if var in ("ws_list", "ws_list_c", "ws_val"):
                return [Alloc(var, CAP, dtype, fill)]
            case If(Not(Load(mark, w)), then, ()) if mark in ("ws_mark", "ws_mark_c"):
                tag = mark[len("ws_mark"):]
                self.matched += 1
                slot = Var(f"ls_hs{tag}")
                slot_of[w] = slot
                new_then: list[Stmt] = []
                for t in then:
                    match t:
                        case Store(m, _, _) if m == mark:
                            new_then.append(Store(f"ws_hkeys{tag}", slot, w))
                        case Store(lst, idx, _) if lst == f"ws_list{tag}":
                            new_then += [t, Store(f"ws_hslots{tag}", idx, slot)]
                        case Store("ws_val", _, v):
                            new_then.append(Store("ws_val", slot, v))
                        case _:
                            new_then.append(t)
                return [Assign(slot.name, HashProbe(f"ws_hkeys{tag}", CAP, w)),
                        If(Bin(BinOp.NE, Load(f"ws_hkeys{tag}", slot), w), tuple(new_then))]
            case Store("ws_val", w, v) if w in slot_of:
                slot = slot_of[w]
                return [Store("ws_val", slot, _sub_val(v, w, slot))]
            case Call(Intrinsic.SORT_TOUCHED, (Var(lst), n, _)):
                return [SortRange(lst, Const(0), n)]
            case For(u, Const(0), n, body, par) if self._is_drain(body):
                return self.drain(u, n, body, par)
        return [map_blocks(s, self.block)]

    @staticmethod
    def _is_drain(body: tuple[Stmt, ...]) -> bool:
        return (len(body) >= 2 and isinstance(body[0], Assign)
                and isinstance(body[0].value, Load)
                and body[0].value.array in ("ws_list", "ws_list_c")
                and isinstance(body[1], Store) and body[1].array in ("ws_mark", "ws_mark_c"))

    def drain(self, u: str, n: Expr, body: tuple[Stmt, ...], par: bool) -> list[Stmt]:
        first = body[0]
        mark = body[1]
        assert isinstance(first, Assign) and isinstance(mark, Store)
        tag = mark.array[len("ws_mark"):]
        w = Var(first.var)
        slot = Var(f"ls_hs{tag}")
        rest = [_sub_val(x, w, slot) for x in body[2:]]
        clear = For(u, Const(0), n, (Store(f"ws_hkeys{tag}", Load(f"ws_hslots{tag}", Var(u)),
                                           Const(-1)),))
        if not rest:  # count phase: the drain only cleared marks
            return [clear]
        new_body = (first, Assign(slot.name, HashProbe(f"ws_hkeys{tag}", CAP, w)), *rest)
        return [For(u, Const(0), n, new_body, par), clear]


def hash_rewrite(body: tuple[Stmt, ...]) -> tuple[Stmt, ...] | None:
    """A chunk body with its dense-row workspace replaced by a hash workspace, or None when
    the body has no row workspace."""
    rw = _Rewriter()
    out = rw.block(body)
    return out if rw.matched else None


def spgemm_row_bound(a_ptr: Any, a_idx: Any, b_ptr: Any, xp: Any) -> int:
    """Most products any output row can receive: max over rows i of the sum of B's row
    lengths at A's column indices in row i (an upper bound on distinct columns)."""
    if a_idx.shape[0] == 0:
        return 0
    blen = xp.diff(b_ptr.astype(xp.int64))
    contrib = blen[a_idx.astype(xp.int64)]
    cs = xp.concatenate([xp.zeros(1, xp.int64), xp.cumsum(contrib)])
    ap = a_ptr.astype(xp.int64) - int(a_ptr[0])
    return int((cs[ap[1:]] - cs[ap[:-1]]).max()) if ap.shape[0] > 1 else 0


def hash_capacity(bound: int, width: int) -> int:
    """Table capacity: the power of two >= 2 * min(bound, width), at least 2."""
    need = max(2, 2 * min(bound, width))
    return 1 << (need - 1).bit_length()
