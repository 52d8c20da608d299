"""Run workflows at their large size under an address-space cap (the child process of
``test_workflows.py``).

Usage: ``python -m tests.workflows.run_capped [--headroom-gib G] NAME [NAME ...]``
(from the repository root). The process first imports lazysparse and runs the warm-up
workflow at its small size (Numba/LLVM initialized, threads started, kernels loaded), then
measures its virtual size (``VmSize``, the baseline) and caps its address space at
``baseline + headroom`` with ``resource.setrlimit(RLIMIT_AS, ...)``. Each large workflow
then runs in turn; any allocation beyond the cap (a dense n x m or n x n intermediate is
tens of GiB at the large sizes) fails with ``MemoryError`` (or a crash, which the parent
attributes to the workflow that was running).

Output, one line each, flushed: ``CAP {"baseline": bytes, "cap": bytes, ...}``, then per
workflow ``START name`` and ``RESULT {"name", "status": "pass"|"fail"|"error", "error",
"seconds"}``. ``status`` is "fail" for an ``AssertionError`` (a mismatch) and "error" for
any other exception, whose type and first line are in ``error``.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import traceback
import warnings

GIB = 2**30
WARMUP = "text_tfidf_l2"


def vm_size() -> int:
    """This process's current virtual memory size in bytes (Linux)."""
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmSize:"))


def one_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:300]}" if text else type(e).__name__


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="+")
    ap.add_argument("--headroom-gib", type=float, default=3.0)
    ap.add_argument("--no-cap", action="store_true", help="measure only (no setrlimit)")
    opts = ap.parse_args()
    warnings.simplefilter("ignore")

    from tests.workflows.corpus import WORKFLOWS

    unknown = [n for n in opts.names if n not in WORKFLOWS]
    if unknown:
        sys.exit(f"unknown workflows {unknown}")
    t0 = time.perf_counter()
    WORKFLOWS[WARMUP](WORKFLOWS[WARMUP].small)
    baseline = vm_size()
    cap = baseline + int(opts.headroom_gib * GIB)
    if not opts.no_cap:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    print("CAP " + json.dumps({"baseline": baseline, "cap": cap, "capped": not opts.no_cap,
                               "warmup_seconds": round(time.perf_counter() - t0, 2)}),
          flush=True)
    for name in opts.names:
        w = WORKFLOWS[name]
        print(f"START {name}", flush=True)
        t = time.perf_counter()
        status, error = "pass", ""
        try:
            w(w.large)
        except AssertionError as e:
            status, error = "fail", one_line(e)
        except Exception as e:  # noqa: BLE001 - reported by name, the run goes on
            status, error = "error", one_line(e)
            traceback.print_exc(file=sys.stderr)
        print("RESULT " + json.dumps({"name": name, "status": status, "error": error,
                                      "seconds": round(time.perf_counter() - t, 2),
                                      "vm_peak": _vm_peak()}), flush=True)


def _vm_peak() -> int:
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmPeak:"))


if __name__ == "__main__":
    main()
