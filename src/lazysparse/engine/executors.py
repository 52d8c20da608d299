"""Executors: what runs a plan the api built, picked by device and ``LAZYSPARSE_EXECUTOR``.

:func:`executor_for` is the one place an executor is chosen: plans over ``cuda`` arrays run
on the CUDA backend, ``cpu`` plans on the executor ``LAZYSPARSE_EXECUTOR`` names:
``compiled`` (the default: optimizer, then generated Numba kernels) or ``reference`` (the
dense NumPy interpreter, the oracle). Both compiled paths look their optimized plan up in
the plan cache (``engine.plan_cache``) under their device's passes. The kernels are imported
on first use, so ``import lazysparse`` loads no backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lazysparse.engine.plan_cache import CachedPlan, lookup, persist
from lazysparse.engine.tiers import run_tiered
from lazysparse.formats.env_settings import EnvSetting
from lazysparse.logic.interpreter import interpret
from lazysparse.logic.nodes import Immediate, Plan, Query, Table

if TYPE_CHECKING:
    from lazysparse.formats import Tensor

Executor = Callable[[Plan], "tuple[Tensor, ...]"]

DEFAULT_EXECUTOR = "compiled"


def reference_executor(plan: Plan) -> tuple[Tensor, ...]:
    """Run ``plan`` with the dense NumPy reference interpreter (the oracle)."""
    return interpret(plan)


def compiled_executor(plan: Plan) -> tuple[Tensor, ...]:
    """Run ``plan`` through the optimizer (cached by structure), then on its tier
    (``engine.tiers``): a small shape seen first runs eager while its kernels compile in
    the background; otherwise the generated kernels, a shape seen before by its cached
    program (``kernels.backends.program``)."""
    entry, inputs, params = lookup(plan)
    return run_tiered(entry, inputs, params, _run_compiled)


def _run_compiled(entry: CachedPlan, inputs: list[Any], params: tuple[Any, ...]
                  ) -> tuple[Tensor, ...]:
    """The compiled tier; the backend (Numba) is imported on its first run, so a session
    that so far ran only eager has not paid for it."""
    from lazysparse.kernels.backends.program import run_cached

    return run_cached(entry, inputs, params)


def cuda_executor(plan: Plan) -> tuple[Tensor, ...]:
    """Run ``plan`` on the GPU: its cached ``cuda`` optimization, host constants moved to
    the device, the CUDA backend (``kernels.backends.cuda.runtime``); results are
    ``DeviceTensor`` s."""
    from lazysparse.kernels.backends.cuda.runtime import execute_plan_cuda  # imports no CuPy

    entry, inputs, params = lookup(plan, "cuda")
    out = execute_plan_cuda(_inputs_to_device(entry.plan(inputs, params)))
    if entry.store_key is not None:
        persist(entry)
    return out


def _inputs_to_device(plan: Plan) -> Plan:
    """``plan`` (normal form) with host tensors it reads copied to the GPU: constants the
    api made on the host for a cuda expression (e.g. ``broadcast_to``'s extent); arrays of
    the user were checked to share one device when the expression was built."""
    from lazysparse.formats.device import DeviceTensor, to_cuda

    bodies = []
    for body in plan.bodies:
        match body:
            case Query(lhs=lhs, rhs=Table(tns=Immediate(val=t), idxs=idxs)) if (
                    not isinstance(t, DeviceTensor)):
                body = Query(lhs, Table(Immediate(to_cuda(t)), idxs))
        bodies.append(body)
    return Plan(tuple(bodies))


_EXECUTORS: dict[str, Executor] = {
    "reference": reference_executor,
    "compiled": compiled_executor,
}
_DEVICE_EXECUTORS: dict[str, Executor] = {"cuda": cuda_executor}


def register_executor(name: str, executor: Executor) -> None:
    """Make ``LAZYSPARSE_EXECUTOR=name`` select ``executor`` for cpu plans."""
    _EXECUTORS[name] = executor


def _parse_executor(raw: str | None) -> str:
    """The executor name ``raw`` (``LAZYSPARSE_EXECUTOR``'s text) picks (default:
    ``compiled``)."""
    return DEFAULT_EXECUTOR if raw is None else raw.strip().lower() or DEFAULT_EXECUTOR


# parsed once per value (``formats.env_settings``): every compute asks
_EXECUTOR = EnvSetting("LAZYSPARSE_EXECUTOR", _parse_executor)


def get_executor() -> Executor:
    """The cpu executor named by ``LAZYSPARSE_EXECUTOR`` (default: ``compiled``); a change
    of the variable is seen at the next call (one dict lookup when it is unchanged)."""
    name = _EXECUTOR.get()
    try:
        return _EXECUTORS[name]
    except KeyError:
        raise ValueError(
            f"LAZYSPARSE_EXECUTOR={name!r} is not an executor; choose one of {sorted(_EXECUTORS)}"
        ) from None


def executor_for(device_name: str) -> Executor:
    """The executor of plans over arrays on ``device_name``: the device's backend when it
    has its own (``cuda``), else ``LAZYSPARSE_EXECUTOR``'s."""
    executor = _DEVICE_EXECUTORS.get(device_name)
    return executor if executor is not None else get_executor()
