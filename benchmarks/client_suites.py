"""Run scikit-learn's, scipy's and array-api-extra's own tests with lazysparse and array_api_strict.

The clients' installed test suites are run unchanged (their code is not copied here); the
plugin ``client_suites_plugin.py`` adds lazysparse to the namespaces they parametrize over
and keeps one namespace's tests. Each (suite, namespace) run is one pytest process under a
memory cap, with a per-test timeout (so a hang is a failure), writing JUnit XML; the table
compares passed/failed/skipped and wall time, and ``--causes`` groups the failures by
exception and message.

    PYTHONPATH=src python benchmarks/client_suites.py --suite sklearn --suite scipy \
        --suite array-api-extra --out benchmarks/results/clients
    PYTHONPATH=src python benchmarks/client_suites.py --report benchmarks/results/clients

A cold kernel cache is the default (a fresh ``LAZYSPARSE_CACHE_DIR`` per run) so the time
includes every first compile, as a new user sees it; ``--warm-cache DIR`` reuses one.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from client_suites_plugin import case_name

HERE = Path(__file__).resolve().parent
NAMESPACES = ("lazysparse", "array_api_strict")
SUITES = ("sklearn", "scipy", "array-api-extra")
SCIPY_DEFAULT = ("special", "stats", "cluster", "_lib")
# scikit-learn modules whose tests are parametrized over Array-API namespaces, plus the
# common estimator checks (check_array_api_input for every estimator with the tag).
SKLEARN_MODULES = (
    "sklearn.tests.test_common",
    "sklearn.decomposition.tests.test_pca",
    "sklearn.metrics.tests.test_classification",
    "sklearn.metrics.tests.test_common",
    "sklearn.metrics.tests.test_pairwise",
    "sklearn.metrics.cluster.tests.test_common",
    "sklearn.metrics.cluster.tests.test_supervised",
    "sklearn._loss.tests.test_loss",
    "sklearn._loss.tests.test_link",
    "sklearn.preprocessing.tests.test_polynomial",
    "sklearn.preprocessing.tests.test_data",
    "sklearn.preprocessing.tests.test_label",
    "sklearn.tests.test_pipeline",
    "sklearn.tests.test_calibration",
    "sklearn.tests.test_kernel_approximation",
    "sklearn.tests.test_naive_bayes",
    "sklearn.mixture.tests.test_gaussian_mixture",
    "sklearn.utils.tests.test_array_api",
    "sklearn.utils.tests.test_validation",
    "sklearn.utils.tests.test_multiclass",
    "sklearn.utils.tests.test_indexing",
    "sklearn.utils.tests.test_extmath",
    "sklearn.utils.tests.test_optimize",
    "sklearn.utils.tests.test_stats",
    "sklearn.linear_model.tests.test_logistic",
    "sklearn.linear_model.tests.test_ridge",
    "sklearn.linear_model._glm.tests.test_glm",
    "sklearn.model_selection.tests.test_split",
    "sklearn.model_selection.tests.test_search",
    "sklearn.model_selection.tests.test_validation",
)


@dataclass(frozen=True)
class Outcome:
    """One test case's result as JUnit XML records it."""

    name: str
    status: str  # passed, failed, error, skipped, xfailed
    seconds: float
    message: str


@dataclass(frozen=True)
class Summary:
    """Counts and wall time of one (suite, namespace) run."""

    suite: str
    namespace: str
    outcomes: tuple[Outcome, ...]
    wall_s: float

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)


#: pytest options a suite's own configuration sets, which a run from site-packages does not
#: read: array-api-extra's pyproject makes warnings errors (its deprecation tests expect
#: ``pytest.raises(DeprecationWarning)``)
SUITE_OPTIONS: dict[str, list[str]] = {"array-api-extra": ["-W", "error::DeprecationWarning"]}


def _targets(suite: str, scipy_modules: tuple[str, ...]) -> list[str]:
    if suite == "sklearn":
        return list(SKLEARN_MODULES)
    if suite == "array-api-extra":
        return ["array_api_extra.tests.main"]  # the wheel ships its tests
    return [f"scipy.{m}" for m in scipy_modules]


def _limit_memory(limit_kb: int) -> None:
    limit = limit_kb * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _pytest_command(suite: str, namespace: str, args: argparse.Namespace, xml: Path) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "-p", "client_suites_plugin", "-p", "no:cacheprovider"]
    cmd += ["--client-namespace", namespace, "--junitxml", str(xml), "-q", "-rN"]
    cmd += ["-o", "junit_family=xunit1", "--timeout", str(args.timeout)]
    if importlib.util.find_spec("xdist") is not None and args.workers > 0:
        cmd += ["-n", str(args.workers)]
    cmd += SUITE_OPTIONS.get(suite, [])
    cmd += ["--pyargs", *_targets(suite, tuple(args.scipy_modules.split(",")))]
    if args.k:
        cmd += ["-k", args.k]
    if args.failed_from:
        cmd += ["--client-failed-from", str(Path(args.failed_from) / f"{suite}-{namespace}.xml")]
    return cmd


def run_one(suite: str, namespace: str, args: argparse.Namespace) -> Summary:
    """Run one suite with one namespace in a fresh pytest process; parse its JUnit XML."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    xml = out / f"{suite}-{namespace}.xml"
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    cache = args.warm_cache or tempfile.mkdtemp(prefix="lazysparse-cache-")
    env["LAZYSPARSE_CACHE_DIR"] = cache
    log = out / f"{suite}-{namespace}.log"
    start = time.perf_counter()
    with log.open("w") as sink:
        subprocess.run(
            _pytest_command(suite, namespace, args, xml),
            cwd=tempfile.gettempdir(),
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: _limit_memory(args.memory_kb),
            check=False,
        )
    wall = time.perf_counter() - start
    (out / f"{suite}-{namespace}.wall").write_text(f"{wall:.1f}\n")
    return Summary(suite, namespace, parse_junit(xml), wall)


def _status(case: ET.Element) -> tuple[str, str]:
    for tag, status in (("failure", "failed"), ("error", "error")):
        node = case.find(tag)
        if node is not None:
            return status, node.get("message") or (node.text or "").strip()[:300]
    node = case.find("skipped")
    if node is not None:
        kind = "xfailed" if node.get("type") == "pytest.xfail" else "skipped"
        return kind, node.get("message") or ""
    return "passed", ""


def parse_junit(xml: Path) -> tuple[Outcome, ...]:
    """All test cases of a JUnit XML file (empty if the run wrote none)."""
    if not xml.exists():
        return ()
    cases = []
    for case in ET.parse(xml).getroot().iter("testcase"):
        status, message = _status(case)
        name = case_name(case)
        cases.append(Outcome(name, status, float(case.get("time") or 0.0), message))
    return tuple(cases)


def load(out: Path, suite: str, namespace: str) -> Summary | None:
    """A finished run's summary from its files in ``out``."""
    xml = out / f"{suite}-{namespace}.xml"
    if not xml.exists():
        return None
    wall_file = out / f"{suite}-{namespace}.wall"
    wall = float(wall_file.read_text()) if wall_file.exists() else float("nan")
    return Summary(suite, namespace, parse_junit(xml), wall)


def table(summaries: list[Summary]) -> str:
    """A Markdown table: one row per (suite, namespace)."""
    head = "| suite | namespace | passed | failed | errors | skipped | xfailed | wall s |"
    rows = [head, "|---|---|---:|---:|---:|---:|---:|---:|"]
    for s in summaries:
        counts = [s.count(k) for k in ("passed", "failed", "error", "skipped", "xfailed")]
        cells = " | ".join(str(c) for c in counts)
        rows.append(f"| {s.suite} | {s.namespace} | {cells} | {s.wall_s:.0f} |")
    return "\n".join(rows)


_NOISE = re.compile(r"0x[0-9a-f]+|\d+(\.\d+)?(e[-+]?\d+)?|'[^']*'|\"[^\"]*\"|\[[^\]]*\]")


def cause_key(message: str) -> str:
    """A failure's cause: its first line with numbers, quotes and lists blanked out."""
    first = message.strip().splitlines()[0] if message.strip() else "(no message)"
    return _NOISE.sub("…", first)[:160]


def causes(summary: Summary) -> str:
    """Failures grouped by cause, largest group first, with two example tests each."""
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for o in summary.outcomes:
        if o.status in ("failed", "error"):
            groups[cause_key(o.message)].append(o.name)
    lines = [f"## {summary.suite} / {summary.namespace}: failures by cause"]
    for key, names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"- {len(names)}× {key}")
        lines += [f"    - {n}" for n in names[:2]]
    return "\n".join(lines)


def slowest(summary: Summary, n: int) -> str:
    top = sorted(summary.outcomes, key=lambda o: -o.seconds)[:n]
    lines = [f"## {summary.suite} / {summary.namespace}: slowest {n}"]
    lines += [f"- {o.seconds:7.1f} s {o.status:7} {o.name}" for o in top]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", action="append", choices=SUITES)
    parser.add_argument("--namespace", action="append", choices=NAMESPACES)
    parser.add_argument("--scipy-modules", default=",".join(SCIPY_DEFAULT))
    parser.add_argument("--out", default="benchmarks/results/clients")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test")
    parser.add_argument("--workers", type=int, default=1, help="pytest-xdist -n (0: none)")
    parser.add_argument("--memory-kb", type=int, default=12_000_000)
    parser.add_argument("--warm-cache", help="reuse this LAZYSPARSE_CACHE_DIR")
    parser.add_argument("-k", help="pytest -k expression (a subset, for debugging)")
    parser.add_argument("--failed-from", help="rerun only the failures recorded in this --out")
    parser.add_argument("--report", action="store_true", help="only summarize --out")
    parser.add_argument("--causes", action="store_true", help="group failures by cause")
    parser.add_argument("--slowest", type=int, default=0)
    args = parser.parse_args()
    suites = args.suite or list(SUITES)
    namespaces = args.namespace or list(NAMESPACES)
    summaries = []
    for suite in suites:
        for namespace in namespaces:
            if args.report:
                summary = load(Path(args.out), suite, namespace)
            else:
                summary = run_one(suite, namespace, args)
            if summary is not None:
                summaries.append(summary)
    print(table(summaries))
    for s in summaries:
        if args.causes:
            print("\n" + causes(s))
        if args.slowest:
            print("\n" + slowest(s, args.slowest))


if __name__ == "__main__":
    main()
