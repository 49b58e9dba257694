"""One tested set of versions: both README commands install through ``constraints.txt``, it
pins the stack our users fixed, this run has exactly those versions installed, and CI runs the
README's commands as written."""

from __future__ import annotations

import os
import re
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STACK = ("dagster", "dagster-webserver", "duckdb", "lancedb", "polars", "openai")


def pinned() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, release = line.partition("==")
            assert release, f"constraints.txt pins every line with ==, not {line!r}"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = release
    return pins


def quickstart_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", quickstart, re.S)
    return [line for block in blocks[:2] for line in block.splitlines() if line[:1] not in "#"]


def test_the_tested_set_pins_every_package_of_the_stack():
    pins = pinned()
    assert [name for name in STACK if name not in pins] == []


@pytest.mark.skipif(
    bool(os.environ.get("HLTM_UNPINNED_VERSIONS")),
    reason=".ci/upgrade-versions is testing newer releases than constraints.txt",
)
def test_this_run_has_the_tested_versions_installed():
    pins = pinned()
    installed = {name: version(name) for name in STACK}
    assert installed == {name: pins[name] for name in STACK}, (
        "install through the tested set: pip install -c constraints.txt -e '.[dev,...]' "
        "(or re-resolve it with .ci/upgrade-versions)"
    )


def test_both_readme_commands_install_through_the_tested_set():
    demo, tests = quickstart_commands()
    assert demo.endswith("hltm demo") and "pytest" in tests
    for command in (demo, tests):
        installs = re.findall(r"pip install ([^&]*)", command)
        assert installs and all("-c constraints.txt" in i for i in installs), command


def test_ci_runs_the_readme_commands_as_written():
    ci = (ROOT / ".ci" / "run").read_text()
    for command in quickstart_commands():
        assert command in ci
