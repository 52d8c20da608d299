"""Beyond the standard: storage formats and interoperability (``asformat``, ``to_scipy``,
``to_numpy``, ``to_cupyx``, ``compute``)."""

from __future__ import annotations

from typing import Any

from lazysparse import formats
from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.operands import as_array
from lazysparse.api.array.plan_nodes import fresh_fields, identify
from lazysparse.formats.device import to_cupyx as cupyx_matrix
from lazysparse.formats.levels import Blocked
from lazysparse.formats.levels.registry import level_class
from lazysparse.logic.nodes import Relabel


def asformat(x: Any, format: Any, /, *, blocksize: Any = None) -> LazyArray:  # noqa: A002
    """``x`` stored in ``format`` (a name such as ``"csr"``, ``"dia"``, ``"bsr"``, ``"ell"``,
    ``"rle"`` or a ``FormatSpec``). Lazy: the result's query gets a ``Reformat`` that the
    optimizer keeps. ``blocksize=(R, C)`` (``"bsr"`` only) fixes the block shape, which
    must divide ``x``'s shape; it depends on the data, so ``x`` is computed first (without
    it a block shape is chosen from the stored entries)."""
    x = as_array(x, "asformat")
    spec = formats.format_spec(format, x.ndim)
    if blocksize is not None:
        return _asformat_blocked(x, spec, blocksize)
    if x.format == spec.name and x.requested_format in (None, spec):
        t = x.result
        if t is not None and t.spec == spec:
            return x
    if x.result is not None:
        # data already there: convert it now (no plan to optimize); a device tensor is
        # converted on the host (``from_tensor`` copies it back)
        return LazyArray.from_tensor(formats.convert(x.tensor(), spec), x.device)
    body = Relabel(x.expr, fresh_fields(x.ndim))
    return LazyArray(identify(body), x.shape, x.dtype, x.fill_value, x.device, spec.name,
                     spec)


def _asformat_blocked(x: LazyArray, spec: formats.FormatSpec, blocksize: Any) -> LazyArray:
    """``x`` as a bsr array of block shape ``blocksize`` (checked before ``x`` is
    computed: TypeError for a non-pair, ValueError for a shape it does not divide or a
    format other than bsr)."""
    from lazysparse.formats.structured import check_blocksize

    if not spec.level_kinds or level_class(spec.level_kinds[-1]) is not Blocked:
        raise ValueError(f"asformat: blocksize is for format 'bsr' only, got format "
                         f"{spec.name!r}")
    try:
        block = check_blocksize(blocksize, x.shape)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"asformat: {exc}") from None
    t = x.tensor()
    out = t.asformat(spec, blocksize=block)
    return x if out is t else LazyArray.from_tensor(out, x.device)


def to_scipy(x: Any, /) -> Any:
    """``x`` (computed) as a ``scipy.sparse`` array (2-D)."""
    x = as_array(x, "to_scipy")
    if x.ndim != 2:
        raise ValueError(f"to_scipy: scipy.sparse holds 2-D arrays, got shape {x.shape}")
    return x.tensor().to_scipy()


def to_numpy(x: Any, /) -> Any:
    """``x`` (computed) as a NumPy array."""
    x = as_array(x, "to_numpy")
    return x.__array__()


def to_cupyx(x: Any, /) -> Any:
    """``x`` (computed, 2-D, fill value 0) as a ``cupyx.scipy.sparse`` CSR/CSC matrix on the
    GPU (sharing the device arrays of a cuda array; a cpu array is copied up)."""
    x = as_array(x, "to_cupyx")
    if x.ndim != 2:
        raise ValueError(f"to_cupyx: cupyx.scipy.sparse holds 2-D arrays, got shape {x.shape}")
    if x.device.name != "cuda":
        x = x.to_device("cuda")
    return cupyx_matrix(x.stored())
