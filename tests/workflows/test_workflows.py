"""The workflow corpus (``tests/workflows/corpus.py``) against scipy.sparse and NumPy.

* ``test_small[name]``: every workflow at its small size, in this process: values, fill
  value, stored-entry counts and sparse formats against scipy (dense comparison too).
* ``test_small_on_the_eager_tier[name]``: the same on the eager tier (``engine.tiers``).
* ``test_large[name]``: every workflow at its large size (200,000 x 100,000 text with ~1M
  stored, 200,000-node graphs, 200,000 x 50,000 features, a 450 x 450 grid), all in one
  child process (``tests/workflows/run_capped.py``; a crashed child is restarted for the
  workflows after the one it was running) whose address space is capped at its measured
  baseline (after importing lazysparse and running a small workflow) plus
  ``HEADROOM_GIB``: a dense n x m or n x n intermediate (16 GiB and more as float64) cannot
  be allocated, so a blow-up fails the workflow that caused it.
* ``test_cap_is_below_dense_intermediates``: the cap really is below each large workflow's
  dense n x m (n x n) float64 array, so the large runs are a memory test.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lazysparse.engine import tiers
from tests.conftest import slow_except
from tests.workflows.corpus import GRID, WORKFLOWS, Workflow

ROOT = Path(__file__).resolve().parents[2]
HEADROOM_GIB = 3.0
HANG_GUARD_S = 900.0  # per workflow: only a guard against a hung child, not a timing test


def dense_bytes(w: Workflow) -> int:
    """The float64 bytes of the large size's dense n x m (graphs: n x n) array."""
    s = w.large
    if w.family is GRID:
        return (s.n * s.n) ** 2 * 8
    return s.n * (s.m or s.n) * 8


# the fast tier leaves out the workflows compiling the most kernels of their own (SGD,
# regression, Jacobi, label propagation, top-k cosine) and the longest-running small ones
# (natural PageRank, random walk, tf-idf with L2 rows, sublinear tf, Laplacian diagonals);
# the full suite runs every one
_SMALL_SLOW = {"ml_minibatch_sgd", "graph_label_propagation_natural", "ml_logreg_computed",
               "ml_linreg_gd", "sci_jacobi", "sci_jacobi_splitting", "text_cosine_topk",
               "text_binarize_counts", "sci_laplacian2d_xp", "ml_logreg_natural",
               "graph_laplacian_eye", "ml_standard_scale", "sci_laplacian2d_scipy_shift",
               "text_ngrams_min_df", "skew_graph_triangles", "graph_pagerank_natural",
               "graph_random_walk", "text_tfidf_l2", "text_sublinear_tf",
               "graph_laplacian_diags"}


@pytest.mark.parametrize("name", slow_except(list(WORKFLOWS), set(WORKFLOWS) - _SMALL_SLOW))
def test_small(name: str) -> None:
    w = WORKFLOWS[name]
    w(w.small)


# the workflows whose small sizes the eager tier runs (engine.tiers: iterations of vectors and
# small matrices), in the fast tier; the others compile there too, in the full suite
_EAGER_FAST = {"graph_pagerank_computed", "graph_power_iteration_computed", "sci_cg_computed",
               "ml_logreg_computed", "ml_minibatch_sgd"}


@pytest.mark.parametrize("name", slow_except(list(WORKFLOWS), _EAGER_FAST))
def test_small_on_the_eager_tier(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same checks with ``LAZYSPARSE_COMPILE=eager``: what the eager tier runs (the
    plans small enough) gives scipy's values, formats and stored-entry counts."""
    monkeypatch.setenv("LAZYSPARSE_COMPILE", "eager")
    w = WORKFLOWS[name]
    w(w.small)


@pytest.mark.parametrize("name", slow_except(list(WORKFLOWS), _EAGER_FAST))
def test_small_on_the_eager_tier_over_stored_entries(name: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The same checks with every operand counted large (``EAGER_MAX_ELEMENTS`` 0): the
    eager tier runs over the stored entries (``engine.eager_sparse``), what it refuses
    compiles."""
    monkeypatch.setenv("LAZYSPARSE_COMPILE", "eager")
    monkeypatch.setattr(tiers, "EAGER_MAX_ELEMENTS", 0)
    w = WORKFLOWS[name]
    w(w.small)


# ------------------------------------------------------------------------------ large

def _reader(stream: Any, q: queue.Queue[str | None]) -> None:
    for line in stream:
        q.put(line.rstrip("\n"))
    q.put(None)


def run_capped(names: list[str]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Run ``names`` at their large sizes in capped child processes; the cap record of the
    first child and a result record per workflow (``status`` pass / fail / error)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    cap: dict[str, Any] = {}
    results: dict[str, dict[str, Any]] = {}
    remaining = list(names)
    while remaining:
        with tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.workflows.run_capped", "--headroom-gib",
                 str(HEADROOM_GIB), *remaining], cwd=ROOT, env=env, text=True,
                stdout=subprocess.PIPE, stderr=err)
            q: queue.Queue[str | None] = queue.Queue()
            threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True).start()
            current, deadline, why = None, time.monotonic() + HANG_GUARD_S, ""
            while True:
                try:
                    line = q.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    proc.kill()
                    why = f"no result after {HANG_GUARD_S:.0f} s (child killed)"
                    break
                if line is None:
                    break
                if line.startswith("CAP "):
                    cap = cap or json.loads(line[4:])
                elif line.startswith("START "):
                    current, deadline = line[6:], time.monotonic() + HANG_GUARD_S
                elif line.startswith("RESULT "):
                    rec = json.loads(line[7:])
                    results[rec["name"]] = rec
                    current = None
            rc = proc.wait()
            err.seek(0)
            tail = err.read()[-1500:]
        why = why or f"child exited with status {rc} while running it: {tail.strip()[-600:]}"
        if current is not None:
            results[current] = {"name": current, "status": "error", "error": why}
        left = [n for n in remaining if n not in results]
        if len(left) == len(remaining):  # no progress (failed import or warm-up)
            for n in left:
                results[n] = {"name": n, "status": "error",
                              "error": f"child made no progress (status {rc}): {tail[-600:]}"}
            break
        remaining = left
    return cap, results


@pytest.fixture(scope="module")
def large_results() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    t0 = time.perf_counter()
    cap, results = run_capped(list(WORKFLOWS))
    print(f"\nworkflows at large sizes: {time.perf_counter() - t0:.1f} s; cap {cap}")
    for r in results.values():
        print(f"  {r['name']:36s} {r.get('seconds', '-')!s:>8} s  {r['status']}  "
              f"{r.get('error', '')}")
    return cap, results


@pytest.mark.slow
@pytest.mark.xdist_group("workflows_large")
def test_cap_is_below_dense_intermediates(large_results) -> None:
    cap, _ = large_results
    assert cap.get("capped"), f"the child did not report its cap: {cap}"
    for w in WORKFLOWS.values():
        assert cap["cap"] < dense_bytes(w) / 2, (
            f"{w.name}: cap {cap['cap'] / 2**30:.1f} GiB is not well below its dense "
            f"intermediate ({dense_bytes(w) / 2**30:.1f} GiB at {w.large})")


@pytest.mark.slow  # one capped child process runs them all at sizes past a dense intermediate
@pytest.mark.xdist_group("workflows_large")
@pytest.mark.parametrize("name", list(WORKFLOWS))
def test_large(name: str, large_results) -> None:
    _, results = large_results
    r = results[name]
    w = WORKFLOWS[name]
    assert r["status"] == "pass", f"{name} at {w.large} (address space capped): {r['error']}"
