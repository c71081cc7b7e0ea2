"""What the package index records, on SQLite and PostgreSQL: runs, one decision per fetch kind,
point-in-time answers that match, and the audit log and exports that show index decisions."""

from __future__ import annotations

import base64
import csv
import io
from collections import Counter

from domain.limits import MAX_RUN_DECISIONS, MAX_VERSION_DECISIONS
from tests.support.index_fixtures import run_decisions, set_policy, start_run
from tests.support.index_live import index_live_env  # noqa: F401 - the live_env fixture
from tests.support.npm_upstream import Release
from tests.support.pypi_upstream import Dist

JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
RUNS = "/api/v1/workspaces/acme/runs"


def fetch(live, path: str, token: str, method: str = "GET"):
    auth = "Basic " + base64.b64encode(f"pip:{token}".encode()).decode()
    return live.call(method, path, headers={"Authorization": auth, "Accept": JSON_ACCEPT})


def test_runs_are_started_by_the_roles_that_may_evaluate_and_never_by_an_auditor(live):
    for role in ("sandbox", "admin", "owner"):
        reply = live.call("POST", RUNS, live.tokens[role], {})
        assert reply.status == 201, role
        assert reply.json["token"].startswith("rcr_") and reply.json["expires_at"].endswith("Z")
        assert reply.json["pypi"] == f"{live.url}/pypi/acme/simple/" and reply.json["npm"] == f"{live.url}/npm/acme/"
    assert live.call("POST", RUNS, live.tokens["auditor"], {}).status == 403
    assert live.call("POST", RUNS, None, {}).status == 401
    assert live.call("POST", RUNS, live.tokens["sandbox"], {"ttl_seconds": 5}).status == 422


def test_repeated_fetches_in_a_run_are_one_decision_and_each_file_is_one_more_and_a_head_probe_is_metadata(live, app):
    set_policy(app, "allowlist", python=["alpha"])
    run = start_run(live)
    for _ in range(3):  # a resolver backtracking asks again and again
        assert fetch(live, "/pypi/acme/simple/alpha/", run["token"]).status == 200
    wheel = "/pypi/acme/files/alpha/alpha-1.0-py3-none-any.whl"
    for method in ("HEAD", "GET", "GET"):
        assert fetch(live, wheel, run["token"], method).status == 200
    assert fetch(live, "/pypi/acme/files/alpha/alpha-1.0.tar.gz", run["token"]).status == 200
    for made_up in ("alpha-7.7-py3-none-any.whl", "alpha-7.7.tar.gz.metadata"):  # no such file: nothing to record
        assert fetch(live, f"/pypi/acme/files/alpha/{made_up}", run["token"]).status == 404
    # The denied page once (quarantined), then the failed run's refusals: one more decision.
    assert [fetch(live, "/pypi/acme/simple/beta/", run["token"]).status for _ in range(3)] == [200, 403, 403]
    decisions = run_decisions(live, run)
    kinds = [(d["name"], d["request"], d.get("file"), d["reason"]) for d in decisions]
    assert kinds == [
        ("beta", "page", None, "not-on-the-allow-list"),  # denied first
        ("beta", "page", None, "run-failed"),
        ("alpha", "page", None, "matches-the-allow-list"),
        ("alpha", "metadata", "alpha-1.0-py3-none-any.whl", "matches-the-allow-list"),  # the HEAD probe
        ("alpha", "download", "alpha-1.0-py3-none-any.whl", "matches-the-allow-list"),
        ("alpha", "download", "alpha-1.0.tar.gz", "matches-the-allow-list"),
    ]
    another = start_run(live)  # a new run records afresh
    fetch(live, "/pypi/acme/simple/alpha/", another["token"])
    assert len(run_decisions(live, another)) == 1


def test_a_policy_change_during_a_run_records_the_new_verdict(live, app):
    before = set_policy(app, "allowlist", python=["alpha"])
    run = start_run(live)
    fetch(live, "/pypi/acme/simple/alpha/", run["token"])
    after = set_policy(app, "allowlist", python=[])
    fetch(live, "/pypi/acme/simple/alpha/", run["token"])
    outcomes = [(d["allowed"], d["policy_version"]) for d in run_decisions(live, run)]
    assert outcomes == [(False, after), (True, before)]


def test_index_decisions_name_who_asked_as_the_run_does_else_the_token(live, app):
    """A run's decisions name the actor and sandbox its context names (the gate's
    RUNCODE_POLICY_ACTOR and RUNCODE_POLICY_SANDBOX, as its `/evaluate` records them); a run that
    names no actor, and a token reading without a run, name the token."""
    set_policy(app, "denylist")
    named = live.call("POST", RUNS, live.tokens["sandbox"], {"context": {"sandbox": "sbx-9", "actor": "agent-9"}})
    unnamed = start_run(live)  # sandbox sbx-1, no actor
    for token in (named.json["token"], unnamed["token"], live.tokens["sandbox"]):
        assert fetch(live, "/pypi/acme/simple/alpha/", token).status == 200
    asked = {
        (d.get("run"), d["context"]["actor"], d["context"].get("sandbox"))
        for d in app.audit.decisions("acme")["decisions"]
    }
    assert asked == {
        (named.json["id"], "agent-9", "sbx-9"),
        (unnamed["id"], "sandbox-token", "sbx-1"),
        (None, "sandbox-token", None),
    }


def test_a_sandbox_reads_only_the_runs_it_started(live, app):
    set_policy(app, "denylist")
    run = start_run(live)
    fetch(live, "/pypi/acme/simple/alpha/", run["token"])
    other = app.issue_token("acme", "second-sandbox", "sandbox", by="founder")["token"]
    path = f"{RUNS}/{run['id']}/decisions"
    assert live.call("GET", path, other).status == 404
    mine = live.call("GET", path, live.tokens["sandbox"])
    assert mine.status == 200 and mine.json["run"]["context"] == {"sandbox": "sbx-1"}
    assert live.call("GET", path, live.tokens["auditor"]).json == mine.json
    assert live.call("GET", path, live.tokens["other-workspace"]).status == 404
    assert live.call("GET", f"{RUNS}/not-a-run/decisions", live.tokens["auditor"]).status == 404


def test_a_revoked_starter_ends_its_runs_at_once(live, app):
    set_policy(app, "denylist")
    issued = app.issue_token("acme", "short-lived", "sandbox", by="founder")
    run = live.call("POST", RUNS, issued["token"], {}).json
    assert fetch(live, "/pypi/acme/simple/alpha/", run["token"]).status == 200
    app.revoke_token("acme", issued["id"], by="founder")
    assert fetch(live, "/pypi/acme/simple/alpha/", run["token"]).status == 403


def test_a_run_ended_by_its_starter_or_an_admin_reads_the_index_no_more(live, app):
    set_policy(app, "denylist")
    other = app.issue_token("acme", "another-sandbox", "sandbox", by="founder")["token"]
    for ender in ("sandbox", "admin"):
        run = start_run(live)  # started by the sandbox token
        assert fetch(live, "/pypi/acme/simple/alpha/", run["token"]).status == 200
        for stranger, status in ((other, 404), (live.tokens["auditor"], 403), (live.tokens["other-workspace"], 404)):
            assert live.call("DELETE", f"{RUNS}/{run['id']}", stranger).status == status
        assert fetch(live, "/pypi/acme/simple/alpha/", run["token"]).status == 200  # none of them ended it
        for _ in range(2):  # ending is final: again changes nothing
            assert live.call("DELETE", f"{RUNS}/{run['id']}", live.tokens[ender]).status == 204
        assert fetch(live, "/pypi/acme/simple/alpha/", run["token"]).status == 403
        npm = live.call("GET", "/npm/acme/left-pad", headers={"Authorization": f"Bearer {run['token']}"})
        assert npm.status == 401
    assert live.call("DELETE", f"{RUNS}/not-a-run", live.tokens["admin"]).status == 404


def test_the_point_in_time_answer_for_an_index_decision_equals_the_decision(live, app):
    set_policy(app, "allowlist", python=["alpha"])
    decisions = []
    for path in ("/pypi/acme/simple/alpha/", "/pypi/acme/simple/beta/", "/npm/acme/beta"):
        run = start_run(live)  # a run each: after its first denial, a run's answers are run-failed
        fetch(live, path, run["token"])
        decisions += run_decisions(live, run)
    assert len(decisions) == 3
    for d in decisions:
        answer = live.call(
            "GET", f"/api/v1/workspaces/acme/packages/{d['language']}/{d['name']}?at={d['at']}", live.tokens["auditor"]
        ).json
        assert (answer["allowed"], answer["reason"], answer["policy_version"]) == (
            d["allowed"],
            d["reason"],
            d["policy_version"],
        )


def test_index_decisions_appear_in_the_decisions_api_and_its_exports_with_file_and_version(live, app):
    set_policy(app, "allowlist", python=["alpha"])
    run = start_run(live)
    fetch(live, "/pypi/acme/files/alpha/alpha-1.0-py3-none-any.whl", run["token"])
    listed = live.call("GET", "/api/v1/workspaces/acme/decisions?source=index", live.tokens["auditor"]).json
    (decision,) = listed["decisions"]
    assert (decision["file"], decision["package_version"], decision["run"]) == (
        "alpha-1.0-py3-none-any.whl",
        "1.0",
        run["id"],
    )
    exported = live.call("GET", "/api/v1/workspaces/acme/decisions?source=index&format=csv", live.tokens["auditor"])
    (row,) = list(csv.DictReader(io.StringIO(exported.body.decode())))
    assert (row["file"], row["package_version"], row["request"], row["source"]) == (
        "alpha-1.0-py3-none-any.whl",
        "1.0",
        "download",
        "index",
    )


def test_the_console_audit_log_shows_index_downloads_with_file_and_version(live, app):
    from tests.interface.test_console import signed_in

    set_policy(app, "allowlist", python=["alpha"])
    run = start_run(live)
    fetch(live, "/pypi/acme/files/alpha/alpha-1.0-py3-none-any.whl", run["token"])
    fetch(live, "/pypi/acme/simple/beta/", run["token"])
    rows = signed_in(live, "auditor").get("/console/audit", source="index").rows()
    assert [(r[2], r[3], r[5], r[7]) for r in rows] == [
        ("beta", "beta", "Denied not-on-the-allow-list", "index (page)"),
        (
            "alpha",
            "alphaalpha-1.0-py3-none-any.whl · version 1.0",
            "Allowed matches-the-allow-list",
            "index (download)",
        ),
    ]  # the spec cell holds the file and version under the spec (a <br> between)


def test_a_fetch_a_save_elsewhere_overtook_is_judged_again_and_recorded_by_the_new_version(
    live, app, open_app, monkeypatch
):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    run = start_run(live)
    assert fetch(live, "/pypi/acme/simple/beta/", run["token"]).status == 200  # this worker caches the version
    gate = type(app.index.gate)
    record = gate._record
    elsewhere = open_app()  # opened now: its start (tables made in one transaction) raced this app's sealer

    def overtaken(self, *args, **kwargs):  # another worker's Save commits between judging and recording
        monkeypatch.setattr(gate, "_record", record)
        set_policy(elsewhere, "allowlist", python=["beta"])
        return record(self, *args, **kwargs)

    monkeypatch.setattr(gate, "_record", overtaken)
    page = fetch(live, "/pypi/acme/simple/alpha/", run["token"])
    assert page.status == 200 and page.json["files"] == [], page.body  # quarantined: alpha is denied now
    alpha = [(d["allowed"], d["policy_version"]) for d in run_decisions(live, run) if d["name"] == "alpha"]
    assert alpha == [(False, app.policies.load_policy("acme").policy_version)]


def git_dependencies(count: int, prefix: str) -> dict[str, str]:
    return {f"{prefix}{i}": f"git+https://x.example/{prefix}{i}.git" for i in range(count)}


def declaring(decision: dict) -> str:
    """The project whose version declares what a decision judged (`wide@1.1.0`, `deep==1.0`)."""
    return decision["declared_by"].partition("@")[0].partition("==")[0]


def test_an_answer_records_a_bounded_few_of_what_its_versions_declare_and_counts_the_hidden_rest(
    live, app, npm_upstream, pypi_upstream
):
    """A reviewer's: one version declaring 5,000 git dependencies recorded 5,001 decisions for its
    packument and 5,001 more for its tarball, in every run; 1,000 versions of 20 each, 20,001 a
    fetch (seconds of the store's lock each; the store grew by gigabytes and every caller got 503).
    An answer records at most MAX_VERSION_DECISIONS refusals of what its versions declare, and
    the last one counts the versions it hid that none of them names; PyPI's Requires-Dist too."""
    node, python = {"mode": "denylist", "deny": []}, {"mode": "allowlist", "allow": ["deep"]}  # git: refused in both
    app.save_policy("acme", {"node": node, "python": python}, by="founder")
    npm_upstream.add(Release("wide", "1.0.0"))
    npm_upstream.add(Release("wide", "1.1.0", dependencies=git_dependencies(5000, "w")))
    for minor in range(120):
        npm_upstream.add(Release("tall", f"1.{minor}.0", dependencies=git_dependencies(20, f"t{minor}-")))
    requires = tuple(f"g{i} @ git+https://x.example/g{i}.git" for i in range(5000))
    pypi_upstream.add(Dist("deep", "1.0", files=("wheel",), requires=requires))
    run = start_run(live)
    wide = live.call("GET", "/npm/acme/wide", run["token"])
    assert wide.status == 200 and list(wide.json["versions"]) == ["1.0.0"], wide.body[:300]
    assert live.call("GET", "/npm/acme/wide/-/wide-1.1.0.tgz", run["token"]).status == 403
    for _ in range(2):  # a repeat records nothing more
        tall = live.call("GET", "/npm/acme/tall", run["token"])
        assert tall.status == 200 and len(tall.json["policyRestrictions"]["versions"]) == 120  # all hidden
    assert fetch(live, "/pypi/acme/files/deep/deep-1.0-py3-none-any.whl.metadata", run["token"]).status == 403
    page = fetch(live, "/pypi/acme/simple/deep/", run["token"])
    assert page.status == 200 and page.json["files"] == [], page.body[:300]

    declared = [d for d in run_decisions(live, run) if d.get("declared_by")]
    assert not any(d["allowed"] for d in declared)
    recorded = Counter((declaring(d), d["request"]) for d in declared)
    answers = (("wide", "page"), ("wide", "download"), ("tall", "page"), ("deep", "metadata"), ("deep", "page"))
    assert recorded == dict.fromkeys(answers, MAX_VERSION_DECISIONS)
    # tall 1.0.0 to 1.2.0 are named (20 + 20 + 10 of their dependencies): 117 versions more were hidden
    counted = [(declaring(d), d["context"]["more_hidden"]) for d in declared if "more_hidden" in d["context"]]
    assert counted == [("tall", 117)]
    assert {d["package_version"] for d in declared if declaring(d) == "tall"} == {"1.0.0", "1.1.0", "1.2.0"}


def test_the_versions_a_rule_hides_are_recorded_a_bounded_few_and_the_rest_counted(live, app, npm_upstream):
    """The same bound, and the same count of the rest, for the versions a rule beyond names hides."""
    for minor in range(60):
        npm_upstream.add(Release("scripts", f"1.{minor}.0", scripts={"postinstall": "node -e 0"}))
    app.save_policy("acme", {"node": {"rules": {"install_scripts": {"allow": [], "action": "enforce"}}}}, by="x")
    run = start_run(live)
    packument = live.call("GET", "/npm/acme/scripts", run["token"])
    assert packument.status == 200 and len(packument.json["policyRestrictions"]["versions"]) == 60
    refused = [d for d in run_decisions(live, run) if d["reason"] == "install-scripts"]
    assert len(refused) == MAX_VERSION_DECISIONS
    assert [d["context"]["more_hidden"] for d in refused if "more_hidden" in d["context"]] == [10]


def test_a_runs_project_denial_is_listed_first_however_many_refusals_it_has_and_a_cut_list_says_so(
    live, app, npm_upstream
):
    """A reviewer's: a run refused 12,000 versions (a packument's hidden ones), then denied `beta`:
    its decisions listed the first 10,000 refusals in the order made, without beta and without a
    sign that the list was cut, and the gate reported the install as npm's own failure. An
    answer records at most MAX_VERSION_DECISIONS refusals, so the run asks for 201 packuments."""
    set_policy(app, "denylist", node=["beta"])
    packages = [f"p{i:03}" for i in range(MAX_RUN_DECISIONS // MAX_VERSION_DECISIONS + 1)]
    for name in packages:
        npm_upstream.add(Release(name, "1.0.0", dependencies=git_dependencies(MAX_VERSION_DECISIONS, f"{name}-")))
    run = start_run(live)
    for name in packages:
        assert live.call("GET", f"/npm/acme/{name}", run["token"]).status == 200
    live.call("GET", "/npm/acme/beta", run["token"])  # denied: the run fails
    assert live.call("GET", "/npm/acme/alpha", run["token"]).status == 403  # run-failed

    path = f"{RUNS}/{run['id']}/decisions"
    listed = live.call("GET", path, live.tokens["auditor"]).json
    first, *others = listed["decisions"]
    assert (first["name"], first["reason"]) == ("beta", "matches-the-deny-list")
    assert len(listed["decisions"]) == MAX_RUN_DECISIONS and listed["truncated"] is True
    assert {d["reason"] for d in others} == {"direct-reference"}  # refusals before allows; run-failed cut
    few = live.call("GET", path + "?limit=3", live.tokens["sandbox"]).json
    assert [d["reason"] for d in few["decisions"]] == ["matches-the-deny-list", "direct-reference", "direct-reference"]
    assert few["truncated"] is True and few["allowed"] is False
    whole = live.call("GET", path + f"?limit={MAX_RUN_DECISIONS}", live.tokens["auditor"]).json
    assert whole == listed
    too_many = live.call("GET", path + f"?limit={MAX_RUN_DECISIONS + 1}", live.tokens["auditor"])
    assert too_many.status == 422 and too_many.media == "application/problem+json", too_many.body
    assert "limit" in too_many.body.decode()

    short = start_run(live)  # beta, then what the failed run refused, then what it allowed
    for name in ("alpha", "beta", "alpha"):
        live.call("GET", f"/npm/acme/{name}", short["token"])
    listed = live.call("GET", f"{RUNS}/{short['id']}/decisions", live.tokens["auditor"]).json
    assert [(d["name"], d["reason"]) for d in listed["decisions"]] == [
        ("beta", "matches-the-deny-list"),
        ("alpha", "run-failed"),
        ("alpha", "not-on-the-deny-list"),
    ]
    assert listed["truncated"] is False
