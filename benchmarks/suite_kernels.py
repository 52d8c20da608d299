"""Sum the records of ``suite_kernels_plugin`` per test file and per test function.

    PYTHONPATH=src:benchmarks LAZYSPARSE_CACHE_DIR=$(mktemp -d) SUITE_KERNELS_OUT=/tmp/k.jsonl \\
        python -m pytest -q -p no:randomly -p suite_kernels_plugin -m "not slow" tests
    python benchmarks/suite_kernels.py /tmp/k.jsonl [--top 25]

prints two Markdown tables: each file's tests, wall seconds, top-level and nested Numba
compiles and the top-level compiles' seconds (most compiles first), then the test functions
(parametrizations summed) that compile the most. One process runs the files in order with
one cache, so a kernel counts where it first compiles.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

FIELDS = ("tests", "wall", "top", "nested", "compile_s")


def load(path: Path) -> list[dict]:
    """The plugin's records, one per test."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def sums(records: Iterable[dict], key_of) -> dict[str, dict[str, float]]:
    """The records' counts summed by ``key_of(node id)``."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(FIELDS, 0))
    for r in records:
        row = out[key_of(r["test"])]
        row["tests"] += 1
        for f in FIELDS[1:]:
            row[f] += r[f]
    return out


def table(rows: dict[str, dict[str, float]], title: str, limit: int | None) -> str:
    """A Markdown table of ``rows``, most top-level compiles first, with a total line."""
    lines = [f"| {title} | tests | wall s | compiles | nested | compile s |",
             "|---|---:|---:|---:|---:|---:|"]
    ranked = sorted(rows.items(), key=lambda kv: (-kv[1]["top"], kv[0]))
    for name, r in ranked[:limit]:
        lines.append(f"| `{name}` | {r['tests']} | {r['wall']:.1f} | {r['top']} | "
                     f"{r['nested']} | {r['compile_s']:.1f} |")
    total = {f: sum(r[f] for r in rows.values()) for f in FIELDS}
    lines.append(f"| **all {len(rows)}** | {total['tests']} | {total['wall']:.1f} | "
                 f"{total['top']} | {total['nested']} | {total['compile_s']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    """Print the per-file and per-function tables of one record file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", type=Path)
    parser.add_argument("--top", type=int, default=25, help="test functions listed")
    args = parser.parse_args()
    records = load(args.records)
    print(table(sums(records, lambda t: t.split("::")[0]), "file", None))
    print()
    print(table(sums(records, lambda t: t.split("[")[0]), "test function", args.top))


if __name__ == "__main__":
    main()
