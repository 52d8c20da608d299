"""How an array shows itself without computing: ``repr`` of an uncomputed array and the
HTML display (``_repr_html_``) of every array.

A stored array (computed, or a leaf) reports its exact facts: format, stored entries,
density, memory of its storage arrays, and a thumbnail of its sparsity pattern when 2-D
(``api/array/thumbnail.py``). An uncomputed array reports what the optimizer plans for it
(``engine.preview_plan``: the optimized plan's result format, its estimated stored entries
and the kernels it would run; nothing is compiled or run) and its pending operations (the
plan nodes of its uncomputed history). Displaying never runs a kernel.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from lazysparse.api.array.devices import is_device_tensor
from lazysparse.api.array.held_values import held_values
from lazysparse.api.array.live import BY_ALIAS
from lazysparse.api.array.materialize import build_plan, stored_tensor
from lazysparse.api.array.memo import memoized
from lazysparse.api.array.thumbnail import Thumbnail, thumbnail
from lazysparse.engine import preview_plan
from lazysparse.logic.nodes import Aggregate, LogicNode, MapJoin, Reformat, Subquery, Table

if TYPE_CHECKING:
    from lazysparse.api.array.lazy_array import LazyArray


class Source(Enum):
    """Where the displayed facts come from."""

    STORED = "stored"  # the array's stored tensor: exact
    PLANNED = "planned"  # the optimizer's plan for the uncomputed array: estimated
    UNPLANNED = "not planned"  # the plan failed (the error shows when computed)


@dataclass(frozen=True)
class Summary:
    """What the display shows of one array (``nnz``, ``memory``, ``kernels``: None when
    unknown)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    device: str
    fill_value: Any
    source: Source
    format: str | None
    level_kinds: tuple[str, ...] | None
    nnz: float | None
    memory: int | None
    pending: int
    kernels: int | None = None
    kept: int = 0
    ran_before: bool = False
    queued_writes: bool = False
    thumbnail: Thumbnail | None = None
    problem: str | None = None

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def density(self) -> float | None:
        """Stored fraction of the elements (None when unknown or the array is empty)."""
        if self.nnz is None or self.size == 0:
            return None
        return min(1.0, self.nnz / self.size)


def storage_bytes(t: Any) -> int:
    """Bytes of a stored tensor's arrays: values and every level's index arrays."""
    total = int(t.values.nbytes)
    for lv in t.levels:
        total += sum(int(a.nbytes) for a in lv.arrays().values())
    return total


def pending_operations(expr: LogicNode) -> int:
    """The operations (elementwise maps, reductions, format changes) of the uncomputed
    history of ``expr``, each shared one once; computed subqueries are data."""
    seen: set[int] = set()
    stack = [expr]
    count = 0
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, Subquery) and (isinstance(n.arg, Table) or memoized(n.lhs) is not None):
            continue
        count += isinstance(n, MapJoin | Aggregate | Reformat)
        stack.extend(n.children)
    return count


def summarize(x: LazyArray) -> Summary:
    """The facts of ``x``, without computing it."""
    t = x._result if x._result is not None else stored_tensor(x._expr)
    common: dict[str, Any] = dict(shape=x.shape, dtype=x.dtype, device=x.device.name)
    if t is not None:
        pic = None if is_device_tensor(t) else thumbnail(t)
        dirty = x._update is not None and x._update.dirty
        return Summary(**common, fill_value=t.fill_value, source=Source.STORED,
                       format=t.format, level_kinds=tuple(t.spec.level_kinds), nnz=t.nnz,
                       memory=storage_bytes(t), pending=0, queued_writes=dirty,
                       thumbnail=pic)
    return _planned(x, common)


def _planned(x: LazyArray, common: dict[str, Any]) -> Summary:
    """The optimizer's plan for an uncomputed ``x``, with the held values a compute of it
    would keep (``api.held_values``: the same plan ``xp.compute(x)`` runs); the array's own
    facts when planning fails (an error the compute will raise: the display still shows
    the array)."""
    try:
        kept = held_values((x,), BY_ALIAS)
        plan = build_plan((x, *(k.array for k in kept)))
        preview = preview_plan(plan, x.device.name)
    except (ValueError, TypeError, NotImplementedError) as e:
        requested = x.requested_format
        return Summary(**common, fill_value=x.fill_value, source=Source.UNPLANNED,
                       format=requested.name if requested is not None else x.format,
                       level_kinds=None, nnz=None, memory=None, pending=pending_operations(x._expr),
                       problem=f"{type(e).__name__}: {e}")
    r = preview.results[0]
    return Summary(**common, fill_value=r.fill_value, source=Source.PLANNED, format=r.format,
                   level_kinds=r.level_kinds, nnz=r.nnz, memory=None,
                   pending=pending_operations(x._expr), kernels=preview.kernels,
                   kept=len(kept), ran_before=preview.ran_before)


# ---------------------------------------------------------------- text


def _plural(n: int, word: str) -> str:
    """``n word`` or ``n words``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def lazy_repr(x: LazyArray) -> str:
    """``repr`` of an uncomputed array: its eager metadata and pending operations (Dask,
    Polars style), never its values."""
    fmt = ""
    if x.requested_format is not None:
        fmt = f", format={x.requested_format.name!r} (requested)"
    elif x.format is not None:
        fmt = f", format={x.format!r}"
    ops = _plural(pending_operations(x._expr), "pending operation")
    return (f"<lazysparse array shape={x.shape} dtype={x.dtype}{fmt}, "
            f"fill_value={x.fill_value!r}, lazy: {ops}>")


# ---------------------------------------------------------------- html


def _count(n: float, exact: bool) -> str:
    """A stored-entry count: exact with thousands separators, or an estimate (``≈``; two
    significant digits below 10, so a tiny estimate does not read as none)."""
    if exact:
        return f"{int(n):,}"
    return f"≈ {n:,.0f}" if n >= 10 else f"≈ {n:.2g}"


def _scalar_text(v: Any) -> str:
    """A NumPy scalar as Python writes its value (``0.0``, ``nan``, ``False``)."""
    return repr(v.item()) if isinstance(v, np.generic) else repr(v)


def _percent(p: float) -> str:
    """A fraction as a percentage, three significant digits."""
    return f"{100 * p:.3g} %"


def _rows(s: Summary) -> list[tuple[str, str]]:
    """(field, value) rows of the display table."""
    exact = s.source is Source.STORED
    fmt = s.format or "unknown"
    if s.level_kinds:
        fmt += f" [{', '.join(s.level_kinds)}]"
    rows = [("shape", str(s.shape)), ("dtype", str(s.dtype)),
            ("format", f"{fmt} ({s.source.value})"), ("fill value", _scalar_text(s.fill_value))]
    if s.nnz is not None:
        label = "stored entries" if exact else "stored entries (estimated)"
        rows.append((label, _count(s.nnz, exact)))
        if s.density is not None:
            rows.append(("density", _percent(s.density)))
    rows.append(("memory", format_bytes(s.memory) if s.memory is not None
                 else "not allocated (lazy)"))
    rows.append(("device", s.device))
    if not exact:
        rows.append(("pending operations", str(s.pending)))
    if s.kernels is not None:
        notes = [f"computing it also keeps {_plural(s.kept, 'held value')}"] if s.kept else []
        notes += ["a plan of this structure ran before"] if s.ran_before else []
        rows.append(("kernels", "; ".join([f"{s.kernels} planned", *notes])))
    if s.queued_writes:
        rows.append(("queued writes", "merged into the storage when next read"))
    if s.problem is not None:
        rows.append(("plan", s.problem))
    return rows


def format_bytes(n: int) -> str:
    """``n`` bytes, human readable (decimal units), with the exact count past 1 kB."""
    if n < 1000:
        return f"{n:,} B"
    value, units = n / 1000, ["kB", "MB", "GB", "TB"]
    while value >= 1000 and len(units) > 1:
        value, units = value / 1000, units[1:]
    return f"{value:.3g} {units[0]} ({n:,} B)"


def to_html(s: Summary) -> str:
    """The HTML display of a summary: a table of its fields, and its thumbnail."""
    state = "stored" if s.source is Source.STORED else "lazy"
    cells = "".join(f'<tr><th style="text-align:left">{html.escape(k)}</th>'
                    f'<td style="text-align:left">{html.escape(v)}</td></tr>'
                    for k, v in _rows(s))
    table = (f'<table class="lazysparse-fields"><caption style="text-align:left">'
             f'<b>lazysparse array</b> ({state})</caption>{cells}</table>')
    pic = f'<div style="margin-left:1em">{s.thumbnail.html()}</div>' if s.thumbnail else ""
    return (f'<div class="lazysparse-array" style="display:flex; align-items:flex-start">'
            f"{table}{pic}</div>")


def array_html(x: LazyArray) -> str:
    """``_repr_html_`` of ``x`` (computes nothing)."""
    return to_html(summarize(x))
