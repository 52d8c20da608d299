"""lazysparse arrays as Dask chunks (``pip install lazysparse[dask]``; docs/dask.md).

``import lazysparse.dask`` registers lazysparse with Dask's dispatch registries
(:mod:`lazysparse.dask.dispatch`) and makes each Dask task compute the lazysparse chunk it
returns (:mod:`lazysparse.dask.tasks`). :func:`from_sparse` and :func:`from_file` build Dask
arrays of lazysparse row blocks; ``da.from_array(x, chunks=...)`` of a lazysparse array
works too. Elementwise expressions, reductions, products, slicing, rechunking and
concatenation keep the chunks lazysparse arrays in their sparse formats; a chain that Dask
fuses into one task is one lazysparse plan (:func:`explain_chunk`).
"""

from __future__ import annotations

from lazysparse.dask.construct import from_file, from_sparse
from lazysparse.dask.dispatch import register
from lazysparse.dask.tasks import chunk_result, explain_chunk, materialize, optimize


def setup() -> None:
    """Register with Dask and install the computing tasks (run on import; idempotent)."""
    from lazysparse.dask import tasks

    register()
    tasks.install()


setup()

__all__ = ["chunk_result", "explain_chunk", "from_file", "from_sparse", "materialize",
           "optimize", "register", "setup"]
