"""Format specs: hashable descriptions of a layout (level kinds + mode order) and named formats."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lazysparse.formats.levels.base import LevelCapabilities, LevelProperties
from lazysparse.formats.levels.registry import (
    LAST_LEVEL_FORMATS,
    LEVEL_CAPABILITIES,
    LEVEL_CLASSES,
    LEVEL_PROPERTIES,
    PLAIN_KIND,
    RENAMED_KINDS,
    ROW_ROOTED_KINDS,
    STRUCTURED_KINDS,
    UNORDERED_KIND,
    UNORDERED_KINDS,
    all_located,
)

LEVEL_KINDS = tuple(LEVEL_CLASSES)

FORMAT_NAMES = ("dense", "csr", "csc", "coo", "csf", "dcsr", "hash", "bytemap", "dia", "bsr",
                "ell", "rle")

# named formats whose last level is a scatter-friendly level (leading levels dense)
_SCATTER_FORMATS = {n: k for n, k in LAST_LEVEL_FORMATS.items() if k not in STRUCTURED_KINDS}

# named formats of a structured last level under dense levels (dia and bsr: 2-D, row-major)
_STRUCTURED_FORMATS = {n: k for n, k in LAST_LEVEL_FORMATS.items() if k in STRUCTURED_KINDS}

_FIXED_2D = {"csr": (0, 1), "csc": (1, 0), "dia": (0, 1), "bsr": (0, 1)}


@dataclass(frozen=True)
class FormatSpec:
    """A layout: ``level_kinds[k]`` stores axis ``mode_order[k]``; ``name`` is the format's name.
    ``keeps_fills``: a kernel writing this layout stores every entry it reaches, those that
    compute the fill included (the optimizer asks it where a reader tells a reached fill from
    an implicit one: ``optimizer.unreached``); a tensor's own spec never has it."""

    name: str
    level_kinds: tuple[str, ...]
    mode_order: tuple[int, ...]
    keeps_fills: bool = False

    def __post_init__(self) -> None:
        kinds, order = tuple(self.level_kinds), tuple(int(m) for m in self.mode_order)
        object.__setattr__(self, "level_kinds", kinds)
        object.__setattr__(self, "mode_order", order)
        if sorted(order) != list(range(len(kinds))):
            raise ValueError(
                f"mode_order {order} must be a permutation of range({len(kinds)}) "
                f"(one entry per level)"
            )
        for k, kind in enumerate(kinds):
            if kind not in LEVEL_KINDS:
                raise ValueError(f"unknown level kind {kind!r}; expected one of {LEVEL_KINDS}")
            props = LEVEL_PROPERTIES[kind]
            if props.branchless and (k == 0 or not _chains(kinds[k - 1])):
                raise ValueError(
                    "a singleton level must follow a compressed-nonunique or singleton level "
                    f"(one child per parent), got level kinds {kinds}"
                )
            if not props.unique and (
                k + 1 >= len(kinds) or not LEVEL_PROPERTIES[kinds[k + 1]].branchless
            ):
                raise ValueError(
                    "a compressed-nonunique level must be followed by a singleton level, "
                    f"got level kinds {kinds}"
                )
            if kind in STRUCTURED_KINDS:
                _check_structured(kinds, order, k)

    @property
    def ndim(self) -> int:
        """Number of axes (= number of levels)."""
        return len(self.level_kinds)

    def level_properties(self) -> tuple[LevelProperties, ...]:
        """Properties of each level, outermost first (what code generation reasons about)."""
        return tuple(LEVEL_PROPERTIES[kind] for kind in self.level_kinds)

    def level_capabilities(self) -> tuple[LevelCapabilities, ...]:
        """Capabilities of each level, outermost first."""
        return tuple(LEVEL_CAPABILITIES[kind] for kind in self.level_kinds)

    def level_of_axis(self, axis: int) -> int:
        """Which level stores ``axis``."""
        return self.mode_order.index(axis)

    @property
    def ordered(self) -> bool:
        """Whether every level keeps siblings in ascending order (canonical storage)."""
        return all(p.ordered for p in self.level_properties())

    def keeping_fills(self) -> FormatSpec:
        """This layout written with every reached entry kept (see the class doc)."""
        return self if self.keeps_fills else replace(self, keeps_fills=True)

    @property
    def layout(self) -> FormatSpec:
        """This spec without ``keeps_fills``: the layout a written tensor has."""
        return replace(self, keeps_fills=False) if self.keeps_fills else self

    def ordered_spec(self) -> FormatSpec:
        """The same layout with every unordered level replaced by its ordered kind."""
        if self.ordered:
            return self
        kinds = tuple(UNORDERED_KINDS.get(k, k) for k in self.level_kinds)
        if any(k in RENAMED_KINDS for k in self.level_kinds):  # a sorted hash is no hash
            return replace(infer_spec(kinds, self.mode_order), keeps_fills=self.keeps_fills)
        return FormatSpec(self.name, kinds, self.mode_order, self.keeps_fills)

    def unordered_last(self) -> FormatSpec:
        """The same layout with its last level unordered when it is compressed (what a
        scattered write drains into without sorting); else itself."""
        if not self.level_kinds or self.level_kinds[-1] != PLAIN_KIND:
            return self
        kinds = self.level_kinds[:-1] + (UNORDERED_KIND,)
        return FormatSpec(self.name, kinds, self.mode_order, self.keeps_fills)


def _chains(kind: str) -> bool:
    """Whether a branchless (singleton) level may follow a level of kind ``kind``: one that
    repeats coordinates (COO's non-unique root) or is itself branchless."""
    props = LEVEL_PROPERTIES[kind]
    return not props.unique or props.branchless


def _check_structured(kinds: tuple[str, ...], order: tuple[int, ...], k: int) -> None:
    """A structured level is the last one, under dense levels only; banded and blocked
    store the columns of a row-major matrix (their positions are computed from the row)."""
    kind = kinds[k]
    if k != len(kinds) - 1 or not all_located(kinds[:k]):
        raise ValueError(f"a {kind!r} level must be the last level, under dense levels only; "
                         f"got level kinds {kinds}")
    if kind in ROW_ROOTED_KINDS and (len(kinds) != 2 or order != (0, 1)):
        raise ValueError(f"a {kind!r} level stores the columns of a row-major 2-D matrix "
                         f"(level kinds ('dense', {kind!r}), mode order (0, 1)); got level "
                         f"kinds {kinds}, mode order {order}")


def is_structured(spec: FormatSpec) -> bool:
    """Whether ``spec`` has a structured (banded, ELL, blocked, run-length) level."""
    return any(k in STRUCTURED_KINDS for k in spec.level_kinds)


def _kinds(name: str, ndim: int) -> tuple[str, ...]:
    """Level kinds of named format ``name`` with ``ndim`` axes (ValueError if it has none)."""
    if name in _STRUCTURED_FORMATS:
        kind = _STRUCTURED_FORMATS[name]
        if kind in ROW_ROOTED_KINDS and ndim != 2:
            raise ValueError(f"format {name!r} is for 2-D tensors, got ndim={ndim}; use "
                             "'ell' or 'rle' (n-d), 'coo' or 'csf'")
        if ndim == 0:
            raise ValueError(f"format {name!r} needs ndim >= 1; a 0-d tensor can be dense, "
                             "coo or csf")
        return ("dense",) * (ndim - 1) + (kind,)
    if name in _SCATTER_FORMATS:
        if ndim == 0:
            raise ValueError(f"format {name!r} needs ndim >= 1; a 0-d tensor can be dense, "
                             "coo or csf")
        return ("dense",) * (ndim - 1) + (_SCATTER_FORMATS[name],)
    if ndim == 0:
        if name in ("dense", "coo", "csf"):
            return ()
        raise ValueError(f"format {name!r} needs ndim == 2; a 0-d tensor can be dense, coo or csf")
    if name == "dense":
        return ("dense",) * ndim
    if name in ("csr", "csc", "dcsr"):
        if ndim != 2:
            raise ValueError(
                f"format {name!r} is for 2-D tensors, got ndim={ndim}; "
                "use 'coo' or 'csf' (n-d) or 'dense'"
            )
        return ("compressed", "compressed") if name == "dcsr" else ("dense", "compressed")
    if name == "coo":
        if ndim == 1:
            return ("compressed",)
        return ("compressed-nonunique",) + ("singleton",) * (ndim - 1)
    if name == "csf":
        return ("compressed",) * ndim
    raise ValueError(f"unknown format {name!r}; expected one of {FORMAT_NAMES} or a FormatSpec")


def format_spec(
    name: str | FormatSpec, ndim: int, mode_order: tuple[int, ...] | None = None
) -> FormatSpec:
    """The spec of named format ``name`` for ``ndim`` axes, optionally with a mode order.

    csr and csc have fixed mode orders; dense, coo, csf, dcsr, hash and bytemap accept any
    permutation.
    """
    if isinstance(name, FormatSpec):
        if name.ndim != ndim:
            raise ValueError(f"format spec {name} has {name.ndim} levels, tensor has ndim={ndim}")
        if mode_order is not None and tuple(mode_order) != name.mode_order:
            raise ValueError(f"mode_order {mode_order} conflicts with spec {name}")
        return name
    if not isinstance(name, str):
        raise TypeError(f"format must be a name or FormatSpec, got {type(name).__name__}")
    name = name.lower()
    kinds = _kinds(name, ndim)
    if name in _FIXED_2D:
        fixed = _FIXED_2D[name]
        if mode_order is not None and tuple(mode_order) != fixed:
            if name in _STRUCTURED_FORMATS:
                raise ValueError(f"format {name!r} stores a row-major matrix (mode order "
                                 f"{fixed}); got mode order {tuple(mode_order)}")
            other = "csc" if name == "csr" else "csr"
            raise ValueError(
                f"format {name!r} has mode order {fixed}; for mode order {tuple(mode_order)} "
                f"use format {other!r} (or 'dcsr'/'csf' with a mode_order)"
            )
        return FormatSpec(name, kinds, fixed)
    order = tuple(range(ndim)) if mode_order is None else _check_mode_order(mode_order, ndim)
    return FormatSpec(name, kinds, order)


def _check_mode_order(mode_order: Any, ndim: int) -> tuple[int, ...]:
    """``mode_order`` as a tuple of ints, ValueError unless a permutation of ``range(ndim)``."""
    try:
        order = tuple(int(m) for m in mode_order)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"mode_order must be a sequence of ints, got {mode_order!r}") from exc
    if sorted(order) != list(range(ndim)):
        raise ValueError(f"mode_order {order} is not a permutation of range({ndim})")
    return order


def infer_spec(level_kinds: tuple[str, ...], mode_order: tuple[int, ...]) -> FormatSpec:
    """The named spec matching these levels and mode order (``"custom"`` when none does); a
    structured level that cannot store that order (DIA transposed) reads as compressed."""
    ndim = len(level_kinds)
    if ndim == 0:
        return FormatSpec("dense", (), ())
    if any(k in STRUCTURED_KINDS for k in level_kinds):
        try:
            _check_structured(tuple(level_kinds), tuple(mode_order), ndim - 1)
        except ValueError:  # a structure of another axis order: the csr-like layout
            kinds = tuple(PLAIN_KIND if k in STRUCTURED_KINDS else k for k in level_kinds)
            return infer_spec(kinds, mode_order)
    for name in (*_SCATTER_FORMATS, *_STRUCTURED_FORMATS):
        if level_kinds[-1] == LAST_LEVEL_FORMATS[name] and all_located(level_kinds[:-1]):
            return FormatSpec(name, tuple(level_kinds), tuple(mode_order))
    if any(k in RENAMED_KINDS for k in level_kinds):
        return FormatSpec("custom", tuple(level_kinds), tuple(mode_order))
    if any(k in UNORDERED_KINDS for k in level_kinds):
        # named after the ordered format it sorts into (scipy's unsorted csr is still csr)
        ordered = tuple(UNORDERED_KINDS.get(k, k) for k in level_kinds)
        return FormatSpec(infer_spec(ordered, mode_order).name, tuple(level_kinds),
                          tuple(mode_order))
    preferred = ("csr", "csc", "dcsr", "csf", "coo", "dense")
    for name in preferred:
        try:
            spec = format_spec(name, ndim, None if name in _FIXED_2D else mode_order)
        except ValueError:
            continue
        if spec.level_kinds == tuple(level_kinds) and spec.mode_order == tuple(mode_order):
            return spec
    return FormatSpec("custom", tuple(level_kinds), tuple(mode_order))
