"""Epilogue side of lowering: a map applied to each result entry's reduced value (the
normal form's EPILOGUE), as a mixin of ``Lowerer``.

Where an entry is final decides where the map runs: as a sparse entry is emitted (appends,
workspace drains), as a scalar accumulator is stored when every dense output entry is
stored exactly once (``"entry"``), else in a ``finalize`` function over the dense output
after the loop nest, per-chunk partials and the host's fill folding (``"finalize"``), so
the map sees every entry's complete reduction. Epilogue operands are dense: each is read at
its position computed from the result coordinates.
"""

from __future__ import annotations

from typing import Any

from lazysparse.kernels.analysis import PAccess, PApply, PConst, PField, PNode, PResult
from lazysparse.kernels.ir_build import C, V, add, cast, native
from lazysparse.kernels.loop_ir import (
    Apply,
    Assign,
    Bin,
    Cast,
    Expr,
    For,
    Function,
    Load,
    Stmt,
    Store,
)


class EpilogueLowering:
    """Methods of :class:`lazysparse.kernels.lower.Lowerer` that apply the epilogue."""

    info: Any
    out: Any
    plans: Any
    storage: tuple[str, ...]
    cvar: dict[str, str]
    partials: bool
    fold: tuple[int, ...] | None

    def epilogue_mode(self) -> str | None:
        """``"entry"``: applied where each entry is written; ``"finalize"``: in a pass over
        the dense output after everything else; None without an epilogue."""
        if self.info.epilogue is None:
            return None
        o = self.out
        if o.mode != "dense":
            return "entry"
        once = (o.acc_depth is not None and self.fold is None and not self.partials
                and all(p.kind == "range" for p in self.plans[:o.acc_depth]))
        return "entry" if once else "finalize"

    def finish(self, val: Expr, coords: dict[str, Expr]) -> Expr:
        """An output entry's stored value: the epilogue of ``val`` (the reduced value) at
        result coordinates ``coords``, cast to the output dtype."""
        epi = self.info.epilogue
        od = str(self.info.out_dtype)
        if epi is None:
            return Cast(od, val)
        return Cast(od, self._epi_value(epi, val, coords))

    def _epi_value(self, node: PNode, val: Expr, coords: dict[str, Expr]) -> Expr:
        match node:
            case PResult():
                return val
            case PAccess(slot=s):
                return Load(f"a{s}_vals", self.dense_position(s, coords))
            case PConst(slot=k):
                return V(f"k{k}")
            case PField(name=name):
                return coords[name]
            case PApply(op=op, args=args, operand_dtypes=opds, dtype=rd):
                vals = tuple(cast(d, self._epi_value(a, val, coords), a.dtype)  # type: ignore
                             for a, d in zip(args, opds, strict=True))
                app = Apply(op, vals, tuple(str(d) for d in opds))
                return app if native(rd) else Cast(str(rd), app)
        raise TypeError(f"unknown epilogue node {node!r}")

    def dense_position(self, s: int, coords: dict[str, Expr]) -> Expr:
        """Position of an all-dense operand's entry at ``coords`` (row-major in storage)."""
        p: Expr = C(0)
        for k, lv in enumerate(self.info.operands[s].levels):
            p = add(Bin("*", p, V(f"a{s}_n{k}")), coords[lv.field])
        return p

    def epilogue_function(self, params: tuple[str, ...]) -> Function:
        """``finalize``: ``out[o] = epilogue(acc_in[o])`` over every dense output entry, in
        storage order (``acc_in`` may be ``out`` itself when the dtypes agree)."""
        coords: dict[str, Expr] = {}

        def nest(m: int, od: Expr) -> list[Stmt]:
            if m == len(self.storage):
                return [Store("out", od, self.finish(Load("acc_in", od), coords))]
            f = self.storage[m]
            c = V(self.cvar[f])
            coords[f] = c
            inner: list[Stmt] = [Assign(f"od{m}", add(od, Bin("*", c, V(f"os{m}"))))]
            inner += nest(m + 1, V(f"od{m}"))
            return [For(c.name, C(0), V(f"n_{c.name}"), tuple(inner))]

        return Function("finalize", (*params, "acc_in", "out"), tuple(nest(0, C(0))), False,
                        ("out[o] = epilogue(acc_in[o]) for every output entry",))
