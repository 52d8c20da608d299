"""Iteration regions and outside values, as small dataclasses (see
:mod:`compile.planning.coiterate`).

A :class:`Region` says where along one loop index the pointwise tree may differ from its
value at skipped coordinates: everywhere (:data:`ALL`), nowhere (:data:`NONE`), where an
operand stores an entry (:class:`Atom`), or an intersection / union of regions. The value
outside a region is :class:`Known` (a constant), :data:`FILL_EXPR` (needs the call's
constants) or :data:`DATA` (depends on data: dense operands, fields).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class Region:
    """Base of regions."""

    __slots__ = ()

    def atoms(self) -> tuple[int, ...]:
        """Operand slots the region mentions, in first-seen order."""
        return ()

    @property
    def conjunction(self) -> bool:
        """True for one atom or an intersection of atoms (every atom must be present)."""
        return False

    @property
    def atom_union(self) -> bool:
        """True for a union of atoms (the least coordinate among them is always present)."""
        return False


@dataclass(frozen=True)
class _Everywhere(Region):
    """Every coordinate."""


@dataclass(frozen=True)
class _Nowhere(Region):
    """No coordinate."""


ALL: Region = _Everywhere()
NONE: Region = _Nowhere()


@dataclass(frozen=True)
class Atom(Region):
    """Where operand ``slot`` stores an entry."""

    slot: int

    def atoms(self) -> tuple[int, ...]:
        return (self.slot,)

    @property
    def conjunction(self) -> bool:
        return True


@dataclass(frozen=True)
class _Combined(Region):
    """An intersection or union of ``parts`` (two or more, none of them the same kind)."""

    parts: tuple[Region, ...]

    def atoms(self) -> tuple[int, ...]:
        out: list[int] = []
        for r in self.parts:
            out += [a for a in r.atoms() if a not in out]
        return tuple(out)


@dataclass(frozen=True)
class And(_Combined):
    """Where every part holds."""

    @property
    def conjunction(self) -> bool:
        return all(isinstance(r, Atom) for r in self.parts)


@dataclass(frozen=True)
class Or(_Combined):
    """Where any part holds."""

    @property
    def atom_union(self) -> bool:
        return all(isinstance(r, Atom) for r in self.parts)


def intersect(parts: list[Region]) -> Region:
    """The intersection of ``parts`` (nested intersections flattened, repeats dropped)."""
    flat: list[Region] = []
    for p in parts:
        if p == ALL:
            continue
        flat.extend(p.parts if isinstance(p, And) else [p])
    uniq = list(dict.fromkeys(flat))
    if not uniq:
        return ALL
    return uniq[0] if len(uniq) == 1 else And(tuple(uniq))


def union(parts: list[Region]) -> Region:
    """The union of ``parts`` (nested unions flattened, repeats dropped)."""
    flat: list[Region] = []
    for p in parts:
        if p == NONE:
            continue
        if p == ALL:
            return ALL
        flat.extend(p.parts if isinstance(p, Or) else [p])
    uniq = list(dict.fromkeys(flat))
    if not uniq:
        return NONE
    return uniq[0] if len(uniq) == 1 else Or(tuple(uniq))


# ---------------------------------------------------------------------- outside values


class Missing:
    """Base of the values outside a region."""

    __slots__ = ()

    @property
    def known(self) -> bool:
        """Whether the value is a constant known now."""
        return False

    @property
    def data(self) -> bool:
        """Whether the value depends on data (no constant describes it)."""
        return False

    @property
    def held(self) -> bool:
        """Whether the value is held data, not an implicit fill: a selection whose condition
        holds data there (``where(D > 0, S, 0)`` with ``D`` dense is an explicit 0 outside
        ``S``), which no operator may annihilate (the fill rule: implicit fills annihilate,
        stored entries follow IEEE)."""
        return False


@dataclass(frozen=True, eq=False)
class Known(Missing):
    """The constant ``value``."""

    value: Any

    @property
    def known(self) -> bool:
        return True


@dataclass(frozen=True, eq=False)
class Held(Known):
    """The constant ``value``, held as data (see :attr:`Missing.held`)."""

    @property
    def held(self) -> bool:
        return True


@dataclass(frozen=True)
class _FillExpr(Missing):
    """A value of the fills and the call's constants (decided by analysis per call)."""


@dataclass(frozen=True)
class _HeldFillExpr(_FillExpr):
    """A value of the fills and the call's constants, held as data."""

    @property
    def held(self) -> bool:
        return True


@dataclass(frozen=True)
class _Data(Missing):
    """A value that depends on data."""

    @property
    def data(self) -> bool:
        return True


FILL_EXPR: Missing = _FillExpr()
HELD_FILL_EXPR: Missing = _HeldFillExpr()
DATA: Missing = _Data()


def held_as(miss: Missing, held: bool) -> Missing:
    """``miss``, held as data when ``held`` (the same value otherwise)."""
    if not held or miss.held or miss.data:
        return miss
    if isinstance(miss, Known):
        return Held(miss.value)
    return HELD_FILL_EXPR

__all__ = ["ALL", "DATA", "FILL_EXPR", "HELD_FILL_EXPR", "NONE", "And", "Atom", "Held",
           "Known", "Missing", "Or", "Region", "held_as", "intersect", "union"]
