"""What the Dagster UI shows after ``hltm demo``: the real ``hltm dev`` on the demo's home, read
through the UI's own GraphQL API and in a headless browser (Debian's chromium).

Every partition of the demo's multi-partition runs carries its own counts, equal to what the
memory views hold, and a preview of its memory; the browser sees the preview on the asset's
partition page. With ``HLTM_SCREENSHOT_UI=path`` the browser test also writes that page as a
PNG (the README's picture).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from hltm_assets.cli.server import free_port, latest_materialization, ui_graphql
from hltm_assets.launcher import WORKER_PID_TAG
from hltm_resources.config import Settings
from hltm_resources.stores import database

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
MATERIALIZATIONS = """
query($key: AssetKeyInput!, $partitions: [String!]) {
  assetOrError(assetKey: $key) {
    ... on Asset {
      assetMaterializations(partitions: $partitions) {
        partition
        runId
        metadataEntries {
          label
          ... on MarkdownMetadataEntry { mdStr }
          ... on IntMetadataEntry { intValue }
          ... on TextMetadataEntry { text }
          ... on JsonMetadataEntry { jsonString }
        }
      }
    }
  }
}"""


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory) -> Settings:
    home = tmp_path_factory.mktemp("ui") / "home"
    done = subprocess.run(
        [sys.executable, "-m", "hltm_assets.cli", "--home", str(home), "demo"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return Settings(home=home)


@pytest.fixture(scope="module")
def ui(demo_home) -> Iterator[str]:
    """``hltm dev`` on the demo's home; its URL once the webserver answers."""
    port = free_port()
    log = open(demo_home.home.parent / "dev.log", "w")  # closed below, with the server
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hltm_assets.cli",
            "--home",
            str(demo_home.home),
            "dev",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # dagster dev starts a webserver and a daemon: stop them all
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(url + "/server_info", timeout=5)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    text = (demo_home.home.parent / "dev.log").read_text()[-3000:]
                    pytest.fail(f"hltm dev did not come up on {url}:\n{text}")
                time.sleep(1)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def ui_metadata(url: str, asset: str) -> dict[str, dict]:
    """Per partition, the metadata the UI shows for its latest materialization."""
    data = ui_graphql(url, MATERIALIZATIONS, {"key": {"path": [asset]}, "partitions": None})
    out: dict[str, dict] = {}
    for event in data["assetOrError"]["assetMaterializations"]:  # newest first
        entries = {}
        for entry in event["metadataEntries"]:
            values = [v for k, v in entry.items() if k != "label" and v is not None]
            entries[entry["label"]] = values[0] if values else None
        out.setdefault(event["partition"], entries | {"run": event["runId"]})
    return out


def memory_views(settings: Settings) -> tuple[dict, dict, dict]:
    """Per node: facet and QA counts, leaf count and one-sentence summary (SQL on the views)."""
    with database.connect(settings.duckdb_path, read_only=True) as con:
        facets = dict(
            con.execute("SELECT node_id, count(*) FROM memory_facets GROUP BY 1").fetchall()
        )
        qa = dict(con.execute("SELECT node_id, count(*) FROM memory_qa GROUP BY 1").fetchall())
        summaries = dict(con.execute("SELECT node_id, concise FROM memory_summaries").fetchall())
    return facets, qa, summaries


def test_each_partition_of_the_demo_shows_its_own_counts_and_preview_in_the_ui(ui, demo_home):
    facets, qa, summaries = memory_views(demo_home)
    for asset, level in (("project_memory", "project"), ("seat_memory", "seat")):
        shown = ui_metadata(ui, asset)
        runs = {m["run"] for m in shown.values()}
        assert len(shown) > len(runs)  # multi-partition runs
        for key, meta in shown.items():
            node = f"{level}:{key}"
            assert meta["node_id"] == node
            assert meta["facets"] == facets[node] and meta["qa_pairs"] == qa[node]
            assert " ".join(summaries[node].split()) in meta["preview"]
            batch = json.loads(meta["batch"])
            assert batch["nodes_built"] > 1  # the batch's totals are not its own
        assert sum(m["embedded_texts"] for m in shown.values()) == sum(
            json.loads(m["batch"])["embedded_texts"]
            for m in {m["run"]: m for m in shown.values()}.values()
        )


def dismiss_newsletter(page) -> None:
    """Dagster's first-visit dialog ("Join the Dagster community"), when it shows."""
    dialog = page.get_by_text("Join the Dagster community")
    try:
        dialog.wait_for(timeout=5_000)
    except Exception:  # it did not show: nothing to dismiss
        return
    page.get_by_role("button", name="Skip").click()
    dialog.wait_for(state="hidden", timeout=10_000)


def test_the_partition_page_shows_the_preview_in_a_browser(ui, demo_home, chromium):
    with database.connect(demo_home.duckdb_path, read_only=True) as con:
        seat, concise, leaves = con.execute(
            "SELECT n.node_id, s.concise, n.leaf_count FROM memory_nodes n "
            "JOIN memory_summaries s USING (node_id) WHERE n.level = 'seat' "
            "ORDER BY n.node_id LIMIT 1"
        ).fetchone()
    key = seat.split(":", 1)[1]
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{ui}/assets/seat_memory?view=partitions&partition={key}")
        page.get_by_text(seat, exact=True).first.wait_for(timeout=120_000)  # its node_id
        dismiss_newsletter(page)
        # A markdown entry is a link in the metadata table; it opens the rendered preview.
        page.locator("tr:has-text('preview')").get_by_text("[Show Markdown]").click()
        page.get_by_text(concise, exact=False).first.wait_for(timeout=30_000)
        assert page.get_by_text(f" of {leaves} projects", exact=False).count() > 0
        if path := os.environ.get("HLTM_SCREENSHOT_UI"):
            page.screenshot(path=path)
    finally:
        page.close()


RUN_TAGS = """
query($id: ID!) { runOrError(runId: $id) { ... on Run { tags { key value } } } }"""


def run_tags(url: str, run_id: str) -> dict[str, str]:
    tags = ui_graphql(url, RUN_TAGS, {"id": run_id})["runOrError"]["tags"]
    return {t["key"]: t["value"] for t in tags}


def test_a_project_materialized_in_the_browser_reaches_its_seat_and_account(
    ui, demo_home, chromium
):
    """Materialize one project partition by hand (the asset page's "Materialize…" dialog):
    automation then materializes exactly its seat, then its account (BENCHMARKS.md times it).
    Last in this module: it replaces the latest materializations the tests above read."""
    with database.connect(demo_home.duckdb_path, read_only=True) as con:
        project, seat, account = con.execute(
            "SELECT p.project_id, p.seat_id, s.account_id FROM sot_projects p "
            "JOIN sot_seats s USING (seat_id) ORDER BY p.project_id LIMIT 1 OFFSET 6"
        ).fetchone()
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{ui}/assets/project_memory?view=partitions&partition={project}")
        page.get_by_text(f"project:{project}", exact=True).first.wait_for(timeout=120_000)
        dismiss_newsletter(page)
        page.get_by_role("button", name="Materialize…").first.click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_text("1 partition").wait_for(timeout=30_000)  # the page's partition
        clicked = time.time()
        dialog.get_by_role("button", name="Launch 1 run").click()
        page.get_by_text("Launched run").first.wait_for(timeout=60_000)  # the UI's toast
    finally:
        page.close()
    chain = (("project_memory", project), ("seat_memory", seat), ("account_memory", account))
    found: dict[str, tuple[float, str]] = {}
    deadline = time.monotonic() + 300  # a bound on a stuck daemon, not the freshness asserted
    while len(found) < len(chain) and time.monotonic() < deadline:
        for asset, partition in chain:
            latest = latest_materialization(ui, asset, partition)
            if asset not in found and latest and latest[0] > clicked:
                found[asset] = latest
        time.sleep(0.5)
    assert set(found) == {asset for asset, _ in chain}, found
    # Built in order, each level by its own run: the project by the click, the parents by
    # the automation sensor, after their child; each run in a worker started ahead of it.
    times = [found[asset][0] for asset, _ in chain]
    assert times == sorted(times)
    tags = {asset: run_tags(ui, run) for asset, (_, run) in found.items()}
    assert "dagster/sensor_name" not in tags["project_memory"]
    assert tags["seat_memory"]["dagster/sensor_name"] == "hltm_automation"
    assert tags["account_memory"]["dagster/sensor_name"] == "hltm_automation"
    assert all(WORKER_PID_TAG in t for t in tags.values()), tags
    # No other seat or account was built by it.
    for asset, partition in chain[1:]:
        data = ui_graphql(ui, MATERIALIZATIONS, {"key": {"path": [asset]}, "partitions": None})
        after = {
            e["partition"]
            for e in data["assetOrError"]["assetMaterializations"]
            if e["runId"] == found[asset][1]
        }
        assert after == {partition}
