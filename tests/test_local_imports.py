"""No function-local import closes an import cycle (issue 26), and no cycle of any kind:
the graph of module-level and function-local imports together has none (issue 37: one
closed by two local imports, ``formats.convert`` <-> ``formats.ordering``, hid from the first
check).

A function-local ``import`` of a lazysparse module is allowed only where it defers a cost
(a backend loaded on first use, a stage above that the root namespace re-exports); it may not
stand in for a module-level import that would be circular. A local import from module ``N``
of module ``M`` closes a cycle when ``M``'s module-level imports reach ``N``. Edges are the
modules an import names (``from pkg import name`` names ``pkg.name`` where that is a module,
else ``pkg``); the root package, which imports every stage for the namespace, is the entry
point and is not followed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import lazysparse

ROOT = Path(lazysparse.__file__).parent


def _module_name(path: Path) -> str:
    parts = ("lazysparse",) + path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in ROOT.rglob("*.py")}


def _targets(node: ast.Import | ast.ImportFrom, here: str) -> set[str]:
    """The lazysparse modules an import statement names."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = here.split(".")
            if not MODULES[here].name == "__init__.py":
                pkg = pkg[:-1]
            pkg = pkg[:len(pkg) - node.level + 1]
            base = ".".join(pkg + ([base] if base else []))
        subs = [f"{base}.{a.name}" for a in node.names]
        names = [n for n in subs if n in MODULES]
        if len(names) < len(subs):
            names.append(base)
    return {n for n in names if n in MODULES and n != "lazysparse"}


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(name: str) -> tuple[set[str], list[tuple[int, set[str]]]]:
    """(modules imported at module level, [(line, modules) of each function-local import])."""
    tree = ast.parse(MODULES[name].read_text())
    top: set[str] = set()
    local: list[tuple[int, set[str]]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                t = _targets(child, name)
                if in_function:
                    local.append((child.lineno, t))
                else:
                    top.update(t)
            visit(child, in_function or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(tree, False)
    return top, local


GRAPH = {m: _imports(m) for m in MODULES}


def _reaches(src: str, dst: str) -> bool:
    seen, todo = set(), [src]
    while todo:
        m = todo.pop()
        if m == dst:
            return True
        if m in seen:
            continue
        seen.add(m)
        todo.extend(GRAPH[m][0])
    return False


def cycle_closing_local_imports() -> list[str]:
    """``module:line -> target`` for each function-local import that closes a cycle."""
    found = []
    for name, (_, local) in sorted(GRAPH.items()):
        for line, targets in local:
            for t in sorted(targets):
                if t != name and _reaches(t, name):
                    found.append(f"{name}:{line} -> {t}")
    return found


def test_no_local_import_closes_a_cycle() -> None:
    assert cycle_closing_local_imports() == []


def import_cycles(graph: dict[str, tuple[set[str], list[tuple[int, set[str]]]]]
                  ) -> list[list[str]]:
    """Every cycle of the import graph counting local imports too, as its modules (one per
    strongly connected component of more than one module, or a module importing itself)."""
    edges = {m: set(top) | {t for _, ts in local for t in ts} for m, (top, local) in
             graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:  # Tarjan's algorithm without recursion
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in edges:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1 or v in edges[v]:
                    found.append(sorted(comp))
    return found


def test_no_import_cycle_of_any_kind() -> None:
    assert import_cycles(GRAPH) == []


def test_the_cycle_check_finds_two_local_imports() -> None:
    """Planted: two modules that import each other only inside functions."""
    graph = {"a": (set(), [(3, {"b"})]), "b": (set(), [(7, {"a"})]), "c": ({"a"}, [])}
    assert import_cycles(graph) == [["a", "b"]]
    assert import_cycles({"a": (set(), [(1, {"b"})]), "b": (set(), [])}) == []


def test_the_check_finds_a_planted_cycle(tmp_path: Path) -> None:
    """The detector is not vacuous: a local import back into a module's importer counts."""
    GRAPH["lazysparse.formats.specs"][1].append((0, {"lazysparse.formats.tensor"}))
    try:
        assert any("formats.specs:0" in f for f in cycle_closing_local_imports()) == \
            _reaches("lazysparse.formats.tensor", "lazysparse.formats.specs")
        assert _reaches("lazysparse.formats.tensor", "lazysparse.formats.specs")
    finally:
        GRAPH["lazysparse.formats.specs"][1].pop()
