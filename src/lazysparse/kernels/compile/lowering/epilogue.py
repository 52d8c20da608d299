"""Epilogue side of lowering: a map applied to each result entry's reduced value (the
normal form's EPILOGUE).

Where an entry is final decides where the map runs (``plan.EpiloguePlace``): as a sparse
entry is emitted (appends, workspace drains), as a scalar accumulator is stored when every
dense output entry is stored exactly once (``ENTRY``), else in a ``finalize`` function
over the dense output after the loop nest, per-chunk partials and the host's fill folding
(``FINALIZE``), so the map sees every entry's complete reduction. Epilogue operands are
dense: each is read at its position computed from the result coordinates.
"""

from __future__ import annotations

from lazysparse.kernels.compile.ir.build import C, V, add, cast, native
from lazysparse.kernels.compile.ir.loop_ir import (
    Apply,
    Assign,
    Bin,
    BinOp,
    Cast,
    Expr,
    For,
    Function,
    Load,
    Stmt,
    Store,
)
from lazysparse.kernels.compile.planning.analysis import (
    KernelInfo,
    PAccess,
    PApply,
    PConst,
    PField,
    PNode,
    PResult,
)


def finish(info: KernelInfo, val: Expr, coords: dict[str, Expr]) -> Expr:
    """An output entry's stored value: the epilogue of ``val`` (the reduced value) at
    result coordinates ``coords``, cast to the output dtype."""
    od = str(info.out_dtype)
    if info.epilogue is None:
        return Cast(od, val)
    return Cast(od, _epi_value(info, info.epilogue, val, coords))


def _epi_value(info: KernelInfo, node: PNode, val: Expr, coords: dict[str, Expr]) -> Expr:
    match node:
        case PResult():
            return val
        case PAccess(slot=s):
            return Load(f"a{s}_vals", dense_position(info, s, coords))
        case PConst(slot=k):
            return V(f"k{k}")
        case PField(name=name):
            return coords[name]
        case PApply(op=op, args=args, operand_dtypes=opds, dtype=rd):
            vals = tuple(cast(d, _epi_value(info, a, val, coords), a.dtype)  # type: ignore
                         for a, d in zip(args, opds, strict=True))
            app = Apply(op, vals, tuple(str(d) for d in opds))
            return app if native(rd) else Cast(str(rd), app)
    raise TypeError(f"unknown epilogue node {node!r}")


def dense_position(info: KernelInfo, s: int, coords: dict[str, Expr]) -> Expr:
    """Position of an all-dense operand's entry at ``coords`` (row-major in storage)."""
    p: Expr = C(0)
    for k, lv in enumerate(info.operands[s].levels):
        p = add(Bin(BinOp.MUL, p, V(f"a{s}_n{k}")), coords[lv.field])
    return p


def epilogue_function(info: KernelInfo, cvar: dict[str, str],
                      params: tuple[str, ...]) -> Function:
    """``finalize``: ``out[o] = epilogue(acc_in[o])`` over every dense output entry, in
    storage order (``acc_in`` may be ``out`` itself when the dtypes agree); ``cvar``: the
    loop variable of each field."""
    storage = info.out_storage_fields
    coords: dict[str, Expr] = {}

    def nest(m: int, od: Expr) -> list[Stmt]:
        if m == len(storage):
            return [Store("out", od, finish(info, Load("acc_in", od), coords))]
        f = storage[m]
        c = V(cvar[f])
        coords[f] = c
        inner: list[Stmt] = [Assign(f"od{m}", add(od, Bin(BinOp.MUL, c, V(f"os{m}"))))]
        inner += nest(m + 1, V(f"od{m}"))
        return [For(c.name, C(0), V(f"n_{c.name}"), tuple(inner))]

    return Function("finalize", (*params, "acc_in", "out"), tuple(nest(0, C(0))), False,
                    ("out[o] = epilogue(acc_in[o]) for every output entry",))
