"""Each Dask task computes the lazysparse chunk it returns.

A Dask task that applies lazysparse functions to its chunks builds a lazy plan; left alone,
that plan would run wherever the value is next observed: in the task that reads it, or, for
the final blocks, in the client thread assembling ``compute()``'s result, one block after
another. :func:`optimize` (installed as Dask's ``array_optimize`` when the user has not set
one) runs Dask's own array optimization (blockwise fusion, culling, linear fusion) and then
wraps every task so that a lazysparse result, or the lazysparse values of a dict, tuple or
list result, is computed in the task, in one plan. What Dask fused into one task is one
lazysparse plan, so a chain of elementwise operations and the reduction after it run as one
fused kernel per chunk (:func:`explain_chunk` shows it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.building.views import stored_view
from lazysparse.api.chapters.compute import compute, explain

if TYPE_CHECKING:
    from lazysparse.engine import Explanation


def materialize(value: Any) -> Any:
    """``value`` with every lazysparse array in it (one level into dicts, tuples and lists)
    computed together in one plan; anything else unchanged."""
    if isinstance(value, LazyArray):
        items: Any = (value,)
    elif isinstance(value, dict):
        items = value.values()
    else:
        items = value if isinstance(value, tuple | list) else ()
    lazy = [v for v in items if _needs_compute(v)]
    if lazy:
        compute(*lazy)
    return value


def _needs_compute(v: Any) -> bool:
    """An uncomputed lazysparse array that is more than a unit-axis view of stored data
    (``v[:, None]``, as Dask's matmul makes of a vector: left lazy, the product's plan
    reads the vector itself, with no loop over the size-1 axis)."""
    return isinstance(v, LazyArray) and v._result is None \
        and stored_view(v) is None  # noqa: SLF001


def _materializing(node: Any) -> Any:
    from dask._task_spec import Task

    if not isinstance(node, Task):  # data, aliases: nothing runs
        return node
    return Task(node.key, materialize, node, _data_producer=node.data_producer)


def dask_optimized(dsk: Any, keys: Any, **kwargs: Any) -> dict[Any, Any]:
    """Dask's own array optimization of ``dsk``, as a dict of task-spec nodes."""
    from dask._task_spec import convert_legacy_graph
    from dask.array.optimization import optimize as dask_optimize
    from dask.utils import ensure_dict

    return convert_legacy_graph(ensure_dict(dask_optimize(dsk, keys, **kwargs)))


def optimize(dsk: Any, keys: Any, **kwargs: Any) -> dict[Any, Any]:
    """Dask's array optimization, then every task computes its lazysparse result."""
    return {k: _materializing(v) for k, v in dask_optimized(dsk, keys, **kwargs).items()}


def install() -> None:
    """Make :func:`optimize` Dask's array optimization unless the user has chosen one
    (``dask.config.set(array_optimize=dask.array.optimization.optimize)`` restores Dask's
    own: chunks then stay lazy until read, and the final blocks run in the client)."""
    import dask

    if dask.config.get("array_optimize", None) is None:
        dask.config.set(array_optimize=optimize)


def chunk_result(d: Any, index: tuple[int, ...] | None = None) -> Any:
    """What the task of block ``index`` (default: the first) of the Dask array ``d`` returns,
    before it is computed: its inputs are computed by Dask, the task itself only builds
    its lazysparse plan."""
    from dask._task_spec import Alias
    from dask.local import get_sync

    key = (d.name, *(index if index is not None else (0,) * d.ndim))
    dsk = dask_optimized(d.__dask_graph__(), [key])
    task = dsk[key]
    while isinstance(task, Alias):  # linear fusion renames: follow to the fused task
        task = dsk[task.target]
    deps = sorted(task.dependencies, key=str)
    values = get_sync({k: _materializing(v) for k, v in dsk.items()}, deps) if deps else ()
    return task(dict(zip(deps, values, strict=True)))


def explain_chunk(d: Any, index: tuple[int, ...] | None = None) -> Explanation:
    """``xp.explain`` of the plan the task of block ``index`` of ``d`` runs: how many
    kernels one chunk's fused chain of Dask operations compiles to."""
    value = chunk_result(d, index)
    if isinstance(value, Mapping):
        value = tuple(value.values())
    arrays = value if isinstance(value, tuple | list) else (value,)
    lazy = [a for a in arrays if isinstance(a, LazyArray)]
    if not lazy:
        raise TypeError(f"block {index} of this Dask array is not a lazysparse array "
                        f"({type(value).__name__})")
    return explain(*lazy)
