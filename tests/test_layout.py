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
