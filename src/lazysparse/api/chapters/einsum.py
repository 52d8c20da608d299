"""``einsum(subscripts, *operands)`` as one lazy contraction.

Every subscript letter becomes one Field shared by all operands that use it; ``...`` axes
broadcast right-aligned (size-1 axes get fresh fields, ``building.access``). The plan is one
pointwise product ``MapJoin(multiply, ...)`` (nested binary mapjoins) under one
``Aggregate(add, 0, ..., summed letters)``, reordered to the output's axis order when needed.
A letter repeated inside one operand (``'ii->i'``) takes the diagonal: its second occurrence
gets its own field ``i'``, the operand is masked with ``where(i == i', x, 0)`` and ``i'`` is
summed away with the other contracted fields.
"""

from __future__ import annotations

from typing import Any

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.plan_nodes import (
    access,
    broadcast_shapes,
    fresh_field,
    fresh_fields,
    identify,
)
from lazysparse.api.building.lazy_plans import check_array, op
from lazysparse.logic.fields import getfields
from lazysparse.logic.nodes import Aggregate, Field, Immediate, LogicNode, MapJoin, Reorder
from lazysparse.logic.operators import aggregate_fill

_ELLIPSIS = "."


def _terms(term: str, where: str) -> list[str]:
    """The tokens of one subscript term: letters, and ``.`` for the ellipsis (at most one)."""
    out: list[str] = []
    rest = term
    while rest:
        if rest.startswith("..."):
            if _ELLIPSIS in out:
                raise ValueError(f"einsum: more than one ellipsis in {where} term {term!r}")
            out.append(_ELLIPSIS)
            rest = rest[3:]
        elif rest[0].isalpha():
            out.append(rest[0])
            rest = rest[1:]
        else:
            raise ValueError(f"einsum: invalid character {rest[0]!r} in {where} term {term!r}")
    return out


def _parse(subscripts: str, n: int) -> tuple[list[list[str]], list[str] | None]:
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a string, got {type(subscripts).__name__}")
    s = subscripts.replace(" ", "")
    if s.count("->") > 1:
        raise ValueError(f"einsum: more than one '->' in {subscripts!r}")
    lhs, arrow, rhs = s.partition("->")
    terms = [_terms(t, "input") for t in lhs.split(",")]
    if len(terms) != n:
        raise ValueError(f"einsum: {subscripts!r} names {len(terms)} operands, got {n}")
    out = _terms(rhs, "output") if arrow else None
    return terms, out


def _letter_sizes(xs: list[LazyArray], terms: list[list[str]]
                  ) -> tuple[dict[str, int], list[tuple[int, ...]]]:
    """Each letter's size (the same in every operand) and each operand's ellipsis shape."""
    sizes: dict[str, int] = {}
    ell_shapes: list[tuple[int, ...]] = []
    for x, term in zip(xs, terms, strict=True):
        nlet = sum(1 for t in term if t != _ELLIPSIS)
        if (_ELLIPSIS in term and x.ndim < nlet) or (_ELLIPSIS not in term and x.ndim != nlet):
            raise ValueError(f"einsum: term {''.join(term)!r} does not match an operand of "
                             f"shape {x.shape}")
        e = x.ndim - nlet
        pos = term.index(_ELLIPSIS) if _ELLIPSIS in term else 0
        ell_shapes.append(x.shape[pos:pos + e] if _ELLIPSIS in term else ())
        axes = _axes_of(term, x.ndim)
        for t, ax in zip(term, axes, strict=False):
            if t == _ELLIPSIS:
                continue
            d = x.shape[ax]
            if sizes.setdefault(t, d) != d:
                raise ValueError(f"einsum: letter {t!r} has sizes {sizes[t]} and {d}")
    return sizes, ell_shapes


def _output_terms(subscripts: str, terms: list[list[str]], out_terms: list[str] | None,
                  letters: dict[str, int], eshape: tuple[int, ...]) -> list[str]:
    """The output's tokens: as given (checked), or NumPy's implicit ones (the ellipsis,
    then the letters used once, sorted)."""
    counts: dict[str, int] = {}
    for term in terms:
        for t in term:
            counts[t] = counts.get(t, 0) + 1
    if out_terms is None:
        out_terms = ([_ELLIPSIS] if eshape else []) + sorted(
            t for t, c in counts.items() if c == 1 and t != _ELLIPSIS)
    for t in out_terms:
        if t != _ELLIPSIS and t not in letters:
            raise ValueError(f"einsum: output letter {t!r} does not appear in the inputs")
    if len(set(out_terms)) != len(out_terms):
        raise ValueError(f"einsum: repeated output letter in {subscripts!r}")
    if eshape and _ELLIPSIS not in out_terms and any(d != 1 for d in eshape):
        raise ValueError("einsum: the output must keep '...' when the inputs' ellipsis "
                         "dimensions are not all size 1")
    return out_terms


def _contract(xs: list[LazyArray], nodes: list[LogicNode], summable: list[Field],
              out_fields: list[Field], out_shape: list[int]) -> LazyArray:
    """The product of ``nodes`` with the ``summable`` fields not in the output summed."""
    mul, add = op("multiply"), op("add")
    dtype = xs[0].dtype
    fill = xs[0].fill_value
    body = nodes[0]
    for x, node in zip(xs[1:], nodes[1:], strict=True):
        dtype = mul.result_dtype(dtype, x.dtype)
        fill = mul.apply(fill, x.fill_value)
        body = MapJoin(Immediate(mul), (body, node))
    present = set(getfields(body))
    reduced = tuple(f for f in summable if f not in out_fields and f in present)
    if reduced:
        init = add.init_for(dtype)
        body = Aggregate(Immediate(add), Immediate(init), body, reduced)
        fill = aggregate_fill(add, init, dtype)
    if getfields(body) != tuple(out_fields):
        body = Reorder(body, tuple(out_fields))
    return LazyArray(identify(body), tuple(out_shape), dtype, fill, xs[0].device)


def einsum(subscripts: str, /, *operands: Any) -> LazyArray:
    """Einstein summation over ``operands`` as one MapJoin(multiply) + Aggregate(add)."""
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    xs = [check_array(x, "einsum", f"operand {k}") for k, x in enumerate(operands)]
    terms, out_terms = _parse(subscripts, len(xs))
    sizes, ell_shapes = _letter_sizes(xs, terms)
    try:
        eshape = broadcast_shapes(*ell_shapes)
    except ValueError:
        raise ValueError(f"einsum: ellipsis dimensions {ell_shapes} do not broadcast") from None
    efields = fresh_fields(len(eshape))
    letter = {t: fresh_field() for t in sizes}
    out_terms = _output_terms(subscripts, terms, out_terms, sizes, eshape)
    extra: list[Field] = []
    nodes = [_operand(x, term, letter, sizes, efields, eshape, extra)
             for x, term in zip(xs, terms, strict=True)]
    out_fields: list[Field] = []
    out_shape: list[int] = []
    for t in out_terms:
        if t == _ELLIPSIS:
            out_fields += efields
            out_shape += eshape
        else:
            out_fields.append(letter[t])
            out_shape.append(sizes[t])
    if _ELLIPSIS not in out_terms:
        extra += [f for f in efields]
    return _contract(xs, nodes, [*letter.values(), *extra], out_fields, out_shape)


def _axes_of(term: list[str], ndim: int) -> list[int]:
    """The axis each token of ``term`` starts at (the ellipsis spans ``ndim - letters``)."""
    e = ndim - sum(1 for t in term if t != _ELLIPSIS)
    axes, k = [], 0
    for t in term:
        axes.append(k)
        k += e if t == _ELLIPSIS else 1
    return axes


def _operand(x: LazyArray, term: list[str], letter: dict[str, Field], sizes: dict[str, int],
             efields: tuple[Field, ...], eshape: tuple[int, ...],
             extra: list[Field]) -> LogicNode:
    """The access of one operand on the shared fields (diagonals masked, see module doc)."""
    fields: list[Field] = []
    shape: list[int] = []
    seen: dict[str, Field] = {}
    diag: list[tuple[Field, Field]] = []
    nlet = sum(1 for t in term if t != _ELLIPSIS)
    e = x.ndim - nlet
    for t in term:
        if t == _ELLIPSIS:
            fields += efields[len(efields) - e:]
            shape += eshape[len(eshape) - e:]
            continue
        if t in seen:
            f2 = fresh_field()
            diag.append((seen[t], f2))
            extra.append(f2)
            fields.append(f2)
        else:
            seen[t] = letter[t]
            fields.append(letter[t])
        shape.append(sizes[t])
    node: LogicNode = access(x.expr, x.shape, tuple(fields), tuple(shape))
    for f1, f2 in diag:
        same = MapJoin(Immediate(op("equal")), (f1, f2))
        node = MapJoin(Immediate(op("where")), (same, node, Immediate(x.dtype.type(0))))
    return node


__all__ = ["einsum"]
