"""The kernel calling convention: typed parameters with roles.

Every chunk function of a kernel (CPU or GPU) takes the same leading parameters, one per
operand array, extent, constant and output size. A :class:`KernelParam` names one and says
what it holds (its :class:`Role`, the operand slot / level / field it belongs to); hosts
find arguments by role (``KernelParams.position(Role.OUT_SIZE)``), never by position or
by name, and :func:`bind` computes the arguments of one call in order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Any

import numpy as np

from lazysparse.formats.levels.base import LevelParam
from lazysparse.formats.levels.hashed import table_shift
from lazysparse.formats.levels.registry import level_class
from lazysparse.kernels.compile.planning.analysis import KernelInfo, QueryData
from lazysparse.kernels.compile.planning.output_plan import OutputMode, OutputPlan


class Role(Enum):
    """What a kernel parameter holds."""

    LEVEL_SIZE = "level size"  # a located or non-compact level's size (``a<s>_n<k>``)
    LEVEL_PTR = "level ptr"  # a compressed level's position bounds (``a<s>_ptr<k>``)
    LEVEL_IDX = "level idx"  # an iterated level's coordinates (``a<s>_idx<k>``)
    LEVEL_TABLE = "level table"  # a hashed level's open-addressing table (``a<s>_table<k>``)
    LEVEL_SHIFT = "level shift"  # that table's hash shift, 64 - log2(len) (``a<s>_shift<k>``)
    LEVEL_MASK = "level mask"  # a bytemap level's stored-position mask (``a<s>_mask<k>``)
    LEVEL_OFFSETS = "level offsets"  # a banded level's diagonals (``a<s>_off<k>``)
    LEVEL_NDIAG = "level diagonals"  # their count (``a<s>_nd<k>``)
    LEVEL_LENGTH = "level length"  # values per diagonal (``a<s>_len<k>``)
    LEVEL_LIMIT = "level limit"  # columns a diagonal reaches, min(size, length) (``a<s>_lim<k>``)
    LEVEL_WIDTH = "level width"  # an ELL level's slots per parent (``a<s>_w<k>``)
    LEVEL_BLOCK_ROWS = "level block rows"  # a blocked level's R (``a<s>_br<k>``)
    LEVEL_BLOCK_COLS = "level block cols"  # and C (``a<s>_bc<k>``)
    LEVEL_END = "level end"  # a run-length level's run ends (``a<s>_end<k>``)
    VALUES = "values"  # an operand's stored values (``a<s>_vals``)
    FILL = "fill"  # an operand's fill value (``a<s>_fill``)
    EXTENT = "extent"  # a loop field's extent (``n_<var>``)
    CONST = "const"  # a scalar constant of the pointwise tree (``k<i>``)
    INIT = "init"  # the reduction's initial value (the result fill without one)
    OUT_FILL = "out fill"  # the result's fill value
    RED_ID = "reduction identity"  # presets per-chunk partials (else the init)
    OUT_STRIDE = "output stride"  # entries per position of a dense output level
    OUT_SIZE = "output size"  # entries of the dense output (or of a shared pattern)
    DENSE_SIZE = "dense size"  # positions of the dense output levels above sparse ones

    @property
    def array(self) -> bool:
        """Whether arguments of this role are arrays (else scalars)."""
        return self in (Role.LEVEL_PTR, Role.LEVEL_IDX, Role.LEVEL_TABLE, Role.LEVEL_MASK,
                        Role.LEVEL_OFFSETS, Role.LEVEL_END, Role.VALUES)


@dataclass(frozen=True)
class KernelParam:
    """One leading parameter: its name in the loop IR, its role and what it belongs to
    (``slot``: operand, constant or output level; ``level``: operand level; ``field``)."""

    name: str
    role: Role
    slot: int | None = None
    level: int | None = None
    field: str | None = None


@dataclass(frozen=True)
class KernelParams:
    """The leading parameters of a kernel's chunk functions, in order."""

    params: tuple[KernelParam, ...]

    def __iter__(self) -> Iterator[KernelParam]:
        return iter(self.params)

    @property
    def names(self) -> tuple[str, ...]:
        """The parameter names, in order."""
        return tuple(p.name for p in self.params)

    @cached_property
    def _first(self) -> dict[Role, int]:
        """The position of the first parameter of each role (hosts look these up per call)."""
        out: dict[Role, int] = {}
        for i, p in enumerate(self.params):
            out.setdefault(p.role, i)
        return out

    @cached_property
    def binders(self) -> tuple[Callable[[_Call, KernelParam], Any], ...]:
        """Per parameter, the function computing its argument."""
        return tuple(_BIND[p.role] for p in self.params)

    def position(self, role: Role, slot: int | None = None, level: int | None = None,
                 field: str | None = None) -> int:
        """The position of the parameter with ``role`` (of operand or constant ``slot``,
        its ``level``, loop ``field``: whichever are given)."""
        if slot is None and level is None and field is None and role in self._first:
            return self._first[role]
        for i, p in enumerate(self.params):
            if (p.role is role and (slot is None or p.slot == slot)
                    and (level is None or p.level == level)
                    and (field is None or p.field == field)):
                return i
        raise KeyError(f"kernel has no {role.value} parameter for slot {slot}, level "
                       f"{level}, field {field}")

    def named(self, role: Role, slot: int | None = None, level: int | None = None,
              field: str | None = None) -> str:
        """The name of the parameter :meth:`position` finds."""
        return self.params[self.position(role, slot, level, field)].name

    def extent_names(self) -> frozenset[str]:
        """Names of the loop extents (what workspace sizes may be built from)."""
        return frozenset(p.name for p in self.params if p.role is Role.EXTENT)


# the role of each parameter a level declares (``Level.kernel_params``, issue 16)
_LEVEL_ROLES: dict[LevelParam, Role] = {
    LevelParam.PTR: Role.LEVEL_PTR,
    LevelParam.IDX: Role.LEVEL_IDX,
    LevelParam.END: Role.LEVEL_END,
    LevelParam.OFFSETS: Role.LEVEL_OFFSETS,
    LevelParam.NDIAG: Role.LEVEL_NDIAG,
    LevelParam.LENGTH: Role.LEVEL_LENGTH,
    LevelParam.LIMIT: Role.LEVEL_LIMIT,
    LevelParam.WIDTH: Role.LEVEL_WIDTH,
    LevelParam.BLOCK_ROWS: Role.LEVEL_BLOCK_ROWS,
    LevelParam.BLOCK_COLS: Role.LEVEL_BLOCK_COLS,
}


def kernel_params(info: KernelInfo, out: OutputPlan, cvar: dict[str, str]) -> KernelParams:
    """The leading parameters of a kernel (``cvar``: the loop variable of each field)."""
    ps: list[KernelParam] = []
    for op in info.operands:
        s = op.slot
        for k, lv in enumerate(op.levels):
            if lv.located:
                ps.append(KernelParam(f"a{s}_n{k}", Role.LEVEL_SIZE, s, k, lv.field))
                continue
            own = level_class(lv.kind).kernel_params
            if own:
                ps += [KernelParam(f"a{s}_{n}{k}", _LEVEL_ROLES[what], s, k, lv.field)
                       for n, what in own]
                continue
            if lv.caps.locate or not lv.props.compact:  # hashed, bytemap: located by size
                ps.append(KernelParam(f"a{s}_n{k}", Role.LEVEL_SIZE, s, k, lv.field))
            if lv.caps.locate and lv.props.compact:  # hashed: its table
                ps += [KernelParam(f"a{s}_table{k}", Role.LEVEL_TABLE, s, k, lv.field),
                       KernelParam(f"a{s}_shift{k}", Role.LEVEL_SHIFT, s, k, lv.field)]
            if lv.caps.locate and not lv.props.compact:  # bytemap: its mask
                ps.append(KernelParam(f"a{s}_mask{k}", Role.LEVEL_MASK, s, k, lv.field))
            if not lv.chained:
                ps.append(KernelParam(f"a{s}_ptr{k}", Role.LEVEL_PTR, s, k, lv.field))
            ps.append(KernelParam(f"a{s}_idx{k}", Role.LEVEL_IDX, s, k, lv.field))
        ps += [KernelParam(f"a{s}_vals", Role.VALUES, s), KernelParam(f"a{s}_fill", Role.FILL, s)]
    ps += [KernelParam(f"n_{cvar[f]}", Role.EXTENT, field=f) for f in info.loop_order]
    ps += [KernelParam(f"k{i}", Role.CONST, i) for i in range(len(info.const_dtypes))]
    ps += [KernelParam("init", Role.INIT), KernelParam("ofill", Role.OUT_FILL),
           KernelParam("red_id", Role.RED_ID)]
    ps += [KernelParam(f"os{m}", Role.OUT_STRIDE, m) for m in range(out.dense_prefix)]
    ps += [KernelParam("osize", Role.OUT_SIZE), KernelParam("dsize", Role.DENSE_SIZE)]
    return KernelParams(tuple(ps))


# ---------------------------------------------------------------------- binding


def scalar(v: Any, dtype: np.dtype) -> Any:
    """``v`` as a NumPy scalar of ``dtype`` (complex to real keeps the real part)."""
    if type(v) is dtype.type:  # already one (most fills and inits): no conversion
        return v
    with np.errstate(all="ignore"):
        arr = np.asarray(v)
        if arr.dtype.kind == "c" and dtype.kind != "c":
            arr = arr.real
        return arr.astype(dtype)[()]


# the reduction identity of each kernel's accumulator, by identity of its info (kept with
# it, so an id is not reused while here): a function of the info alone, not of the call
_RED_IDS: dict[int, tuple[KernelInfo, Any]] = {}
_RED_IDS_CAPACITY = 1024


class _Call:
    """What one call's arguments are computed from (a plain slotted class: one is made per
    kernel call)."""

    __slots__ = ("info", "data", "out", "sizes")

    def __init__(self, info: KernelInfo, data: QueryData, out: OutputPlan,
                 sizes: tuple[int, ...]) -> None:
        self.info = info
        self.data = data
        self.out = out
        self.sizes = sizes  # result extents in storage order

    def init(self) -> Any:
        info = self.info
        v = self.data.init if info.reduce_op is not None else self.data.out_fill
        return scalar(v, info.acc_dtype)

    def red_id(self) -> Any:
        info = self.info
        found = _RED_IDS.get(id(info))
        if found is None or found[0] is not info:
            rop = info.reduce_op
            ident = rop.identity_for(info.acc_dtype) if rop is not None else None
            found = (info, None if ident is None else scalar(ident, info.acc_dtype))
            if len(_RED_IDS) >= _RED_IDS_CAPACITY:
                _RED_IDS.clear()
            _RED_IDS[id(info)] = found
        return found[1] if found[1] is not None else self.init()

    def out_size(self) -> Any:
        if self.out.mode is OutputMode.SHARED:
            return np.int64(self.data.tensors[self.out.shared_slot].values.shape[0])
        return np.int64(math.prod(self.sizes))


def _level(c: _Call, p: KernelParam) -> Any:
    return c.data.tensors[p.slot].levels[p.level]


_BIND: dict[Role, Callable[[_Call, KernelParam], Any]] = {
    Role.LEVEL_SIZE: lambda c, p: np.int64(_level(c, p).size),
    Role.LEVEL_PTR: lambda c, p: _level(c, p).ptr,
    Role.LEVEL_IDX: lambda c, p: _level(c, p).idx,
    Role.LEVEL_TABLE: lambda c, p: _level(c, p).table,
    Role.LEVEL_SHIFT: lambda c, p: np.int64(table_shift(_level(c, p).table.size)),
    Role.LEVEL_MASK: lambda c, p: _level(c, p).mask,
    Role.LEVEL_OFFSETS: lambda c, p: _level(c, p).offsets,
    Role.LEVEL_NDIAG: lambda c, p: np.int64(_level(c, p).offsets.size),
    Role.LEVEL_LENGTH: lambda c, p: np.int64(_level(c, p).length),
    Role.LEVEL_LIMIT: lambda c, p: np.int64(_level(c, p).limit),
    Role.LEVEL_WIDTH: lambda c, p: np.int64(_level(c, p).width),
    Role.LEVEL_BLOCK_ROWS: lambda c, p: np.int64(_level(c, p).block[0]),
    Role.LEVEL_BLOCK_COLS: lambda c, p: np.int64(_level(c, p).block[1]),
    Role.LEVEL_END: lambda c, p: _level(c, p).end,
    Role.VALUES: lambda c, p: c.data.tensors[p.slot].values,
    Role.FILL: lambda c, p: scalar(c.data.tensors[p.slot].fill_value,
                                   c.info.operands[p.slot].dtype),
    Role.EXTENT: lambda c, p: np.int64(c.data.extents[p.field]),
    Role.CONST: lambda c, p: scalar(c.data.consts[p.slot], c.info.const_dtypes[p.slot]),
    Role.INIT: lambda c, p: c.init(),
    Role.OUT_FILL: lambda c, p: scalar(c.data.out_fill, c.info.out_dtype),
    Role.RED_ID: lambda c, p: c.red_id(),
    Role.OUT_STRIDE: lambda c, p: np.int64(math.prod(c.sizes[p.slot + 1:c.out.dense_prefix])),
    Role.OUT_SIZE: lambda c, p: c.out_size(),
    Role.DENSE_SIZE: lambda c, p: np.int64(math.prod(c.sizes[:c.out.dense_prefix])),
}


def bind(params: KernelParams, info: KernelInfo, data: QueryData,
         out: OutputPlan) -> list[Any]:
    """The arguments of one call, in parameter order."""
    shape = data.out_shape
    sizes = tuple([shape[m] for m in info.out_spec.mode_order])
    call = _Call(info, data, out, sizes)
    return [b(call, p) for b, p in zip(params.binders, params.params, strict=True)]


__all__ = ["KernelParam", "KernelParams", "Role", "bind", "kernel_params", "scalar"]
