"""Dependency direction, enforced by import-linter (.importlinter), and no import circles anywhere."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is a test requirement (requirements-dev.txt)"
    p = subprocess.run([exe], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr


def _cycles(graph, modules: set[str]) -> list[list[str]]:
    """The import circles among `modules` (Tarjan's strongly connected components of more than one module, or a
    module that imports itself). Every import counts, a late one inside a function included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # recursive: the graph is a few dozen modules deep at most
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v) & modules:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.find_modules_directly_imported_by(v):
                out.append(sorted(comp))

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return out


def test_no_module_imports_one_that_imports_it_back():
    import grimp  # import-linter's own graph builder

    graph = grimp.build_graph("advisor", "probes")
    modules = {m for m in graph.modules if m.split(".")[0] in ("advisor", "probes")}
    assert len(modules) > 40, sorted(modules)  # the whole of both packages was read
    assert _cycles(graph, modules) == []


def test_the_circle_finder_finds_a_circle(tmp_path, monkeypatch):
    """The check above can fail: a two-module circle in a throwaway package is reported."""
    import grimp

    pkg = tmp_path / "circle_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from circle_pkg import b  # a late import counts too\n")
    (pkg / "b.py").write_text("from circle_pkg import a\n")
    (pkg / "c.py").write_text("from circle_pkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("circle_pkg", cache_dir=None)
    assert _cycles(graph, set(graph.modules)) == [["circle_pkg.a", "circle_pkg.b"]]
