"""POST /allowlist/closure against fixture upstreams: the names equal what real pip and real npm
resolve for the same specs from the same upstream, each marked against the policy."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from tests.support import clients
from tests.support.closure_trees import (  # noqa: F401 - fixtures pypi_upstream, npm_upstream, live_env
    node_tree_upstream,
    python_tree_upstream,
    trees_live_env,
)
from tests.support.index_fixtures import set_policy
from tests.support.index_live import sqlite_store  # noqa: F401 - fixture database_url
from tests.support.pypi_upstream import normalize


def closure(live, language: str, *specs: str, role: str = "admin"):
    body = {"language": language, "specs": list(specs)}
    return live.call("POST", "/api/v1/workspaces/acme/allowlist/closure", live.tokens[role], body)


def names(reply) -> set[str]:
    assert reply.status == 200, reply.body
    return {n["name"] for n in reply.json["names"]}


def pip_resolves(tmp_path, index: str, *specs: str) -> set[str]:
    """What real pip would install: `pip install --dry-run --report`, nothing installed."""
    report = tmp_path / "report.json"
    argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-cache-dir"]
    argv += ["--disable-pip-version-check", "--report", str(report), "--index-url", index, *specs]
    outcome = clients.run(argv, clients.clean_env(tmp_path, PIP_CONFIG_FILE="/dev/null"))
    assert outcome.ok, outcome.output
    return {normalize(i["metadata"]["name"]) for i in json.loads(report.read_text())["install"]}


def npm_resolves(tmp_path, registry: str, *specs: str) -> set[str]:
    """What real npm would install: its lockfile (`--package-lock-only` resolves, installs nothing)."""
    outcome = clients.npm(tmp_path, registry, "unused", "install", "--package-lock-only", "--ignore-scripts", *specs)
    assert outcome.ok, outcome.output
    lock = json.loads((tmp_path / "project" / "package-lock.json").read_text())
    return {
        entry.get("name") or path.rpartition("node_modules/")[2]
        for path, entry in lock["packages"].items()
        if path  # "" is the project itself
    }


@pytest.mark.parametrize("specs", [["webkit"], ["webkit[socks]"], ["urlkit>=2", "webkit"], ["urlkit<2"]])
def test_a_python_closure_names_what_pip_installs(live, app, tmp_path, pypi_upstream, specs):
    set_policy(app, "denylist")
    assert names(closure(live, "python", *specs)) == pip_resolves(tmp_path, pypi_upstream.url + "/simple/", *specs)


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
@pytest.mark.parametrize("specs", [["app-a"], ["lib-b@^1"], ["lib-b@2"], ["app-a", "peer-c@2.0.0"]])
def test_a_node_closure_names_what_npm_installs(live, app, tmp_path, npm_upstream, specs):
    set_policy(app, "denylist")
    assert names(closure(live, "node", *specs)) == npm_resolves(tmp_path, npm_upstream.url + "/", *specs)


def test_each_name_is_marked_against_the_policy_with_what_needs_it(live, app):
    app.save_policy(
        "acme", {"python": {"mode": "allowlist", "allow": ["webkit", "urlkit"], "deny": ["evil-thing"]}}, by="founder"
    )
    app.access.grant_exception("acme", "python", "idnakit", by="founder")
    reply = closure(live, "python", "webkit")
    found = {n["name"]: n for n in reply.json["names"]}
    assert {k: v["status"] for k, v in found.items()} == {
        "webkit": "allowed",
        "urlkit": "allowed",
        "cycle-a": "unlisted",
        "cycle-b": "unlisted",
        "idnakit": "allowed",  # an exception counts
        "certkit": "unlisted",
        "evil-thing": "denied",
    }
    assert found["webkit"]["requested"] and found["webkit"]["needed_by"] == []
    assert found["cycle-a"]["needed_by"] == ["cycle-b", "urlkit"] and found["urlkit"]["versions"] == ["2.0"]
    assert found["evil-thing"]["needed_by"] == ["certkit"] and found["evil-thing"]["reason"] == "matches-the-deny-list"


def test_a_closure_records_nothing(live, app):
    version = set_policy(app, "allowlist")
    before = app.audit.decisions("acme", limit=1000)["decisions"]
    assert names(closure(live, "python", "webkit"))
    assert app.audit.decisions("acme", limit=1000)["decisions"] == before
    assert app.policy("acme")["version"] == version


def test_a_closure_is_for_admins_and_names_bad_specs(live, app):
    assert closure(live, "python", "webkit", role="auditor").status == 403
    reply = closure(live, "python", "webkit", "./local/dir", "https://example.org/x.whl")
    assert reply.status == 422
    assert [e["field"] for e in reply.json["errors"]] == ["specs[1]", "specs[2]"]


def test_a_name_upstream_does_not_have_is_reported_not_guessed(live, app):
    reply = closure(live, "node", "no-such-package")
    assert reply.status == 200, reply.body
    assert reply.json["unresolved"] == [
        {"name": "no-such-package", "spec": "latest", "why": "the upstream registry has no such package"}
    ]
