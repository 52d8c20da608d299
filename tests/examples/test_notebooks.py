"""The example notebooks (``examples/*.ipynb``) run in a real Jupyter kernel.

Each notebook is executed with nbclient on the ``python3`` kernel of ipykernel installed
beside this interpreter (the kernel inherits the environment, ``PYTHONPATH`` pointing at
this checkout's ``src`` is added, so it imports the lazysparse under test, and so does an
editable install). The notebooks assert their own results against scipy and that displaying
a lazy array computed nothing; here every cell must run without error, the HTML display of
a lazysparse array must be in the outputs (a lazy one and a stored one with its sparsity
thumbnail), and an extra cell checks the kernel's interpreter and lazysparse.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

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


def _html_outputs(book: object) -> list[str]:
    """The ``text/html`` outputs of every code cell."""
    return [out["data"]["text/html"] for cell in book.cells if cell.cell_type == "code"
            for out in cell.outputs if "text/html" in out.get("data", {})]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])]))
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
