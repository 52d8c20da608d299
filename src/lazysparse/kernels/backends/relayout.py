"""Queries that only lay one sparse operand out again (a transposed or re-ordered copy).

The optimizer makes such a copy when an access must be concordant with a loop order that
its storage order is not (``sum(A.T * B)`` with CSR ``A`` and ``B``). A generated kernel
would scatter every entry into a sort buffer; the formats stage's conversions do the same
in linear time (a counting sort per level, as scipy's ``tocsc``). The result is the same
tensor: the same stored entries, values and fill value, in the requested format.
"""

from __future__ import annotations

from lazysparse.formats.conversion.convert import convert
from lazysparse.formats.layouts import canonical
from lazysparse.formats.specs import is_structured
from lazysparse.formats.tensor import Tensor
from lazysparse.kernels.compile.planning.analysis import KernelInfo, QueryData
from lazysparse.kernels.compile.planning.runners import result_spec


def run_relayout(info: KernelInfo, data: QueryData) -> Tensor:
    """The operand of a relayout query (``compile.planning.runners.is_relayout``) in the query's
    output format."""
    t = data.tensors[0]
    axis_fields = info.operands[0].axis_fields
    perm = [axis_fields.index(f) for f in info.out_fields]  # result axis m = operand's perm[m]
    if perm != list(range(len(perm))):
        if is_structured(t.spec):  # a structure describes one axis order (DIA: row-major)
            t = canonical(t)
        # the same storage read with the result's axis numbers: a view, nothing moves
        order = tuple(perm.index(m) for m in t.mode_order)
        t = Tensor(tuple(t.shape[a] for a in perm), t.levels, order, t.values, t.fill_value,
                   check=False)
    return convert(t, result_spec(info))
