"""The memory inspector in a real headless browser (Playwright on Debian's chromium): a user
clicks from the top page to a seat, reads its summary and facets, asks through the form and
follows a citation; the same pages and form work with JavaScript disabled.

The browser is the ``chromium`` fixture (conftest.py): skipped when Playwright or Debian's
chromium is missing, a failure under ``HLTM_REQUIRE_BROWSER`` (CI). With
``HLTM_SCREENSHOT=docs/inspector.png`` it also writes a screenshot of a seat page (of the home
in ``HLTM_SCREENSHOT_HOME``, e.g. the demo's, else the test home).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hltm_resources.config import Settings
from tests.test_inspector import QUESTION, rows, serving

pytestmark = pytest.mark.slow

VIEWPORT = {"width": 1200, "height": 900}


@pytest.fixture(scope="module")
def browser(chromium):
    return chromium


@pytest.fixture(scope="module")
def base(built_home) -> Iterator[str]:
    with serving(built_home) as url:
        yield url


@pytest.fixture(scope="module")
def seat(built_home) -> dict:
    """The first seat with more than one project, with its account and summary."""
    seat_id, name, leaves, account, account_name, path = rows(
        built_home,
        "SELECT s.node_id, s.name, s.leaf_count, a.node_id, a.name, s.path "
        "FROM memory_nodes s JOIN memory_nodes a ON a.node_id = s.parent_id "
        "WHERE s.level = 'seat' AND s.leaf_count > 1 ORDER BY s.node_id LIMIT 1",
    )[0]
    concise = rows(built_home, "SELECT concise FROM memory_summaries WHERE node_id = ?", [seat_id])[
        0
    ][0]
    return {
        "id": seat_id,
        "name": name,
        "leaves": leaves,
        "account": account_name,
        "path": path,
        "concise": concise,
    }


def test_a_user_clicks_to_a_seat_asks_and_follows_a_citation(built_home, browser, base, seat):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(base + "/")
    page.get_by_role("link", name=seat["account"], exact=True).click()
    page.get_by_role("link", name=seat["name"], exact=True).click()
    assert page.url.endswith("/node/" + seat["id"])

    assert page.locator(".lead").inner_text() == seat["concise"]
    assert re.search(rf": \d+ of {seat['leaves']} projects", page.inner_text("main"))

    page.fill("form.ask input[name=q]", QUESTION)
    page.click("form.ask button[type=submit]")
    page.wait_for_url("**/ask?**")
    assert page.locator(".answer").inner_text().strip()
    citations = page.locator("h2:has-text('Citations') + ol a")
    assert citations.count() >= 1

    cited = citations.first.get_attribute("href").removeprefix("/node/")
    with page.expect_navigation() as opened:
        citations.first.click()
    assert opened.value.status == 200
    assert page.locator("h1").inner_text().strip()
    (cited_path,) = rows(built_home, "SELECT path FROM memory_nodes WHERE node_id = ?", [cited])[0]
    assert cited_path == seat["path"] or cited_path.startswith(seat["path"] + "/")
    page.close()


def test_pages_and_the_ask_form_work_without_javascript(browser, base, seat):
    context = browser.new_context(java_script_enabled=False, viewport=VIEWPORT)
    page = context.new_page()
    response = page.goto(base + "/node/" + seat["id"])
    assert response.status == 200
    assert page.locator(".lead").inner_text() == seat["concise"]

    page.fill("form.ask input[name=q]", QUESTION)
    with page.expect_navigation() as answered:
        page.press("form.ask input[name=q]", "Enter")  # the browser submits the form: no script
    assert answered.value.status == 200
    assert "/ask?" in page.url
    assert page.locator(".answer").inner_text().strip()
    assert page.locator("h2:has-text('Citations') + ol a").count() >= 1
    context.close()


def test_a_user_finds_a_node_by_name_and_sees_the_sentence_a_facet_comes_from(
    built_home, browser, base, seat
):
    """The header's search box, then a leaf's facet to its document, the sentence marked:
    plain forms, links and <details>, with JavaScript off."""
    leaf, leaf_name = rows(
        built_home,
        "SELECT node_id, name FROM memory_nodes WHERE parent_id = ? ORDER BY node_id LIMIT 1",
        [seat["id"]],
    )[0]
    value, sources = rows(
        built_home,
        "SELECT value, source_ids FROM memory_facets WHERE node_id = ? AND key = 'location'",
        [leaf],
    )[0]
    body = rows(built_home, "SELECT text FROM sot_documents WHERE doc_id = ?", [sources[0]])[0][0]
    context = browser.new_context(java_script_enabled=False, viewport=VIEWPORT)
    page = context.new_page()
    page.goto(base + "/")
    page.fill("form.search input[name=q]", seat["name"].lower())
    with page.expect_navigation():
        page.press("form.search input[name=q]", "Enter")
    assert "/search?" in page.url
    page.get_by_role("link", name=seat["name"], exact=True).click()
    assert page.url.endswith("/node/" + seat["id"])

    page.get_by_role("link", name=leaf_name, exact=True).click()
    row = page.locator("tr", has=page.locator("td.key", has_text="location"))
    row.locator("summary").click()  # a <details>: opens without script
    with page.expect_navigation() as opened:
        row.get_by_role("link", name=sources[0], exact=True).click()
    assert opened.value.status == 200
    marked = page.locator("pre mark")
    assert marked.count() >= 1 and marked.first.is_visible()
    for i in range(marked.count()):
        assert marked.nth(i).inner_text().strip() in body
    if value in body:
        assert any(value in marked.nth(i).inner_text() for i in range(marked.count()))
    assert page.locator(".notice.marked").is_visible()
    context.close()


def screenshot_seat_page(browser, base: str, seat_id: str, path: Path) -> Path:
    """A viewport-sized PNG of a seat's page (the README's picture)."""
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{base}/node/{seat_id}")
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    page.close()
    return path


@pytest.mark.skipif(not os.environ.get("HLTM_SCREENSHOT"), reason="set HLTM_SCREENSHOT=path")
def test_screenshot_of_a_seat_page(browser, built_home):
    home = os.environ.get("HLTM_SCREENSHOT_HOME")
    settings = Settings.from_env(home=home) if home else built_home
    seat_id = rows(settings, "SELECT min(node_id) FROM memory_nodes WHERE level = 'seat'")[0][0]
    with serving(settings) as url:
        out = screenshot_seat_page(browser, url, seat_id, Path(os.environ["HLTM_SCREENSHOT"]))
    assert out.stat().st_size > 10_000
