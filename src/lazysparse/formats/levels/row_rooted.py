"""What the row-rooted structured levels share (:class:`~.banded.Banded`, DIA, and
:class:`~.blocked.Blocked`, BSR): the level below a dense root over rows, whose positions
follow from the row number and the structure (diagonals, blocks); ordered and unique, not
compact (its positions interleave or leave room), iterated by position, built whole (no
append or insert), and a row reduction over it may run in its storage order."""

from __future__ import annotations

from typing import ClassVar

from lazysparse.formats.levels.base import Level, LevelCapabilities, LevelProperties

ROW_ROOTED_PROPERTIES = LevelProperties(
    full=False, ordered=True, unique=True, branchless=False, compact=False
)
ROW_ROOTED_CAPABILITIES = LevelCapabilities(iterate="position", locate=False, append=False,
                                            insert=False)


class RowRootedLevel(Level):
    """A structured level under a dense row level (DIA, BSR): the shared declarations."""

    PROPERTIES: ClassVar[LevelProperties] = ROW_ROOTED_PROPERTIES
    CAPABILITIES: ClassVar[LevelCapabilities] = ROW_ROOTED_CAPABILITIES
    structured = True
    row_rooted = True
    storage_row_sums = True
    __slots__ = ()

    @property
    def properties(self) -> LevelProperties:
        """Ordered, unique; not compact (positions laid out by the structure)."""
        return ROW_ROOTED_PROPERTIES

    @property
    def capabilities(self) -> LevelCapabilities:
        """Position iteration over the stored entries of a row, nothing appended."""
        return ROW_ROOTED_CAPABILITIES
