"""Public entry points: ``compile_query(query, env) -> Kernel`` and ``execute_plan(plan)``,
and the one place a query's runner is chosen (:func:`choose_runner`).

Each compute query's decisions are taken once (:func:`decide_query`: operand layouts,
``compile.planning.decisions.QueryDecisions``) and its runner chosen once and recorded there: NumPy
for small all-dense queries, run-length execution, the formats stage for a relayout, else
the compiled Numba kernel (``backends.numba.kernel``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lazysparse.formats.compiled.sync import Counters
from lazysparse.formats.tensor import Tensor
from lazysparse.kernels.backends.host import run_plan
from lazysparse.kernels.backends.numba import cache
from lazysparse.kernels.backends.numba.kernel import Kernel, cached_kernel, compiles
from lazysparse.kernels.backends.numpy_executor import run_numpy
from lazysparse.kernels.backends.relayout import run_relayout
from lazysparse.kernels.backends.run_length import run_run_length
from lazysparse.kernels.compile.planning.analysis import KernelInfo, QueryData
from lazysparse.kernels.compile.planning.decisions import QueryDecisions
from lazysparse.kernels.compile.planning.runners import (
    Nesting,
    Runner,
    is_relayout,
    nesting,
    numpy_eligible,
    run_length_eligible,
)
from lazysparse.kernels.compile.planning.structured_inputs import decide_layouts
from lazysparse.logic.nodes import Alias, Plan, Query

HostRunner = Callable[[KernelInfo, QueryData], Tensor]

#: compiled-tier work, counted so tests can bound it deterministically (issue 34: a native
#: solver's computes and kernel passes per iteration): ``plans`` run (one per compute) and
#: ``queries`` run (one per kernel pass or host runner call, ``Recipe.run``/``run_decided``)
RUNS = Counters("plans", "queries")


def _numpy(info: KernelInfo, data: QueryData) -> Tensor:
    cache.STATS.bump("numpy")
    return run_numpy(info, data)


def host_runner(runner: Runner) -> HostRunner:
    """The function that runs a query on ``runner`` where no compiled kernel does."""
    match runner:
        case Runner.NUMPY:
            return _numpy
        case Runner.RUN_LENGTH:
            return run_run_length
        case Runner.RELAYOUT:
            return run_relayout
    raise ValueError(f"runner {runner} runs a compiled kernel")


def _cheaper_runner(info: KernelInfo, data: QueryData, allow_numpy: bool) -> Runner | None:
    """The runner other than a compiled kernel that takes the query, if one does."""
    if allow_numpy and numpy_eligible(info, data):
        return Runner.NUMPY
    if allow_numpy and run_length_eligible(info, data):
        return Runner.RUN_LENGTH
    if is_relayout(info):
        return Runner.RELAYOUT
    return None


def _too_deep(d: QueryDecisions) -> NotImplementedError:
    """The error for a sparse kernel deeper than Python compiles."""
    return NotImplementedError(
        f"a kernel of {len(d.info.loop_order)} nested loops is more than Python compiles "
        f"(too many statically nested blocks); compute the sparse operands with fewer "
        f"dimensions (reshape) or as dense arrays")


def _compiles(d: QueryDecisions) -> bool:
    """Whether Python compiles the kernel of ``d``: from its analysis alone
    (``runners.nesting``), lowering it (into the kernel cache) only where the bounds
    straddle the limit."""
    match nesting(d.info):
        case Nesting.FITS:
            return True
        case Nesting.TOO_DEEP:
            return False
    return compiles(cached_kernel(d).source)


def choose_runner(d: QueryDecisions, *, allow_numpy: bool = True) -> QueryDecisions:
    """What runs a query, recorded in its decisions: NumPy for small all-dense ones,
    run-length execution, the formats stage for a relayout, else the compiled kernel.
    Nothing is lowered to choose (but a kernel whose depth only its source tells)."""
    cheaper = _cheaper_runner(d.info, d.data, allow_numpy)
    if cheaper is not None:
        return d.with_runner(cheaper)
    if _compiles(d):
        return d.with_runner(Runner.COMPILED)
    # Python refuses more than 20 nested blocks in a function (a loop per axis of a ~20-d
    # array): NumPy runs an all-dense kernel at any size; nothing runs a sparse one
    if numpy_eligible(d.info, d.data, any_size=True):
        return d.with_runner(Runner.NUMPY)
    raise _too_deep(d)


def decided_kernel(d: QueryDecisions) -> Kernel | None:
    """The compiled kernel of a decided query where that runs it (built once, cached)."""
    return cached_kernel(d) if d.runner is Runner.COMPILED else None


def decide_query(query: Query, env: dict[Alias, Any], *, allow_numpy: bool = True
                 ) -> tuple[QueryDecisions, Kernel | None]:
    """Every decision about one compute query, once: its operands' layouts, its runner,
    and its compiled kernel where that runs it."""
    d = choose_runner(decide_layouts(query, env), allow_numpy=allow_numpy)
    return d, decided_kernel(d)


def explain_query(query: Query, env: dict[Alias, Any]) -> tuple[QueryDecisions, Kernel]:
    """A query's decisions and its compiled kernel, built even where another runner takes
    the query (``xp.explain`` shows its source); the runner is None where nothing can
    run it."""
    d = decide_layouts(query, env)
    try:
        d = choose_runner(d)
    except NotImplementedError:
        pass
    return d, cached_kernel(d)


def run_decided(d: QueryDecisions, kernel: Kernel | None) -> Tensor:
    """Run a decided query on its runner (``kernel``: the compiled one's)."""
    RUNS.bump("queries")
    if d.runner is None:  # nothing runs it (a sparse kernel too deep for Python)
        raise _too_deep(d)
    if d.runner is Runner.COMPILED:
        return (kernel if kernel is not None else cached_kernel(d))(d.data)
    return host_runner(d.runner)(d.info, d.data)


def compile_query(query: Query, env: dict[Alias, Any]) -> Kernel:
    """The kernel of one normal-form compute query (env maps Alias -> Tensor)."""
    return cached_kernel(decide_layouts(query, env))


def run_query(query: Query, env: dict[Alias, Any], *, allow_numpy: bool = True) -> Tensor:
    """Evaluate one compute query (see :func:`choose_runner`)."""
    return run_decided(*decide_query(query, env, allow_numpy=allow_numpy))


def _check_input(alias: Alias, t: Any) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"input {alias.name} is not a lazysparse Tensor: {type(t).__name__}")


def execute_plan(plan: Plan) -> tuple[Tensor, ...]:
    """Run a normal-form plan; returns the tensors its ``Produces`` names."""
    return run_plan(plan, run_query, _check_input)


__all__ = ["RUNS", "HostRunner", "Kernel", "choose_runner", "compile_query", "decide_query",
           "decided_kernel", "execute_plan", "explain_query", "host_runner", "run_decided",
           "run_query"]
