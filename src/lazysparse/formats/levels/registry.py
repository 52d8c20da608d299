"""Level kinds to level classes: how code that sees a layout as level kinds alone (a
``FormatSpec``, a kernel's structure) asks a level what it declares, without naming kinds.

Every question about a kind is answered here or by the class's own declarations
(``Level.walk``, ``Level.kernel_params``, ``Level.structured``, ...): a new level is its
module plus one entry in :data:`LEVEL_CLASSES`.
"""

from __future__ import annotations

from lazysparse.formats.levels.banded import Banded
from lazysparse.formats.levels.base import Level, LevelCapabilities, LevelProperties, Walk
from lazysparse.formats.levels.blocked import Blocked
from lazysparse.formats.levels.bytemap import Bytemap
from lazysparse.formats.levels.compressed import Compressed
from lazysparse.formats.levels.dense import Dense
from lazysparse.formats.levels.ell import Ell
from lazysparse.formats.levels.hashed import Hashed
from lazysparse.formats.levels.runs import Runs
from lazysparse.formats.levels.singleton import Singleton

#: The class of every level kind (the compressed class has three configurations).
LEVEL_CLASSES: dict[str, type[Level]] = {
    "dense": Dense,
    "compressed": Compressed,
    "compressed-nonunique": Compressed,
    "compressed-unordered": Compressed,
    "singleton": Singleton,
    "hashed": Hashed,
    "bytemap": Bytemap,
    "banded": Banded,
    "ell": Ell,
    "blocked": Blocked,
    "runs": Runs,
}

#: The kind a compressed level has in its plain configuration (ordered, unique): what
#: layouts that sort, relayout or write a level as ``ptr``/``idx`` produce.
PLAIN_KIND = "compressed"
#: The kind of a compressed level whose siblings may come in any order.
UNORDERED_KIND = "compressed-unordered"
#: The kind of a compressed level that repeats coordinates (COO's root).
NONUNIQUE_KIND = "compressed-nonunique"
#: The kind of a level with one child per parent (COO's lower levels).
SINGLETON_KIND = "singleton"
#: The located kind (every layout's leading levels above a structured level).
DENSE_KIND = "dense"
#: CSR-like 2-D layout (rows dense, columns compressed) and 2-D COO's.
ROW_LAYOUT = (DENSE_KIND, PLAIN_KIND)
COO_LAYOUT = (NONUNIQUE_KIND, SINGLETON_KIND)

#: The properties and capabilities of every level kind (what a spec declares without data).
LEVEL_PROPERTIES: dict[str, LevelProperties] = {
    k: c.properties_of(k) for k, c in LEVEL_CLASSES.items()}
LEVEL_CAPABILITIES: dict[str, LevelCapabilities] = {
    k: c.capabilities_of(k) for k, c in LEVEL_CLASSES.items()}

#: Kinds whose siblings may come in any order, and the ordered kind each sorts into.
UNORDERED_KINDS: dict[str, str] = {
    k: PLAIN_KIND for k, p in LEVEL_PROPERTIES.items() if not p.ordered}
#: Unordered kinds whose layout has a name of its own (its ordered form is named afresh).
RENAMED_KINDS = frozenset(k for k in UNORDERED_KINDS if LEVEL_CLASSES[k].format_name)
#: Named formats of one level kind under dense levels (``Level.format_name``) and that kind.
LAST_LEVEL_FORMATS: dict[str, str] = {
    c.format_name: k for k, c in LEVEL_CLASSES.items() if c.format_name}

#: Structured kinds: the last level of a layout under dense levels (``Level.structured``).
STRUCTURED_KINDS = frozenset(k for k, c in LEVEL_CLASSES.items() if c.structured)
#: Structured kinds whose positions use the row number (``Level.row_rooted``).
ROW_ROOTED_KINDS = frozenset(k for k, c in LEVEL_CLASSES.items() if c.row_rooted)
#: Kinds addressed by coordinate, ``p * size + c`` (coordinate iteration: Dense).
LOCATED_KINDS = frozenset(k for k, c in LEVEL_CLASSES.items() if c.walk is Walk.LOCATED)
#: Kinds read by their ``ptr``/``idx`` arrays alone, siblings in any order (dense,
#: compressed in every configuration, singleton); :data:`CLASSIC_KINDS` those ordered.
ARRAY_KINDS = frozenset(k for k, c in LEVEL_CLASSES.items()
                        if c in (Dense, Compressed, Singleton))
CLASSIC_KINDS = frozenset(k for k in ARRAY_KINDS if LEVEL_PROPERTIES[k].ordered)


def level_class(kind: str) -> type[Level]:
    """The class of level kind ``kind`` (``ValueError`` for an unknown kind)."""
    try:
        return LEVEL_CLASSES[kind]
    except KeyError:
        raise ValueError(f"unknown level kind {kind!r}; expected one of "
                         f"{tuple(LEVEL_CLASSES)}") from None


def is_located(kind: str) -> bool:
    """Whether level kind ``kind`` stores every coordinate, addressed ``p * size + c``
    (Dense); False for any other string, unknown ones included."""
    return kind in LOCATED_KINDS


def all_located(kinds: tuple[str, ...]) -> bool:
    """Whether every level kind of ``kinds`` is located (a dense layout; True for none)."""
    return all(k in LOCATED_KINDS for k in kinds)


def is_structured(kind: str) -> bool:
    """Whether level kind ``kind`` stores a structure (``Level.structured``)."""
    return kind in STRUCTURED_KINDS


def is_run_valued(kind: str) -> bool:
    """Whether one position of level kind ``kind`` stands for a run of coordinates."""
    cls = LEVEL_CLASSES.get(kind)
    return cls is not None and cls.run_valued


def walk_of_kind(kind: str) -> Walk:
    """How loops walk level kind ``kind``'s positions."""
    return level_class(kind).walk


def written_kind(kind: str, last: bool) -> str:
    """The kind a kernel appends for an output level of kind ``kind`` (``last``: the
    layout's last level): levels that locate by a table or mask are written as a
    compressed level (unordered when a hashed level is last: a row workspace drains it
    unsorted) and relabeled by the host; other kinds as they are."""
    cls = level_class(kind)
    if cls is Hashed:
        return UNORDERED_KIND if last else PLAIN_KIND
    if cls is Bytemap:
        return PLAIN_KIND
    return kind


def writes_relabeled(kinds: tuple[str, ...]) -> bool:
    """Whether a kernel writes some level of ``kinds`` as another kind (:func:`written_kind`)."""
    return any(level_class(k) in (Hashed, Bytemap) for k in kinds)


def copy_kind(kind: str) -> str:
    """The kind of a relaid-out (transposed) copy's level: the ordered form of an
    unordered level; compressed for a bytemap (it would span every position of the new
    order) and for a structured level (it describes one axis order)."""
    cls = level_class(kind)
    if cls is Bytemap or cls.structured or cls is Hashed or kind == UNORDERED_KIND:
        return PLAIN_KIND
    return kind


def is_coo_kind(kind: str) -> bool:
    """Whether level kind ``kind`` is part of a COO chain (a non-unique compressed level or
    a singleton below one)."""
    return kind in COO_LAYOUT


__all__ = [
    "ARRAY_KINDS",
    "CLASSIC_KINDS",
    "COO_LAYOUT",
    "NONUNIQUE_KIND",
    "ROW_LAYOUT",
    "SINGLETON_KIND",
    "DENSE_KIND",
    "LAST_LEVEL_FORMATS",
    "LEVEL_CAPABILITIES",
    "LEVEL_CLASSES",
    "LEVEL_PROPERTIES",
    "LOCATED_KINDS",
    "PLAIN_KIND",
    "RENAMED_KINDS",
    "ROW_ROOTED_KINDS",
    "STRUCTURED_KINDS",
    "UNORDERED_KIND",
    "UNORDERED_KINDS",
    "all_located",
    "copy_kind",
    "is_coo_kind",
    "is_located",
    "is_run_valued",
    "is_structured",
    "level_class",
    "walk_of_kind",
    "writes_relabeled",
    "written_kind",
]
