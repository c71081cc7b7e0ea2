"""The Overview's watch lists over a real server and the fixture npm upstream, on SQLite and
PostgreSQL: known malware fetched (a fetch made before its advisory was imported counts, one
refused after it does not) and names the upstream did not have (and whether one exists now)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.interface.test_console import signed_in
from tests.interface.test_console_pages import _links
from tests.support.index_fixtures import set_policy, start_run
from tests.support.index_live import index_live_env  # noqa: F401 - the fixture live_env
from tests.support.npm_upstream import NpmUpstream, Release

MAL = Path(__file__).parents[1] / "corpus" / "osv" / "malicious" / "npm" / "0-dns" / "MAL-2022-9.json"
W = "/api/v1/workspaces/acme"


@pytest.fixture
def npm_upstream():
    upstream = NpmUpstream([Release("0-dns", "1.0.0"), Release("other", "1.0.0")])
    yield upstream
    upstream.close()


def fetch(live, run: dict, path: str) -> int:
    return live.call("GET", "/npm/acme/" + path, run["token"]).status


def test_the_overview_lists_malware_fetched_before_its_import_and_names_the_upstream_lacked(live, app, npm_upstream):
    set_policy(app, "denylist")
    before = start_run(live, sandbox="sbx-before")
    assert fetch(live, before, "0-dns") == 200 and fetch(live, before, "0-dns/-/0-dns-1.0.0.tgz") == 200
    for sandbox in ("sbx-a", "sbx-b"):
        assert fetch(live, start_run(live, sandbox=sandbox), "reqeusts-slop") == 404
    once = start_run(live, sandbox="sbx-a")
    assert all(fetch(live, once, f"slop-{n}") == 404 for n in range(10))  # asked by one sandbox: shown after
    imported = live.call("POST", W + "/advisories", live.tokens["owner"], [json.loads(MAL.read_text())])
    assert imported.status == 201, imported.body
    after = start_run(live, sandbox="sbx-after")
    assert fetch(live, after, "0-dns/-/0-dns-1.0.0.tgz") == 403  # refused: no exposure

    console = signed_in(live, "auditor")
    page = console.get("/console/overview")
    assert page.status == 200, page.plain
    assert "at most 10 of each" in page.plain
    assert "Known malware fetched Advisory Versions Fetches Sandboxes MAL-2022-9 0-dns 1.0.0 Node 1 1" in page.plain
    assert re.search(r"reqeusts-slop Node 2 \d{4}-\d\d-\d\d [\d:]+ UTC Still missing", page.plain)
    assert len(re.findall(r"slop-\d Node 1 \d{4}-", page.plain)) == 9 and "and 1 more" in page.plain
    exposure = console.get(_links(page)["MAL-2022-9"])
    assert exposure.status == 200, exposure.plain
    assert "1 fetch by 1 run in 1 sandbox" in exposure.plain
    assert before["id"] in exposure.plain and "sbx-after" not in exposure.plain

    npm_upstream.add(Release("reqeusts-slop", "1.0.0"))  # registered since
    assert fetch(live, start_run(live, sandbox="sbx-c"), "reqeusts-slop") == 200
    again = console.get("/console/overview").plain
    assert re.search(r"reqeusts-slop Node 2 \d{4}-\d\d-\d\d [\d:]+ UTC Exists now and is served", again)
    assert console.get("/console/advisories/MAL-0").status == 404
