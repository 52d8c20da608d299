"""``explain``: the plan before and after optimization, and each kernel it runs.

Nothing is computed: intermediate results are stood in for by empty tensors of their
chosen format, which is all code generation looks at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.formats import Compressed, Dense, FormatSpec, Singleton, Tensor
from lazysparse.logic.nodes import Alias, Plan, Query, Reformat, Table
from lazysparse.optimizer.analysis import plan_infos
from lazysparse.optimizer.pipeline import optimize


@dataclass(frozen=True)
class KernelExplanation:
    """One kernel of an optimized plan."""

    alias: str
    query: Query
    loop_order: tuple[str, ...]
    output_format: FormatSpec
    inputs: tuple[str, ...]
    source: str

    def __str__(self) -> str:
        fmt = self.output_format
        return (f"kernel {self.alias} = f({', '.join(self.inputs)})\n"
                f"  loop order (outermost first): {', '.join(self.loop_order) or '()'}\n"
                f"  output format: {fmt.name} levels={fmt.level_kinds} "
                f"mode_order={fmt.mode_order}\n"
                f"  source:\n" + _indent(self.source, 4))


@dataclass(frozen=True)
class Explanation:
    """What running a plan would do: ``before``/``after`` plans and the ``kernels``."""

    before: Plan
    after: Plan
    kernels: tuple[KernelExplanation, ...]

    def __str__(self) -> str:
        parts = ["== plan ==", _show(self.before), "== optimized plan ==", _show(self.after),
                 f"== {len(self.kernels)} kernel(s) =="]
        parts += [str(k) for k in self.kernels]
        return "\n".join(parts)

    def __repr__(self) -> str:
        return (f"Explanation({len(self.kernels)} kernel(s): "
                + "; ".join(f"{k.alias} loops {','.join(k.loop_order)} -> "
                            f"{k.output_format.name}" for k in self.kernels) + ")")


def _indent(text: str, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + line for line in text.splitlines())


def _show(plan: Plan) -> str:
    try:
        return str(plan)
    except ImportError:  # the logic printer is not installed yet
        return repr(plan)


def placeholder(shape: tuple[int, ...], spec: FormatSpec, dtype: Any, fill: Any) -> Tensor:
    """An empty tensor with ``spec``'s levels (no entries), standing in for a result."""
    levels = []
    parents = 1
    for kind, m in zip(spec.level_kinds, spec.mode_order, strict=True):
        n = shape[m]
        if kind == "dense":
            levels.append(Dense(n))
            parents *= n
        elif kind == "singleton":
            levels.append(Singleton(n, np.zeros(0, np.int64)))
        else:
            levels.append(Compressed(n, np.zeros(parents + 1, np.int64), np.zeros(0, np.int64),
                                     unique=kind == "compressed"))
            parents = 0
    nvals = parents if levels else 1
    values = np.zeros(nvals if nvals < 2**20 else 0, dtype=dtype)
    return Tensor(shape, levels, spec.mode_order, values, fill, check=False)


def explain_plan(plan: Plan) -> Explanation:
    """Optimize ``plan`` and describe every kernel of the result."""
    from lazysparse.kernels import compile_query

    after = optimize(plan)
    infos = plan_infos(after)
    env: dict[Alias, Any] = {}
    kernels = []
    for body in after.bodies:
        if not isinstance(body, Query):
            continue
        if isinstance(body.rhs, Table):
            env[body.lhs] = body.rhs.tns.val
            continue
        assert isinstance(body.rhs, Reformat)
        spec: FormatSpec = body.rhs.tns.val
        k = compile_query(body, env)
        kernels.append(KernelExplanation(body.lhs.name, body, tuple(k.loop_order),
                                         k.output_format, tuple(k.inputs), k.source))
        info = infos[body.lhs]
        env[body.lhs] = placeholder(info.shape, spec, k.info.out_dtype, info.fill
                                    if info.fill is not None else 0)
    return Explanation(plan, after, tuple(kernels))


def explain(*arrays: Any) -> Explanation:
    """``xp.explain(*arrays)``: how computing ``arrays`` together would run (a Plan works too)."""
    if len(arrays) == 1 and isinstance(arrays[0], Plan):
        return explain_plan(arrays[0])
    from lazysparse.api.execution import build_plan
    from lazysparse.api.lazy_array import LazyArray

    for a in arrays:
        if not isinstance(a, LazyArray):
            raise TypeError(f"explain takes lazysparse arrays, got {type(a).__name__}")
    if not arrays:
        raise TypeError("explain needs at least one array")
    return explain_plan(build_plan(tuple(arrays)))
