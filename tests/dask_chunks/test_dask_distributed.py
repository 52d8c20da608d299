"""lazysparse chunks on a LocalCluster of 2 worker processes: chunks travel pickled (their
stored arrays), the results match NumPy, and the workers reuse the kernel disk cache."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

import lazysparse as xp  # noqa: E402
import lazysparse.dask as lsd  # noqa: E402
from lazysparse.api.array.lazy_array import LazyArray  # noqa: E402

A = sps.random_array((400, 300), density=0.01, format="csr", rng=11)
DA = A.toarray()
V = np.random.default_rng(12).random(300)


def _kernel_stats() -> dict[str, int]:
    from lazysparse.kernels.backends import STATS

    return dict(STATS)


def _chunk_kinds(blocks: list[object]) -> set[tuple[str, str | None]]:
    return {(type(b).__name__, getattr(b, "format", None)) for b in blocks}


def test_local_cluster_of_two_processes() -> None:
    import dask.array as da

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, memory_limit=0)
    try:
        with distributed.Client(cluster) as client:
            d = lsd.from_sparse(A, chunks=100)
            y = (d * d * 2.0).persist()
            distributed.wait(y)
            graph = y.__dask_graph__()
            blocks = client.gather([graph[k] for k in dask.core.flatten(y.__dask_keys__())])
            assert _chunk_kinds(blocks) == {("LazyArray", "csr")}
            r = y.sum(axis=1).compute()
            assert isinstance(r, LazyArray)
            np.testing.assert_allclose(xp.to_numpy(r), (DA * DA * 2.0).sum(axis=1))
            mv = (d @ da.from_array(V, chunks=-1)).compute()
            np.testing.assert_allclose(xp.to_numpy(mv), DA @ V)
            prod = (d @ d.T).compute()
            assert prod.format in ("csr", "csc", "coo", "dcsr", "custom")
            np.testing.assert_allclose(xp.to_numpy(prod), DA @ DA.T)
            # the workers compiled or loaded each kernel once: running again compiles nothing
            fused = (d * d * 2.0).sum(axis=1)
            fused.compute()
            before = client.run(_kernel_stats)
            fused.compute()
            after = client.run(_kernel_stats)
            for w in after:
                assert after[w]["compiled"] == before[w]["compiled"]
                assert after[w]["generated"] == before[w]["generated"]
            # a kernel this (client) process compiled or loaded is on disk: the worker
            # processes load it from there, they compile nothing
            other = (d * 3.0 - d).max(axis=0)
            with dask.config.set(scheduler="threads"):
                local = other.compute()
            before = client.run(_kernel_stats)
            r = other.compute()
            after = client.run(_kernel_stats)
            np.testing.assert_allclose(xp.to_numpy(r), xp.to_numpy(local))
            assert all(after[w]["compiled"] == before[w]["compiled"] for w in after)
            assert sum(after[w]["disk_loaded"] - before[w]["disk_loaded"] for w in after) > 0
    finally:
        cluster.close()
