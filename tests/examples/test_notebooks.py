"""The example notebooks (``examples/*.ipynb``) run in a real Jupyter kernel.

Each notebook is executed with nbclient on a ``python3`` kernel (ipykernel) running this
interpreter (a kernelspec the test puts first on ``JUPYTER_PATH``); the kernel inherits the
environment, with ``PYTHONPATH`` pointing at this checkout's ``src`` added, so it imports
the lazysparse under test (as an editable install does). The notebooks assert their own
results against scipy and that displaying a lazy array computed nothing; here every cell
must run without error, the HTML display of a lazysparse array must be in the outputs (a
lazy one and a stored one with its sparsity thumbnail), and an extra cell checks the
kernel's interpreter and lazysparse.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import slow_except

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))
SRC = ROOT / "src"

PROBE = ("import sys, lazysparse\n"
         "print(sys.executable)\n"
         "print(lazysparse.__file__)")


def test_every_notebook_is_collected() -> None:
    assert [p.stem for p in NOTEBOOKS] == ["graphs", "solvers", "text"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_stored_notebooks_have_no_outputs(path: Path) -> None:
    book = nbformat.read(path, as_version=4)
    nbformat.validate(book)
    for cell in book.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, \
                f"{path.name}: clear the outputs before committing"


def _pin_python3_kernel(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``python3`` kernelspec running this interpreter, first on ``JUPYTER_PATH`` (ahead
    of any user-installed ``python3`` spec), so the notebooks run where the tests do."""
    spec = root / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (tests)", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("JUPYTER_PATH")])]))


def _html_outputs(book: object) -> list[str]:
    """The ``text/html`` outputs of every code cell."""
    return [out["data"]["text/html"] for cell in book.cells if cell.cell_type == "code"
            for out in cell.outputs if "text/html" in out.get("data", {})]


@pytest.mark.parametrize("path", slow_except(NOTEBOOKS, NOTEBOOKS[1:2]),
                         ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])]))
    _pin_python3_kernel(tmp_path / "jupyter", monkeypatch)
    book = nbformat.read(path, as_version=4)
    book.cells.append(nbformat.v4.new_code_cell(PROBE))
    client = nbclient.NotebookClient(book, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # a failing cell raises CellExecutionError with its traceback

    for cell in book.cells:
        if cell.cell_type == "code":
            assert not [o for o in cell.outputs if o["output_type"] == "error"]
    executable, module = book.cells[-1].outputs[0]["text"].split()
    assert Path(executable).resolve() == Path(sys.executable).resolve()
    assert Path(module).resolve().is_relative_to(SRC.resolve())

    pages = [p for p in _html_outputs(book) if 'class="lazysparse-array"' in p]
    assert any("(lazy)</caption>" in p and "(planned)" in p for p in pages), path.name
    assert any("(stored)</caption>" in p for p in pages), path.name
    assert any("lazysparse-thumbnail" in p for p in pages), path.name
