"""Known malware and unknown names through the index, with real npm and pip.

The fixture registries publish packages named after real OSV `MAL-` records shipped in
tests/corpus/osv (npm `0-dns`, every version malicious; PyPI `0-8`, version 0.0.0.1 only), as
the dependency of an ordinary `app`. A run installs `app` while nothing is known; then the
record is imported, and the same install meets a refusal - and the record answers which run
fetched the malicious version before anyone knew.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from domain.advisories import FEED_ID
from interface import create_app
from tests.support import clients
from tests.support.http_client import LiveServer
from tests.support.index_fixtures import run_decisions, set_policy, start_run
from tests.support.index_live import index_live_env, sqlite_store  # noqa: F401 - fixtures live_env, database_url
from tests.support.npm_upstream import NpmUpstream, Release
from tests.support.pypi_upstream import Dist, PyPIUpstream
from tests.support.tamper import Tamperer

OSV = Path(__file__).parents[1] / "corpus" / "osv" / "malicious"
W = "/api/v1/workspaces/acme"


def fresh(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def record(path: str) -> dict:
    return json.loads((OSV / path).read_text())


@pytest.fixture
def npm_upstream():
    upstream = NpmUpstream(
        [
            Release("app", "1.0.0", dependencies={"0-dns": "^1.0.0"}),
            Release("0-dns", "1.0.0"),
            Release("other", "1.0.0"),
        ]
    )
    yield upstream
    upstream.close()


@pytest.fixture
def pypi_upstream():
    upstream = PyPIUpstream(
        [Dist("app", "1.0", requires=("0-8",)), Dist("0-8", "0.0.0.0"), Dist("0-8", "0.0.0.1"), Dist("other", "1.0")]
    )
    yield upstream
    upstream.close()


def import_advisories(live, records, revision: str | None = None):
    headers = {"X-Feed-Revision": revision} if revision else None
    return live.call("POST", W + "/advisories", live.tokens["owner"], records, headers=headers)


def malware(decisions: list[dict]) -> list[dict]:
    return [d for d in decisions if d["reason"] == "known-malware"]


def test_an_imported_mal_record_refuses_a_transitive_npm_dependency_and_exposure_names_the_earlier_run(
    live, app, tmp_path
):
    set_policy(app, "denylist")
    before = start_run(live, sandbox="sbx-before")
    assert clients.npm(fresh(tmp_path, "before"), before["npm"], before["token"], "install", "app").ok

    answer = import_advisories(live, record("npm/0-dns/MAL-2022-9.json"), revision="feed-1")
    assert answer.status == 201, answer.body
    assert answer.json == {"revision": "feed-1", "records": 1, "packages": 1}

    after = start_run(live, sandbox="sbx-after")
    outcome = clients.npm(fresh(tmp_path, "after"), after["npm"], after["token"], "install", "app")
    assert not outcome.ok and "0-dns" in outcome.output
    [refused] = malware(run_decisions(live, after))
    assert (refused["name"], refused["package_version"], refused["allowed"]) == ("0-dns", "1.0.0", False)
    assert refused["context"]["advisories"] == ["MAL-2022-9"] and refused["kind"] == "registry"
    assert "known malware (MAL-2022-9)" in refused["message"]

    exposure = live.call("GET", W + "/advisories/MAL-2022-9/exposure", live.tokens["auditor"])
    assert exposure.status == 200, exposure.body
    [fetched] = exposure.json["exposures"]
    assert (fetched["name"], fetched["version"], fetched["run"], fetched["sandbox"]) == (
        "0-dns",
        "1.0.0",
        before["id"],
        "sbx-before",
    )


def test_a_known_malware_tarball_fetched_directly_is_403_recorded_and_fails_no_run(live, app):
    set_policy(app, "denylist")
    assert import_advisories(live, [record("npm/0-dns/MAL-2022-9.json")]).status == 201
    run = start_run(live)
    packument = live.call("GET", "/npm/acme/0-dns", run["token"]).json
    assert packument["versions"] == {} and "1.0.0" in packument["policyRestrictions"]["versions"]
    reply = live.call("GET", "/npm/acme/0-dns/-/0-dns-1.0.0.tgz", run["token"])
    assert reply.status == 403 and "0-dns@1.0.0 is known malware (MAL-2022-9)" in reply.json["error"]
    assert [d["request"] for d in malware(run_decisions(live, run))] == ["page", "download"]
    assert live.call("GET", "/npm/acme/other/-/other-1.0.0.tgz", run["token"]).status == 200  # not run-failed


def test_a_record_imported_again_withdrawn_refuses_nothing_and_one_first_seen_withdrawn_never_did(live, app):
    """A false positive is cleared upstream by withdrawing its record: the version installs again."""
    set_policy(app, "denylist")
    known = record("npm/0-dns/MAL-2022-9.json")
    assert import_advisories(live, [known]).status == 201
    run = start_run(live)
    assert live.call("GET", "/npm/acme/0-dns/-/0-dns-1.0.0.tgz", run["token"]).status == 403
    assert import_advisories(live, [known | {"withdrawn": "2026-12-02T00:00:00Z"}]).status == 201
    run = start_run(live)
    assert "1.0.0" in live.call("GET", "/npm/acme/0-dns", run["token"]).json["versions"]
    assert live.call("GET", "/npm/acme/0-dns/-/0-dns-1.0.0.tgz", run["token"]).status == 200
    withdrawn = {**known, "id": "MAL-2099-1", "withdrawn": "2026-12-02T00:00:00Z"}
    assert import_advisories(live, [withdrawn]).status == 201
    assert live.call("GET", "/npm/acme/0-dns/-/0-dns-1.0.0.tgz", start_run(live)["token"]).status == 200
    bad = import_advisories(live, [{**known, "withdrawn": 7}])
    assert bad.status == 422 and bad.json["errors"][0]["field"] == "records[0].withdrawn"


def test_a_record_osv_calls_invalid_is_refused_not_read_as_affecting_nothing(live, app):
    """An empty `events`, a range with no `introduced`, an entry naming a package and nothing else
    (OSV: none of its versions is affected), a `withdrawn` that is no instant: each had been
    imported (201), hiding nothing, and any text in `withdrawn` had un-hidden the record's versions."""
    set_policy(app, "denylist")
    known = record("npm/0-dns/MAL-2022-9.json")
    assert import_advisories(live, [known]).status == 201
    padded, epoch, loc = (
        {
            "id": "MAL-Y1",
            "affected": [
                {"package": {"ecosystem": "PyPI", "name": "padded"}, "ranges": [{"type": "ECOSYSTEM", "events": []}]}
            ],
        },
        {
            "id": "MAL-Y2",
            "affected": [
                {
                    "package": {"ecosystem": "PyPI", "name": "epoch"},
                    "ranges": [{"type": "ECOSYSTEM", "events": [{"fixed": "99"}]}],
                }
            ],
        },
        {"id": "MAL-Y3", "affected": [{"package": {"ecosystem": "PyPI", "name": "loc"}}]},
    )
    refused = [
        (
            [padded, epoch, loc],
            [f"records[{i}].affected[0].ranges[0].events" for i in (0, 1)] + ["records[2].affected[0]"],
        ),
        ([known, epoch], ["records[1].affected[0].ranges[0].events"]),
        ([loc], ["records[0].affected[0]"]),
    ]
    for records, fields in refused:
        bad = import_advisories(live, records)
        assert bad.status == 422 and [e["field"] for e in bad.json["errors"]] == fields, bad.body
        assert any(word in bad.json["errors"][0]["message"] for word in ("introduced", "versions or ranges")), bad.body
    for text in ("garbage", "false", "2026-12-02"):
        bad = import_advisories(live, [known | {"withdrawn": text}])
        assert bad.status == 422 and bad.json["errors"][0]["field"] == "records[0].withdrawn", bad.body
    # nothing of them was saved: the known record still hides its version
    assert live.call("GET", "/npm/acme/0-dns/-/0-dns-1.0.0.tgz", start_run(live)["token"]).status == 403


def test_a_value_of_the_wrong_type_or_a_range_of_no_osv_type_is_422_naming_every_bad_field(live, app):
    """`ranges: 5` and an ecosystem that is an array or an object had been 500s (TypeError in the
    reader); a range of type `semver` (or null, "", 5) had been imported (201) hiding nothing; a
    refusal had named only the first bad field. Now each is 422, every bad field of every record
    named, in JSON's words, and nothing of the import saved."""
    set_policy(app, "denylist")
    known = record("npm/0-dns/MAL-2022-9.json")
    assert import_advisories(live, [known]).status == 201

    def entry(ecosystem="npm", name="zz-typo", **given):
        return {"id": "MAL-X-1", "affected": [{"package": {"ecosystem": ecosystem, "name": name}, **given}]}

    at = "records[0].affected[0]"
    refused = [(entry(ranges=wrong), f"{at}.ranges") for wrong in (5, True)]
    refused += [
        (entry(ecosystem=wrong, versions=["1.0.0"]), f"{at}.package.ecosystem")
        for wrong in (["npm"], {}, None, 5, True, "")
    ]
    refused += [
        (entry(ranges=[{"type": kind, "events": [{"introduced": "0"}]}]), f"{at}.ranges[0].type")
        for kind in ("semver", None, "", 5, {}, [])
    ]
    refused += [(entry(name="a" * 200_000, versions=["1.0.0"]), f"{at}.package.name")]
    for body, field in refused:
        bad = import_advisories(live, body)
        assert bad.status == 422 and [e["field"] for e in bad.json["errors"]] == [field], bad.body[:500]
        assert len(bad.body) < 2000, bad.body[:500]  # the value is quoted cut, not echoed whole
    bad = import_advisories(live, entry(ecosystem=True, versions=["1.0.0"]))
    assert "not true" in bad.json["errors"][0]["message"] and b"True" not in bad.body, bad.body

    withdrawn = known | {"withdrawn": "2026-12-02T00:00:00Z"}
    bad = import_advisories(
        live,
        [
            withdrawn,
            {"id": "bad id!", "affected": 5},
            {"id": "MAL-2", "modified": "yesterday", "affected": [{"package": {"ecosystem": "npm", "name": "a@1"}}]},
        ],
    )
    assert bad.status == 422, bad.body
    assert [e["field"] for e in bad.json["errors"]] == [
        "records[1].id",
        "records[1].affected",
        "records[2].modified",
        "records[2].affected[0].package.name",
    ]
    # nothing of it was saved: the known record is not withdrawn, and still hides its version
    assert live.call("GET", "/npm/acme/0-dns/-/0-dns-1.0.0.tgz", start_run(live)["token"]).status == 403


def test_impact_previews_a_draft_switching_known_malware_before_it_is_saved(live, app):
    """rules.md offers `known_malware` among the rules and /impact previews drafts with rules: the
    downloads of affected versions move, and nothing else does."""
    set_policy(app, "denylist")
    assert import_advisories(live, [record("npm/0-dns/MAL-2022-9.json")]).status == 201
    run = start_run(live, sandbox="sbx-enforced")
    assert live.call("GET", "/npm/acme/0-dns/-/0-dns-1.0.0.tgz", run["token"]).status == 403
    assert live.call("GET", "/npm/acme/other/-/other-1.0.0.tgz", run["token"]).status == 200
    shown = {"language": "node", "name": "0-dns", "version": "1.0.0", "reason": "known-malware"}

    def impact(action: str) -> dict:
        reply = live.call("POST", W + "/impact", live.tokens["admin"], {"draft": {"known_malware": action}})
        assert reply.status == 200, reply.body
        return reply.json

    preview = impact("monitor")
    assert preview["would_show"] == [{**shown, "installs": 1, "sandboxes": 1}] and preview["would_hide"] == []
    assert preview["would_deny"] == preview["would_allow"] == []
    assert impact("enforce")["would_hide"] is None  # as saved: nothing to judge per version
    assert app.policy("acme")["known_malware"] == "enforce"  # a preview saves nothing

    app.save_policy("acme", {"known_malware": "monitor"}, by="founder")
    served = start_run(live, sandbox="sbx-monitored")
    assert live.call("GET", "/npm/acme/0-dns/-/0-dns-1.0.0.tgz", served["token"]).status == 200
    preview = impact("enforce")
    assert preview["would_hide"] == [{**shown, "installs": 2, "sandboxes": 2}] and preview["would_show"] == []


def test_pip_falls_back_to_a_version_the_record_does_not_list_and_a_pin_of_it_is_refused(live, app, tmp_path):
    set_policy(app, "denylist")
    before = start_run(live)
    assert clients.pip_install(fresh(tmp_path, "before"), before["pypi"], before["token"], "app").ok
    assert import_advisories(live, record("pypi/0-8/MAL-2025-2925.json")).status == 201

    after = start_run(live)
    assert clients.pip_install(fresh(tmp_path, "after"), after["pypi"], after["token"], "app").ok
    assert list((tmp_path / "after" / "site").glob("0_8-*.dist-info"))[0].name == "0_8-0.0.0.0.dist-info"
    pinned = start_run(live)
    outcome = clients.pip_install(fresh(tmp_path, "pinned"), pinned["pypi"], pinned["token"], "0-8==0.0.0.1")
    assert not outcome.ok
    assert [d["package_version"] for d in malware(run_decisions(live, pinned))] == ["0.0.0.1"]
    reply = live.call("GET", "/pypi/acme/files/0-8/0_8-0.0.0.1-py3-none-any.whl", pinned["token"])
    assert reply.status == 403 and "known malware (MAL-2025-2925)" in reply.json["detail"]

    exposures = live.call("GET", W + "/advisories/MAL-2025-2925/exposure", live.tokens["auditor"]).json["exposures"]
    assert {(e["run"], e["version"]) for e in exposures} == {(before["id"], "0.0.0.1")}


def test_advisories_import_at_the_deployments_own_path_with_an_owner_token(live, app):
    """`POST /api/v1/advisories`, as the contract names it, had been 404."""
    record = {"id": "MAL-2026-1", "affected": [{"package": {"ecosystem": "PyPI", "name": "evil"}, "versions": ["1"]}]}
    assert live.call("POST", "/api/v1/advisories", live.tokens["admin"], record).status == 403
    imported = live.call("POST", "/api/v1/advisories", live.tokens["owner"], record)
    assert imported.status == 201 and imported.json["records"] == 1, imported.body
    assert live.call("GET", W + "/advisories/MAL-2026-1/exposure", live.tokens["auditor"]).status == 200


def test_exposure_of_an_advisory_never_imported_is_404_and_a_bad_record_is_422_naming_the_field(live, app):
    assert live.call("GET", W + "/advisories/MAL-0/exposure", live.tokens["auditor"]).status == 404
    bad = import_advisories(live, {"id": "MAL-1", "affected": [{"package": {"ecosystem": "npm"}}]})
    assert bad.status == 422 and bad.json["errors"][0]["field"] == "records[0].affected[0].package.name"
    for hidden in ("MAL-\u0007\u202e", "MAL-\u0000", "MAL 1"):  # had been stored and echoed back
        bad = import_advisories(live, {"id": hidden, "affected": []})
        assert bad.status == 422 and bad.json["errors"][0]["field"] == "records[0].id", bad.body
    # what OSV would not call a record: a name with more than a name, a modified that is no
    # instant, one record twice (it had been counted once, its packages twice)
    for name in ("_bad name", "https://x.example/e.tgz", "evil==1.0", "evil@1"):
        affected = [{"package": {"ecosystem": "PyPI" if "=" in name else "npm", "name": name}, "versions": ["1"]}]
        bad = import_advisories(live, {"id": "MAL-2", "affected": affected})
        assert bad.status == 422 and bad.json["errors"][0]["field"] == "records[0].affected[0].package.name", name
    for body, field in (([], "records"), (5, "records[0]"), ([1], "records[0]")):  # had been `body`, `dict[any,any]`
        bad = import_advisories(live, body)
        assert bad.status == 422 and [e["field"] for e in bad.json["errors"]] == [field], bad.body
    bad = import_advisories(live, {"id": "MAL-3", "modified": "yesterday", "affected": []})
    assert bad.status == 422 and bad.json["errors"][0]["field"] == "records[0].modified", bad.body
    record = {"id": "MAL-4", "modified": "2026-12-01T00:00:00Z", "affected": []}
    bad = import_advisories(live, [record, {**record, "modified": "2026-12-02T00:00:00Z"}])
    assert bad.status == 422 and bad.json["errors"][0]["field"] == "records[1].id", bad.body


def test_names_the_upstream_lacks_are_listed_with_counts_and_sandboxes_and_fail_no_run(live, app, tmp_path):
    set_policy(app, "denylist")
    first = start_run(live, sandbox="sbx-a")
    assert not clients.npm(fresh(tmp_path, "a"), first["npm"], first["token"], "install", "reqeusts-slop").ok
    assert live.call("GET", "/npm/acme/other", first["token"]).status == 200  # the run goes on
    second = start_run(live, sandbox="sbx-b")
    assert not clients.pip_install(fresh(tmp_path, "b"), second["pypi"], second["token"], "reqeusts-slop").ok
    assert live.call("GET", "/npm/acme/reqeusts-slop", second["token"]).status == 404

    reply = live.call("GET", W + "/unknown-names?days=7", live.tokens["auditor"])
    assert reply.status == 200, reply.body
    names = {(n["language"], n["name"]): n for n in reply.json["names"]}
    assert set(names) == {("node", "reqeusts-slop"), ("python", "reqeusts-slop")}
    assert names[("node", "reqeusts-slop")]["sandboxes"] == ["sbx-a", "sbx-b"]
    assert names[("node", "reqeusts-slop")]["count"] == 2 and names[("python", "reqeusts-slop")]["count"] == 1
    assert all(n["now_exists"] is False and n["first_asked"].endswith("Z") for n in names.values())
    assert live.call("GET", W + "/unknown-names?days=0", live.tokens["auditor"]).status == 422


def test_an_import_altered_in_the_store_refuses_every_file_until_restored_not_just_the_first(
    live, app, open_app, database_url, tmp_path, live_env
):
    """The feed is sealed in the deployment's chain `-`; a package renamed in its stored import
    had made the first request after a restart 503 and every later one serve known malware."""
    set_policy(app, "denylist")
    assert import_advisories(live, [record("npm/0-dns/MAL-2022-9.json")]).status == 201
    app.chain.seal()
    tamper = Tamperer(database_url)
    tamper.replace_in_state(str(FEED_ID), '"0-dns"', '"0-dnx"')
    tamper.close()
    env = {"RUNCODE_POLICY_DATA_DIR": str(tmp_path), **live_env}
    restarted = LiveServer(create_app(env=env, governance=open_app()))  # a worker that loads the feed anew
    restarted.tokens = live.tokens
    try:
        run = start_run(restarted)
        for path in ("/npm/acme/0-dns/-/0-dns-1.0.0.tgz", "/npm/acme/0-dns/-/0-dns-1.0.0.tgz", "/npm/acme/other"):
            reply = restarted.call("GET", path, run["token"])
            assert reply.status == 503, (path, reply.status)
            assert "no longer hashes to its sealed value (altered)" in reply.json["detail"]
    finally:
        restarted.close()
