"""The package index's application side on SQLite and PostgreSQL: the same verdicts as
`/evaluate`, one decision per fetch kind within a run, runs that expire, root listings."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from application.formats import iso
from domain.errors import InvalidInputError, NotFoundError
from domain.run import Run, new_run_secret
from domain.token import digest
from tests.support.tamper import Tamperer


@pytest.fixture
def sandbox(app, workspace) -> dict:
    secret = app.issue_token(workspace, "sbx", "sandbox", by="founder")["token"]
    return app.authenticate(secret)


def policy(app, python_mode="allowlist", allow=(), deny=()):
    app.save_policy("acme", {"python": {"mode": python_mode, "allow": list(allow), "deny": list(deny)}}, by="x")


def test_the_index_judges_exactly_as_evaluate_does(app, sandbox):
    policy(app, "allowlist", allow=["alpha"], deny=["gamma"])
    for name in ("alpha", "beta", "gamma"):  # a run each: a run's first denial fails the rest of it
        principal = app.index.authenticate(app.index.runs.start("acme", sandbox)["token"])
        index = app.index.gate.judge(principal, "python", name, "page")
        (evaluated,) = app.evaluation.evaluate("acme", "python", [name])["decisions"]
        assert (index["allowed"], index["reason"], index["message"], index["policy_version"]) == (
            evaluated["allowed"],
            evaluated["reason"],
            evaluated.get("message"),
            evaluated["policy_version"],
        )


def test_one_decision_per_run_project_and_request_kind(app, sandbox):
    policy(app, "denylist")
    principal = app.index.authenticate(app.index.runs.start("acme", sandbox)["token"])
    first = app.index.gate.judge(principal, "python", "alpha", "page")
    again = app.index.gate.judge(principal, "python", "alpha", "page")
    assert first["recorded"] and not again["recorded"] and again["id"] == first["id"]
    wheel = app.index.gate.judge(principal, "python", "alpha", "download", "alpha-1.0-py3-none-any.whl", "1.0")
    sdist = app.index.gate.judge(principal, "python", "alpha", "download", "alpha-1.0.tar.gz", "1.0")
    assert wheel["recorded"] and sdist["recorded"] and wheel["id"] != sdist["id"]
    other_run = app.index.authenticate(app.index.runs.start("acme", sandbox)["token"])
    assert app.index.gate.judge(other_run, "python", "alpha", "page")["recorded"]
    assert len(app.audit.decisions("acme", {"source": "index"})["decisions"]) == 4


def test_a_fetch_read_just_before_a_save_elsewhere_is_not_recorded_after_it(app, open_app, sandbox):
    """The token and the head read together, then a Save commits in another process before the
    recording: nothing is recorded (as for /evaluate), and judged again the fetch is the new
    head's. Such decisions had been recorded after the newer version, carrying the older one."""
    from application.store.guards import StaleCaller

    policy(app, "allowlist", allow=["flip", "other"])
    run = app.index.runs.start("acme", sandbox)["token"]
    principal = app.index.authenticate(run)  # reads the head: the version allowing flip
    app.index.gate.judge(principal, "python", "other", "page")  # this worker caches that version's rules
    policy(open_app(), "allowlist", allow=["other"])  # another worker removes flip
    with pytest.raises(StaleCaller):
        app.index.gate.judge(principal, "python", "flip", "page")
    assert [d["name"] for d in app.audit.decisions("acme", {"source": "index"})["decisions"]] == ["other"]
    again = app.index.gate.judge(app.index.authenticate(run), "python", "flip", "page")
    assert (again["allowed"], again["reason"]) == (False, "not-on-the-allow-list")


def test_a_plain_sandbox_token_may_read_the_index_and_an_auditor_may_not(app, workspace):
    from application.index import may_read

    for role, allowed in (("sandbox", True), ("admin", True), ("owner", True), ("auditor", False)):
        secret = app.issue_token(workspace, f"{role}-x", role, by="founder")["token"]
        principal = app.index.authenticate(secret)
        assert principal.run is None and may_read(principal) is allowed
    assert app.index.authenticate("rcp_unknown") is None and app.index.authenticate("rcr_unknown") is None


def test_an_expired_run_token_no_longer_reads_the_index(app, sandbox):
    secret = new_run_secret()
    expired = iso(datetime.now(UTC) - timedelta(seconds=1))
    app.save(
        Run(
            secret_digest=digest(secret),
            workspace="acme",
            started_by=sandbox["id"],
            by=sandbox["name"],
            expires_at=expired,
            context={},
        )
    )
    assert app.index.authenticate(secret) is None
    live = app.index.runs.start("acme", sandbox, seconds=60)
    assert app.index.authenticate(live["token"]).run == live["id"]


def test_a_run_lasts_between_a_minute_and_a_day(app, sandbox):
    for seconds in (59, 86_401, True, "60"):
        with pytest.raises(InvalidInputError):
            app.index.runs.start("acme", sandbox, seconds=seconds)


def test_a_path_that_names_no_project_is_not_found(app, sandbox):
    principal = app.index.authenticate(app.index.runs.start("acme", sandbox)["token"])
    for language, name in (("python", "alpha==1.0"), ("python", "../etc"), ("node", "alpha@1"), ("node", "")):
        with pytest.raises(NotFoundError):
            app.index.gate.judge(principal, language, name, "page")


class Upstream:
    """An upstream project list whose reads are counted."""

    def __init__(self, names, revision="r1"):
        self.listed, self.current, self.reads = list(names), revision, 0

    def revision(self) -> str:
        return self.current

    def names(self):
        self.reads += 1
        return self.listed


class NoUpstream:
    def revision(self):
        pytest.fail("allowlist mode needs no upstream")

    names = revision


def test_the_root_lists_allowed_names_only(app, workspace):
    policy(app, "allowlist", allow=["alpha", "beta"], deny=["beta"])
    assert app.index.gate.listing("acme", "python", NoUpstream()).names == ("alpha",)
    policy(app, "denylist", deny=["beta"])
    assert app.index.gate.listing("acme", "python", Upstream(["alpha", "beta", "gamma"])).names == ("alpha", "gamma")


def test_the_root_listing_is_judged_once_per_policy_version_and_upstream_revision(app, workspace):
    policy(app, "denylist", deny=["beta"])
    upstream = Upstream(["alpha", "beta", "gamma"])
    first = app.index.gate.listing("acme", "python", upstream)
    assert app.index.gate.listing("acme", "python", upstream) is first and upstream.reads == 1
    upstream.listed, upstream.current = ["alpha", "beta", "delta"], "r2"  # upstream's list changed
    assert app.index.gate.listing("acme", "python", upstream).names == ("alpha", "delta") and upstream.reads == 2
    policy(app, "denylist", deny=["delta"])  # a new policy version
    again = app.index.gate.listing("acme", "python", upstream)
    assert again.names == ("alpha", "beta") and upstream.reads == 3 and again.tag != first.tag


def test_a_file_name_from_the_url_is_bounded_and_printable_before_it_is_stored(app, sandbox):
    principal = app.index.authenticate(app.index.runs.start("acme", sandbox)["token"])
    for file in ("a" * 256 + ".whl", "alpha\x00.whl"):
        with pytest.raises(InvalidInputError):
            app.index.gate.judge(principal, "python", "alpha", "download", file, None)
    assert app.audit.decisions("acme", {"source": "index"})["decisions"] == []


def test_a_run_fails_closed_at_its_first_project_denial(app, sandbox):
    policy(app, "allowlist", allow=["alpha"])
    principal = app.index.authenticate(app.index.runs.start("acme", sandbox)["token"])
    assert app.index.gate.judge(principal, "python", "alpha", "page")["allowed"]
    denied = app.index.gate.judge(principal, "python", "beta", "page")
    assert (denied["allowed"], denied["reason"]) == (False, "not-on-the-allow-list")
    for request, file in (("page", None), ("metadata", "alpha-0.9-py3-none-any.whl"), ("download", "alpha-0.9.tar.gz")):
        refused = app.index.gate.judge(principal, "python", "alpha", request, file, "0.9" if file else None)
        assert (refused["allowed"], refused["reason"]) == (False, "run-failed")
        assert refused["message"].startswith(
            "this run already failed: beta (python) was denied \u2014 not-on-the-allow-list: beta is not on the"
        )
        assert refused["message"].endswith("; nothing more is served to it")
    other_run = app.index.authenticate(app.index.runs.start("acme", sandbox)["token"])
    assert app.index.gate.judge(other_run, "python", "alpha", "page")["allowed"]  # one run's failure is its own


def test_a_run_failed_in_another_worker_fails_here_too(app, open_app, sandbox):
    policy(app, "allowlist", allow=["alpha"])
    secret = app.index.runs.start("acme", sandbox)["token"]
    other_worker = open_app()  # a second process's application on the same store
    try:
        here, there = app.index.authenticate(secret), other_worker.index.authenticate(secret)
        assert app.index.gate.judge(here, "python", "alpha", "page")["allowed"]  # not failed yet: known to no one
        assert not other_worker.index.gate.judge(there, "python", "beta", "page")["allowed"]
        here = app.index.authenticate(secret)  # the next fetch, a request of its own: its token read again
        refused = app.index.gate.judge(here, "python", "alpha", "download", "alpha-1.0-py3-none-any.whl", "1.0")
        assert refused["reason"] == "run-failed" and "beta (python) was denied" in refused["message"]
    finally:
        other_worker.close()


def test_a_plain_token_fails_closed_for_its_window_after_a_project_denial(app, workspace, monkeypatch):
    import application.index.gate

    monkeypatch.setattr(application.index.gate, "TOKEN_WINDOW_SECONDS", 2)  # the real clock, a shorter window
    policy(app, "allowlist", allow=["alpha"])
    tokens = [app.issue_token(workspace, f"sbx-{n}", "sandbox", by="founder")["token"] for n in (1, 2)]
    principal, another = (app.index.authenticate(t) for t in tokens)
    assert not app.index.gate.judge(principal, "python", "beta", "page")["allowed"]
    refused = app.index.gate.judge(principal, "python", "alpha", "page")
    assert refused["reason"] == "run-failed"
    assert refused["message"].startswith("this token (reading the index without a run, for 0 minutes after")
    assert app.index.gate.judge(another, "python", "alpha", "page")["allowed"]  # one token's failure is its own
    time.sleep(2.1)
    assert app.index.gate.judge(principal, "python", "alpha", "page")["allowed"]  # the window is over


def test_an_unknown_name_the_upstream_later_has_is_said_to_exist_now(app, sandbox):
    policy(app, "denylist")

    def fetch(name: str, found: bool, why: str | None = None) -> None:
        """One client's page fetch as the index records it: judged, then the upstream's answer."""
        principal = app.index.authenticate(app.index.runs.start("acme", sandbox)["token"])
        assert app.index.gate.judge(principal, "python", name, "page")["allowed"]
        if why is not None:
            app.index.gate.upstream_failed(principal, "python", name, "page", why)
        elif not found:
            app.index.gate.not_found(principal, "python", name, "page")

    def now_exists() -> dict:
        return {n["name"]: n["now_exists"] for n in app.unknown_names("acme", 7)["names"]}

    fetch("slop-a", found=False)
    fetch("slop-b", found=False)
    fetch("slop-c", found=False)
    assert now_exists() == {"slop-a": False, "slop-b": False, "slop-c": False}
    fetch("slop-a", found=False)  # still missing in a later run
    fetch("slop-b", found=True)  # registered since: the index served its page
    fetch("slop-c", found=True, why="HTTP 502")  # an allowed page the upstream failed: nothing known
    assert now_exists() == {"slop-a": False, "slop-b": True, "slop-c": False}


@pytest.mark.parametrize("spaced", [False, True], ids=["compact", "written-before"])
def test_a_refused_declaration_denies_no_project_whatever_its_rows_json_spacing(app, sandbox, database_url, spaced):
    """A version bundling a denied name is hidden and fails no run: the run's denial read tells
    such a decision by the `declared_by` key in the decisions row's JSON, compact as rows are
    written now, or with spaces as rows written before were."""
    app.save_policy("acme", {"node": {"mode": "denylist", "deny": ["beta"]}}, by="x")
    secret = app.index.runs.start("acme", sandbox)["token"]
    principal = app.index.authenticate(secret)
    declared = {"1.1.0": {"name": "bundler", "version": "1.1.0", "bundleDependencies": ["beta"]}}
    assert app.index.gate.hidden_versions(principal, "node", "bundler", declared, "page")  # 1.1.0 is hidden
    tamper = Tamperer(database_url)
    try:
        rows = tamper.sql("SELECT id, record FROM rcp_decisions")
        if spaced:
            for decision_id, text in rows:
                spaced_text = json.dumps(json.loads(text), sort_keys=True)
                tamper.sql("UPDATE rcp_decisions SET record = %s WHERE id = %s", (spaced_text, decision_id))
        said = '"declared_by": "' if spaced else '"declared_by":"'
        assert [r for (r,) in tamper.sql("SELECT record FROM rcp_decisions") if said in r]
    finally:
        tamper.close()
    again = app.index.authenticate(secret)  # the next request reads whether its run has a denial
    assert app.index.gate.judge(again, "node", "bundler", "page")["allowed"]  # the run goes on
