"""First calls as a notebook user meets them: a 13-cell session, each cell run once, in fresh
processes, lazysparse against scipy.sparse + NumPy on the same data.

Cells: load term counts, idf, tf-idf with L2-normalized rows, a cosine block, column
statistics, thresholding, 20 logistic-regression steps, graph degree normalization, 30
PageRank steps, a 40-step CG on a graph Laplacian, feature co-occurrence, row slices with
``concat``, printing a row. Term counts are zipf-distributed over the columns (text is
skewed); the graph is a Chung–Lu power-law graph.

Three runs per size, each a child process: **empty cache** (a new temporary kernel cache:
a new user's first session), **warm disk** (a second process on that cache: the notebook
reopened), and **same process** (the cells again in the warm-disk process). Each cell's
lazysparse time is everything the user waits for: building the expression, ``compute``,
planning, compiling or loading kernels; its result is checked against scipy's. Ratio =
lazysparse / scipy (< 1: lazysparse faster). ``LAZYSPARSE_COMPILE`` (background by default:
the eager tier, ``engine.tiers``) is passed to the children; ``--compile sync`` shows the
path without tiers.

``--runs N`` repeats the whole run N times, each on a new empty cache, and shows each cell's
best of the N in every column (scipy's too); every run's results are checked.

Usage: ``python benchmarks/bench_first_call.py [--size small|issue] [--compile MODE]
[--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla


@dataclass(frozen=True)
class Size:
    docs: int
    terms: int
    entries: int
    nodes: int
    degree: float


SIZES = {"small": Size(300, 400, 3_000, 300, 6.0),
         "issue": Size(20_000, 30_000, 400_000, 20_000, 10.0)}


def term_counts(s: Size, rng: np.random.Generator) -> sp.csr_array:
    """Documents x terms counts, the terms zipf-distributed (a few in most documents)."""
    rows = rng.integers(0, s.docs, s.entries)
    cols = np.minimum(rng.zipf(1.3, s.entries) - 1, s.terms - 1)
    vals = rng.integers(1, 5, s.entries).astype(np.float64)
    m = sp.coo_array((vals, (rows, cols)), shape=(s.docs, s.terms)).tocsr()
    m.sum_duplicates()
    return m


def chung_lu(s: Size, rng: np.random.Generator) -> sp.csr_array:
    """A symmetric power-law graph (expected degrees ∝ rank^-0.7), no self loops."""
    w = (np.arange(1, s.nodes + 1) ** -0.7)
    w *= s.degree * s.nodes / w.sum()
    m = int(w.sum() / 2)
    p = w / w.sum()
    a, b = rng.choice(s.nodes, m, p=p), rng.choice(s.nodes, m, p=p)
    keep = a != b
    g = sp.coo_array((np.ones(keep.sum()), (a[keep], b[keep])), shape=(s.nodes, s.nodes))
    g = (g + g.T).tocsr()
    g.data[:] = 1.0
    return g


Cell = Callable[[dict[str, Any]], Any]


def scipy_cells() -> dict[str, Cell]:
    """The session written with scipy.sparse + NumPy."""
    def idf(d: dict[str, Any]) -> Any:
        df = np.asarray((d["X"] > 0).sum(axis=0)).ravel()
        d["idf"] = np.log((1 + d["X"].shape[0]) / (1 + df)) + 1
        return d["idf"]

    def tfidf(d: dict[str, Any]) -> Any:
        t = d["X"] @ sp.diags_array(d["idf"])
        norms = np.sqrt(np.asarray(t.multiply(t).sum(axis=1)).ravel())
        norms[norms == 0] = 1
        d["T"] = (sp.diags_array(1 / norms) @ t).tocsr()
        return d["T"]

    def logreg(d: dict[str, Any]) -> Any:
        x, y = d["T"], d["y"]
        w = np.zeros(x.shape[1])
        for _ in range(20):
            p = 1 / (1 + np.exp(-(x @ w)))
            w = w - 0.5 * (x.T @ (p - y)) / x.shape[0]
        return w

    def degree(d: dict[str, Any]) -> Any:
        deg = np.asarray(d["G"].sum(axis=1)).ravel()
        inv = np.where(deg > 0, 1 / np.sqrt(np.maximum(deg, 1)), 0)
        d["Gn"] = (sp.diags_array(inv) @ d["G"] @ sp.diags_array(inv)).tocsr()
        return d["Gn"]

    def pagerank(d: dict[str, Any]) -> Any:
        g = d["G"]
        deg = np.asarray(g.sum(axis=1)).ravel()
        p = np.full(g.shape[0], 1 / g.shape[0])
        inv = np.where(deg > 0, 1 / np.maximum(deg, 1), 0)
        for _ in range(30):
            p = 0.15 / g.shape[0] + 0.85 * (g.T @ (p * inv))
        return p

    def cg(d: dict[str, Any]) -> Any:
        g = d["G"]
        lap = sp.diags_array(np.asarray(g.sum(axis=1)).ravel() + 1.0) - g
        x, _ = spla.cg(lap.tocsr(), np.ones(g.shape[0]), maxiter=40, rtol=1e-30)
        return x

    return {
        "idf": idf,
        "tf-idf, L2 rows": tfidf,
        "cosine block": lambda d: (d["T"][:200] @ d["T"].T),
        "column statistics": lambda d: (np.asarray(d["X"].mean(axis=0)).ravel(),
                                        np.asarray(d["X"].max(axis=0).toarray()).ravel()),
        "thresholding": lambda d: (d["T"] > 0.2).astype(np.float64),
        "logistic regression x20": logreg,
        "degree normalization": degree,
        "PageRank x30": pagerank,
        "CG x40": cg,
        "co-occurrence": lambda d: ((d["X"] > 0).astype(np.float64).T @
                                    (d["X"] > 0).astype(np.float64)),
        "row slices + concat": lambda d: sp.vstack([d["T"][:100], d["T"][-100:]]),
        "print a row": lambda d: str(d["T"][3].toarray()),
    }


def lazy_cells(xp: Any) -> dict[str, Cell]:
    """The same session written with lazysparse as NumPy users write it."""
    def idf(d: dict[str, Any]) -> Any:
        df = xp.sum(xp.astype(d["X"] > 0, xp.float64), axis=0)
        d["idf"] = xp.compute(xp.log((1 + d["X"].shape[0]) / (1 + df)) + 1)
        return d["idf"]

    def tfidf(d: dict[str, Any]) -> Any:
        t = d["X"] * d["idf"][None, :]
        norms = xp.sqrt(xp.sum(t * t, axis=1))
        norms = xp.where(norms == 0, 1.0, norms)
        d["T"] = xp.compute(t / norms[:, None])
        return d["T"]

    def logreg(d: dict[str, Any]) -> Any:
        x, y = d["T"], d["y"]
        w = xp.zeros(x.shape[1])
        for _ in range(20):
            p = 1 / (1 + xp.exp(-(x @ w)))
            w = xp.compute(w - 0.5 * (x.T @ (p - y)) / x.shape[0])
        return w

    def degree(d: dict[str, Any]) -> Any:
        deg = xp.sum(d["G"], axis=1)
        inv = xp.where(deg > 0, 1 / xp.sqrt(xp.maximum(deg, 1)), 0.0)
        return xp.compute(inv[:, None] * d["G"] * inv[None, :])

    def pagerank(d: dict[str, Any]) -> Any:
        g = d["G"]
        n = g.shape[0]
        deg = xp.sum(g, axis=1)
        inv = xp.where(deg > 0, 1 / xp.maximum(deg, 1), 0.0)
        p = xp.full(n, 1 / n)
        for _ in range(30):
            p = xp.compute(0.15 / n + 0.85 * (g.T @ (p * inv)))
        return p

    def cg(d: dict[str, Any]) -> Any:
        g = d["G"]
        lap = xp.compute(xp.eye(g.shape[0], format="csr") * (xp.sum(g, axis=1) + 1.0) - g)
        x, _ = xp.sparse_linalg.cg(lap, xp.ones(g.shape[0]), maxiter=40, rtol=1e-30)
        return x

    def cooc(d: dict[str, Any]) -> Any:
        b = xp.astype(d["X"] > 0, xp.float64)
        return xp.compute(b.T @ b)

    return {
        "idf": idf,
        "tf-idf, L2 rows": tfidf,
        "cosine block": lambda d: xp.compute(d["T"][:200] @ d["T"].T),
        "column statistics": lambda d: xp.compute(xp.mean(d["X"], axis=0),
                                                  xp.max(d["X"], axis=0)),
        "thresholding": lambda d: xp.compute(xp.astype(d["T"] > 0.2, xp.float64)),
        "logistic regression x20": logreg,
        "degree normalization": degree,
        "PageRank x30": pagerank,
        "CG x40": cg,
        "co-occurrence": cooc,
        "row slices + concat": lambda d: xp.compute(xp.concat([d["T"][:100], d["T"][-100:]])),
        "print a row": lambda d: str(d["T"][3]),
    }


def fingerprint(r: Any) -> list[float] | None:
    """A result summarized for the check without densifying it: shape, sum, sum of squares
    and sum of absolute values of its entries (None: a string, not compared)."""
    if isinstance(r, str):
        return None
    if isinstance(r, tuple):
        return [v for x in r for v in (fingerprint(x) or [])]
    if sp.issparse(r):
        vals = r.tocoo().data
        shape = r.shape
    elif hasattr(r, "tensor") and hasattr(r, "ndim") and r.ndim:
        t = r.tensor()
        vals = t.to_scipy("coo").data if t.ndim == 2 and t.fill_value == 0 and \
            t.spec.name != "dense" else np.asarray(r).ravel()
        shape = r.shape
    else:
        vals = np.asarray(r).ravel()
        shape = np.shape(r)
    vals = np.asarray(vals, dtype=np.float64)
    return [*map(float, shape), float(vals.sum()), float((vals * vals).sum()),
            float(np.abs(vals).sum())]


def run_cells(lib: str, size: Size, repeat: int) -> list[dict[str, Any]]:
    """Time each cell of ``lib`` once per round (``repeat`` rounds in this process)."""
    rng = np.random.default_rng(0)
    x_sp, g_sp = term_counts(size, rng), chung_lu(size, rng)
    y = (rng.random(size.docs) < 0.3).astype(np.float64)
    rows: list[dict[str, Any]] = []
    if lib == "lazysparse":
        import lazysparse as xp  # imported before the clock, as scipy is

    for rnd in range(repeat):
        t0 = time.perf_counter()
        if lib == "scipy":
            cells, d = scipy_cells(), {"X": x_sp, "G": g_sp, "y": y}
        else:
            cells = lazy_cells(xp)
            d = {"X": xp.asarray(x_sp), "G": xp.asarray(g_sp), "y": xp.asarray(y)}
        rows.append({"round": rnd, "cell": "load", "s": time.perf_counter() - t0,
                     "value": None})
        for name, cell in cells.items():
            t = time.perf_counter()
            out = cell(d)
            dt = time.perf_counter() - t
            rows.append({"round": rnd, "cell": name, "s": dt, "value": fingerprint(out)})
    return rows


def _child(args: argparse.Namespace) -> None:
    rows = run_cells(args.child, SIZES[args.size], args.repeat)
    if args.child == "lazysparse":
        from lazysparse.engine import background

        background.shutdown()
    print(json.dumps(rows))


def _spawn(lib: str, size: str, repeat: int, cache: str, mode: str) -> list[dict[str, Any]]:
    env = dict(os.environ, LAZYSPARSE_CACHE_DIR=cache, LAZYSPARSE_COMPILE=mode,
               NUMBA_NUM_THREADS=os.environ.get("NUMBA_NUM_THREADS", "1"))
    out = subprocess.run([sys.executable, __file__, "--child", lib, "--size", size,
                          "--repeat", str(repeat)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _check(got: Any, want: Any) -> str:
    if got is None or want is None:
        return "ok"
    a, b = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    return "ok" if np.allclose(a, b, rtol=1e-6, atol=1e-6) else "MISMATCH"


def _session(size: str, mode: str) -> list[dict[str, dict[str, Any]]]:
    """One run: scipy, then lazysparse on an empty cache and again on that cache (warm
    disk, then the same process); per column, each cell's row."""
    cache = tempfile.mkdtemp(prefix="lsk-first-call-")
    sci = _spawn("scipy", size, 2, cache, mode)
    cold = _spawn("lazysparse", size, 1, cache, mode)
    warm = _spawn("lazysparse", size, 2, cache, mode)

    def by(rows: list[dict[str, Any]], rnd: int) -> dict[str, Any]:
        return {r["cell"]: r for r in rows if r["round"] == rnd}

    return [by(sci, 0), by(cold, 0), by(warm, 0), by(warm, 1)]


def report(size: str, mode: str, runs: int = 1) -> None:
    """The table of ``runs`` runs (each with its own empty cache): per cell and column the
    best of the runs (the machine is shared: best-of damps its noise), scipy's too."""
    sessions = [_session(size, mode) for _ in range(runs)]
    cells = list(sessions[0][0])
    best = f", best of {runs} runs per cell" if runs > 1 else ""
    print(f"\n## size {size} ({SIZES[size]}), LAZYSPARSE_COMPILE={mode}{best}\n")
    print("| cell | scipy s | empty cache s (×) | warm disk s (×) | same process s (×) | check |")
    print("|---|---:|---:|---:|---:|---|")
    tot = np.zeros(4)
    for c in cells:
        t = np.array([min(run[k][c]["s"] for run in sessions) for k in range(4)])
        tot += t
        checks = {_check(run[k][c]["value"], run[0][c]["value"])
                  for run in sessions for k in (1, 2, 3)}
        ok = "ok" if checks == {"ok"} else ", ".join(sorted(checks - {"ok"}))
        print(f"| {c} | {t[0]:.3f} | " + " | ".join(f"{v:.3f} ({v / t[0]:.1f}×)" for v in t[1:])
              + f" | {ok} |")
    print(f"| **total** | {tot[0]:.2f} | " + " | ".join(f"**{v:.2f} ({v / tot[0]:.1f}×)**"
                                                    for v in tot[1:]) + " | |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", choices=list(SIZES), default="small")
    p.add_argument("--compile", default=os.environ.get("LAZYSPARSE_COMPILE", "background"))
    p.add_argument("--child", choices=["scipy", "lazysparse"])
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--runs", type=int, default=1,
                   help="runs (each on a new empty cache); the table shows each cell's best")
    args = p.parse_args()
    if args.child:
        _child(args)
    else:
        report(args.size, args.compile, args.runs)


if __name__ == "__main__":
    main()
