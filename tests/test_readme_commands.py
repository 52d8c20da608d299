"""The README's commands work and every Python example in README.md, CONTRIBUTING.md and
docs/*.md runs.

- ``python -m lazysparse`` (the README's "run the main job" command) exits 0 in a fresh
  process with an empty kernel cache, and its demo agrees with NumPy.
- The README's two set-up commands are the ones ``.ci/run`` runs, and the README and
  CONTRIBUTING.md name the fast tier's command next to the full one.
- Every fenced ```` ```python ```` block of README.md, CONTRIBUTING.md and of every docs/*.md
  file (docs/status.md, docs/performance.md, ...) is one test,
  collected once, with the id ``<file>:block<N>`` (N counts the file's Python blocks from 1,
  in document order). A page is one session, as a reader runs it: the blocks of a file share
  one namespace, so a block may use what an earlier block of the same page defined (when a
  block is selected alone, e.g. with ``-k``, the page's earlier blocks run first as its
  set-up). A block written as a doctest (``>>>`` prompts) is run by ``doctest`` and its
  printed output is checked too. Blocks run in a temporary working directory.

Blocks that are not run:

- ```` ```python notest ```` blocks: deliberately not runnable. There are none today; a new one
  needs a reason in ``NOT_RUN_REASONS`` below (the test of such a block fails otherwise).
- Blocks that import an optional extra that is not installed (``dask`` / ``distributed``:
  ``lazysparse[dask]``; ``cupy``: ``lazysparse[gpu]``, which also needs a CUDA device) are
  skipped, pytest.importorskip-style. CI installs ``.[test]`` only, so docs/dask.md's
  blocks are skipped there; they run wherever the dask extra is installed.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]

# "<file>:block<N>" -> why that ```python notest block is not run. Keep this small: prefer
# making an example self-contained (define the data it uses) over not running it.
NOT_RUN_REASONS: dict[str, str] = {}
# blocks that run in the full suite only (``slow``), with why; a later block of the same
# page goes with them, since it runs the earlier ones as its set-up
SLOW_BLOCKS: dict[str, str] = {
    "docs/api.md:block6": "four solvers on a 900 x 900 Laplacian (tests/sparse_linalg has "
                          "each)",
    "docs/dask.md:block1": "a dask cluster's set-up and ten kernels (tests/dask_chunks)",
}

# optional extras: a block importing one of these is skipped when it is missing
OPTIONAL_MODULES = ("dask", "distributed", "cupy")
_IMPORT = re.compile(r"^\s*(?:import|from)\s+(\w+)", re.M)
_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


@dataclass(frozen=True, repr=False)
class Block:
    """One ```python block: its file, number in the file (from 1), first line, code, flags."""

    path: Path
    number: int
    line: int
    code: str
    flags: frozenset[str]

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:block{self.number}"

    def __repr__(self) -> str:
        return f"Block({self.id}, line {self.line})"

    @property
    def is_doctest(self) -> bool:
        return self.code.lstrip().startswith(">>>")


def python_blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path`` whose info string starts with ``python``, in order."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m is None:
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].split()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        start = i + 1
        i = start
        while i < len(lines) and not close.match(lines[i]):
            i += 1
        if info and info[0] == "python":
            body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip()
                    for ln in lines[start:i]]
            blocks.append(Block(path, len(blocks) + 1, start + 1, "\n".join(body) + "\n",
                                frozenset(info[1:])))
        i += 1  # past the closing fence
    return blocks


BLOCKS = {path: python_blocks(path) for path in DOC_FILES}
ALL_BLOCKS = [block for blocks in BLOCKS.values() for block in blocks]


def _params() -> list[object]:
    params = []
    slow_pages: set[Path] = set()
    for block in ALL_BLOCKS:
        marks = []
        if block.id in SLOW_BLOCKS or block.path in slow_pages:
            slow_pages.add(block.path)
            marks.append(pytest.mark.slow)
        if "notest" in block.flags:
            reason = NOT_RUN_REASONS.get(block.id)
            if reason is not None:
                marks.append(pytest.mark.skip(reason=f"```python notest: {reason}"))
        params.append(pytest.param(block, id=block.id, marks=marks))
    return params


def _skip_without_optional_modules(block: Block) -> None:
    for name in _IMPORT.findall(block.code):
        if name in OPTIONAL_MODULES:
            module = pytest.importorskip(name)
            if name == "cupy":
                try:
                    count = module.cuda.runtime.getDeviceCount()
                except Exception as err:  # CuPy installed, no driver or device
                    pytest.skip(f"CuPy has no CUDA device: {err}")
                if count == 0:
                    pytest.skip("CuPy has no CUDA device")


def _run(block: Block, namespace: dict[str, object]) -> None:
    """Run ``block`` in ``namespace``; tracebacks point at the block's lines in its file."""
    if block.is_doctest:
        test = doctest.DocTestParser().get_doctest(
            block.code, namespace, block.id, str(block.path), block.line - 1)
        report: list[str] = []
        runner = doctest.DocTestRunner(
            optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        result = runner.run(test, out=report.append, clear_globs=False)
        if result.failed:
            pytest.fail("".join(report), pytrace=False)
        return
    code = compile("\n" * (block.line - 1) + block.code, str(block.path), "exec")
    exec(code, namespace)  # noqa: S102 - the documentation's own examples


# per file: the shared namespace and the numbers of the blocks already run in it
_SESSIONS: dict[Path, tuple[dict[str, object], set[int]]] = {}


@pytest.mark.parametrize("block", _params())
def test_doc_block(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if "notest" in block.flags:
        pytest.fail(f"{block.id} is marked notest without a reason in NOT_RUN_REASONS")
    _skip_without_optional_modules(block)
    monkeypatch.chdir(tmp_path)
    namespace, done = _SESSIONS.setdefault(block.path, ({"__name__": "__main__"}, set()))
    for earlier in BLOCKS[block.path][: block.number - 1]:
        if earlier.number in done or "notest" in earlier.flags:
            continue
        _skip_without_optional_modules(earlier)
        done.add(earlier.number)
        try:
            _run(earlier, namespace)
        except Exception as err:
            pytest.fail(f"set-up: the page's earlier {earlier.id} failed: {err!r}")
    done.add(block.number)
    _run(block, namespace)


def test_every_doc_file_is_collected() -> None:
    """Guards the collector: the files known to hold examples still yield them."""
    counts = {path.relative_to(ROOT).as_posix(): len(blocks) for path, blocks in BLOCKS.items()}
    assert counts["README.md"] >= 3 and counts["docs/formats.md"] >= 8
    assert counts["CONTRIBUTING.md"] >= 1 and counts["docs/status.md"] >= 4
    assert counts["docs/api.md"] >= 3 and counts["docs/numpy.md"] >= 1
    assert len({block.id for block in ALL_BLOCKS}) == len(ALL_BLOCKS)


INSTALL = 'pip install -e ".[test]"'
FULL_TESTS = "python -m pytest -q -n 2 tests"
FAST_TESTS = 'python -m pytest -q -n 2 -m "not slow" tests'


def _bash_lines(path: Path) -> list[str]:
    """The command lines of ``path``'s ```bash blocks, comments stripped."""
    text = path.read_text(encoding="utf-8")
    blocks = re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S)
    return [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]


def test_setup_commands_are_what_ci_runs() -> None:
    """The README's install and test commands are exactly the lines ``.ci/run`` runs."""
    readme = _bash_lines(ROOT / "README.md")
    assert INSTALL in readme and FULL_TESTS in readme
    assert readme.index(INSTALL) + 1 == readme.index(FULL_TESTS)  # the two commands, in order
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert INSTALL in ci and FULL_TESTS in ci
    assert "python -m lazysparse" in readme


def test_fast_tier_is_named_next_to_the_full_suite() -> None:
    """Development's fast command is written where the full one is, in README and CONTRIBUTING."""
    for name in ("README.md", "CONTRIBUTING.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        assert FAST_TESTS in text and FULL_TESTS in text, name


@pytest.mark.slow
def test_python_m_lazysparse(tmp_path: Path) -> None:
    """``python -m lazysparse`` from the repository root, with a fresh kernel cache."""
    env = dict(os.environ, LAZYSPARSE_CACHE_DIR=str(tmp_path / "kernel-cache"))
    proc = subprocess.run([sys.executable, "-m", "lazysparse"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "executor: " in proc.stdout, output
    assert "matches NumPy: True" in proc.stdout, output
