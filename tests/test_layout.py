"""The layering: the plain library and the serving path never import Dagster; only the code
location (``hltm_assets``) does."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLAIN = ("hltm_resources", "query")


def _modules(package: str) -> list[str]:
    return sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / package).rglob("*.py")
    )


@pytest.mark.parametrize("package", PLAIN)
def test_no_source_file_imports_dagster(package):
    offenders = []
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] in ("dagster", "hltm_assets") for n in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_importing_every_plain_module_loads_no_dagster():
    modules = [m for package in PLAIN for m in _modules(package)]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = sorted(x for x in sys.modules if x.split('.')[0] == 'dagster')\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(modules) > 40


PACKAGES = ("hltm_assets", "hltm_resources", "query")


def _imports(module: str, path: Path) -> set[str]:
    """The project modules ``module`` imports anywhere in its file (in a function too)."""
    known = set()
    for package in PACKAGES:
        known |= set(_modules(package))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names = [base, *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            # A module's own package is imported before it by Python itself: not an edge.
            if name and name != module and not module.startswith(name + "."):
                found.add(name)
    return found


def _import_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of modules that import each other, directly or around a loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            loop = []
            while (w := stack.pop()) != v:
                loop.append(w)
            if loop:
                loops.append(sorted([v, *loop]))

    for v in graph:
        if v not in index:
            visit(v)
    return loops


def test_the_import_loop_finder_finds_a_loop_through_three_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _import_loops(graph) == [["a", "b", "c"]]
    assert _import_loops({"a": {"b"}, "b": set()}) == []


def test_no_two_files_of_the_project_import_each_other():
    graph = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(
                ".__init__"
            )
            graph[module] = _imports(module, path)
    graph = {m: {n for n in imported if n in graph} for m, imported in graph.items()}
    assert sum(len(v) for v in graph.values()) > 200
    assert _import_loops(graph) == []


def test_no_package_folder_is_named_like_build_output():
    # Tools that skip build/ (structure viewers, packaging templates, ignore files) would skip it.
    named = [p for package in PACKAGES for p in (ROOT / package).rglob("build") if p.is_dir()]
    assert named == []
