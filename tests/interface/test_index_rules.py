"""The rules beyond names applied in the index, per version, with real pip, uv and npm.

The fixture registries publish `cool` 1.0 (uploaded long ago) and 2.0 (an hour ago), `mixed`
(1.0 with a wheel, 2.0 an sdist only), `untimed` (no upload time given) and, on npm, `scripted`
(1.1.0 runs a postinstall script). Rules are saved with `PUT /policy` like the lists; a hidden
version is no project denial, so the resolver falls back to an older one and the run goes on.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support import clients
from tests.support.gate import Gate, sandbox_env
from tests.support.index_fixtures import run_decisions, start_run
from tests.support.index_live import index_live_env, sqlite_store  # noqa: F401 - fixtures live_env, database_url
from tests.support.npm_upstream import NpmUpstream, Release
from tests.support.pypi_upstream import Dist, PyPIUpstream
from tests.support.target_env import TargetEnv

W = "/api/v1/workspaces/acme"
OLD = "2025-01-02T03:04:05.000000Z"
JSON_PAGE = {"Accept": "application/vnd.pypi.simple.v1+json"}
BUNDLES_HELPER = {"dependencies": {"helper": "^1.0.0"}, "bundled": ("helper",), "carried": ("helper",)}
RAN = "node -e \"require('fs').writeFileSync('ran', '')\""  # in the package's folder, when npm runs it
LAST_INSTANT = "9999-12-31T23:59:59.999"  # the calendar's last millisecond; a wheel's time has microseconds
COOLDOWN = {"min_release_age": {"age": "P3D", "exempt": [], "action": "enforce"}}


def recent() -> str:
    return (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.fixture
def pypi_upstream():
    upstream = PyPIUpstream(
        [
            Dist("cool", "1.0", upload_time=OLD),
            Dist("cool", "2.0", upload_time=recent()),
            Dist("app", "1.0", requires=("cool",), upload_time=OLD),
            Dist("mixed", "1.0", upload_time=OLD),
            Dist("mixed", "2.0", files=("sdist",), upload_time=OLD),
            Dist("untimed", "1.0", upload_time=None),
            Dist("0-8", "0.0.0.1", upload_time=OLD),  # known malware: tests/corpus/osv
            # a file whose name no standard reads a version from: no rule can judge it
            Dist("legacy", "1.0", files=("sdist",), upload_time=OLD, sdist_name="legacy-1.0.tar.bz2"),
            Dist("legacy", "2.0", files=("wheel",), upload_time=OLD),
            *(Dist("vers", v, files=("wheel",), upload_time=OLD) for v in ("1.0", "2.0.dev3", "2.0rc1", "2.0")),
            # sdists whose names pip and uv split after the project's name: 2.0.post1, 2.post0
            Dist("vb", "1.0", files=("sdist",), upload_time=OLD),
            Dist("vb", "2.0.post1", files=("sdist",), upload_time=OLD, sdist_name="vb-2.0-1.tar.gz"),
            Dist("vb", "2.post0", files=("sdist",), upload_time=OLD, sdist_name="vb-2-0.tar.gz"),
            # uploaded at the calendar's last instant: too new for as long as there are dates
            Dist("farfuture", "0.1", upload_time=OLD),
            Dist("farfuture", "1.0", upload_time=LAST_INSTANT + "999Z"),
        ]
    )
    yield upstream
    upstream.close()


@pytest.fixture
def npm_upstream():
    old = "2025-01-02T03:04:05.000Z"
    upstream = NpmUpstream(
        [
            Release("cool", "1.0.0", published=old),
            Release("cool", "2.0.0", published=recent()),
            Release("scripted", "1.0.0", published=old),
            Release("scripted", "1.1.0", scripts={"postinstall": "node -e 0"}, published=old),
            # its tarball's name does not say its version: the packument's word is judged
            Release("scripty", "1.0.0", scripts={"postinstall": "node -e 0"}, published=old, tarball_name="dl.tgz"),
            Release("confused", "1.0.0", unsaid_scripts={"postinstall": "node -e 0"}, published=old),
            # no script of its own; the helper it bundles runs one, or has node-gyp build it
            Release("c-bundlescript", "1.0.0", published=old, **BUNDLES_HELPER, carried_scripts={"postinstall": RAN}),
            Release("c-bundlegyp", "1.0.0", published=old, **BUNDLES_HELPER, carried_files={"binding.gyp": b"{}"}),
            Release("nfar", "0.1.0", published=old),
            Release("nfar", "1.0.0", published=LAST_INSTANT + "Z"),
        ]
    )
    yield upstream
    upstream.close()


def set_rules(live, python: dict | None = None, node: dict | None = None) -> dict:
    """Denylist mode, no names listed, these rules: saved with PUT /policy like the lists."""
    body = {
        language: {"mode": "denylist", "allow": [], "deny": [], **({"rules": rules} if rules else {})}
        for language, rules in (("python", python), ("node", node))
    }
    reply = live.call("PUT", W + "/policy", live.tokens["admin"], body)
    assert reply.status == 200, reply.body
    return reply.json


def monitor_known_malware(live) -> None:
    change = {"action": "set-known-malware", "known_malware": "monitor"}
    reply = live.call("POST", W + "/policy/changes", live.tokens["admin"], {"changes": [change]})
    assert reply.status == 200, reply.body


def fresh(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def installed(site: Path, module: str) -> str:
    return (site / module / "__init__.py").read_text().split("=")[1].strip().strip("'")


def hidden(decisions: list[dict], reason: str) -> list[dict]:
    return [d for d in decisions if d["reason"] == reason]


def test_pip_and_uv_resolve_the_older_version_under_a_cooldown_and_the_record_keeps_the_facts(live, tmp_path):
    set_rules(live, python=COOLDOWN)
    run = start_run(live)
    assert clients.pip_install(fresh(tmp_path, "pip"), run["pypi"], run["token"], "app").ok
    assert installed(tmp_path / "pip" / "site", "cool") == "1.0"
    other = start_run(live)
    assert clients.uv_install(fresh(tmp_path, "uv"), other["pypi"], other["token"], "cool").ok
    assert installed(tmp_path / "uv" / "site", "cool") == "1.0"

    page = live.call("GET", "/pypi/acme/simple/cool/", run["token"], headers=JSON_PAGE)
    assert [f["filename"] for f in page.json["files"]] == ["cool-1.0-py3-none-any.whl", "cool-1.0.tar.gz"]
    assert page.json["versions"] == ["1.0"]
    decisions = run_decisions(live, run)
    [too_new] = hidden(decisions, "too-new")  # once per run, however often the page was read
    assert (too_new["name"], too_new["package_version"], too_new["request"]) == ("cool", "2.0", "page")
    assert too_new["context"]["version"] == "2.0" and too_new["context"]["uploaded_at"].endswith("Z")
    [download] = [d for d in decisions if d["request"] == "download" and d["name"] == "cool"]
    assert download["allowed"] and download["context"]["version"] == "1.0"
    assert download["context"]["uploaded_at"] == "2025-01-02T03:04:05.000000Z"
    assert download["context"]["advisories"] == []
    listed = live.call("GET", W + "/decisions?reason=too-new", live.tokens["auditor"])
    assert listed.status == 200 and too_new["id"] in {d["id"] for d in listed.json["decisions"]}


def test_a_pin_of_a_too_new_version_fails_with_the_reason_and_its_file_is_403_but_the_run_goes_on(live, app, tmp_path):
    set_rules(live, python=COOLDOWN)
    target = TargetEnv(tmp_path / "venv")
    gate = Gate(tmp_path / "gate", installer_path=f"{target.bin}:/usr/bin:/bin")
    home = fresh(tmp_path, "home")
    env = sandbox_env(live, home, VIRTUAL_ENV=str(target.root), PATH=f"{target.bin}:/usr/bin:/bin")
    done = gate("--", "pip", "install", "cool==2.0", env=env, cwd=home)
    assert done.returncode != 0 and "cool" not in target.installed()
    assert "hidden: cool (python) \u2014 too-new" in done.stderr, done.stderr

    run = start_run(live)
    wheel = live.call("GET", "/pypi/acme/files/cool/cool-2.0-py3-none-any.whl", run["token"])
    assert wheel.status == 403
    [refused] = hidden(run_decisions(live, run), "too-new")
    assert (refused["request"], refused["file"], refused["allowed"]) == ("download", "cool-2.0-py3-none-any.whl", False)
    assert refused["message"] in wheel.json["detail"] and refused["context"]["version"] == "2.0"
    assert live.call("GET", "/pypi/acme/files/cool/cool-1.0-py3-none-any.whl", run["token"]).status == 200


def test_a_version_becomes_visible_once_old_enough_and_a_missing_upload_time_counts_as_too_new(live, clock):
    set_rules(live, python=COOLDOWN)
    run = start_run(live)
    assert live.call("GET", "/pypi/acme/simple/cool/", run["token"], headers=JSON_PAGE).json["versions"] == ["1.0"]
    untimed = live.call("GET", "/pypi/acme/simple/untimed/", run["token"], headers=JSON_PAGE).json
    assert untimed["files"] == [] and untimed.get("project-status") is None  # hidden, not quarantined
    clock.step(timedelta(days=4))
    assert live.call("GET", "/pypi/acme/simple/cool/", run["token"], headers=JSON_PAGE).json["versions"] == [
        "1.0",
        "2.0",
    ]
    assert live.call("GET", "/pypi/acme/simple/untimed/", run["token"], headers=JSON_PAGE).json["files"] == []


def test_an_upload_time_at_the_end_of_the_calendar_is_too_new_and_the_older_version_is_offered(live, tmp_path):
    """Its upload time plus the age is past the last date: it never ripens, and nothing fails -
    not the pages, the preview of a drafted cooldown, nor the closure."""
    early = start_run(live)  # no rules yet: served, its upload time recorded with the download
    assert live.call("GET", "/pypi/acme/files/farfuture/farfuture-1.0-py3-none-any.whl", early["token"]).status == 200
    assert live.call("GET", "/npm/acme/nfar/-/nfar-1.0.0.tgz", early["token"]).status == 200
    assert would_hide(live, {"python": {"rules": COOLDOWN}, "node": {"rules": COOLDOWN}}) == {
        ("python", "farfuture", "1.0", "too-new", 1),
        ("node", "nfar", "1.0.0", "too-new", 1),
    }
    set_rules(live, python=COOLDOWN, node=COOLDOWN)
    assert closure(live, "python", "farfuture")[0] == {"farfuture": (["0.1"], "allowed", "not-on-the-deny-list")}
    assert closure(live, "node", "nfar")[0] == {"nfar": (["0.1.0"], "allowed", "not-on-the-deny-list")}
    run = start_run(live)
    page = live.call("GET", "/pypi/acme/simple/farfuture/", run["token"], headers=JSON_PAGE)
    assert page.status == 200 and page.json["versions"] == ["0.1"], page.body
    wheel = live.call("GET", "/pypi/acme/files/farfuture/farfuture-1.0-py3-none-any.whl", run["token"])
    assert wheel.status == 403 and "after the instant judged" in wheel.json["detail"], wheel.body
    document = live.call("GET", "/npm/acme/nfar", run["token"])
    assert document.status == 200 and list(document.json["versions"]) == ["0.1.0"], document.body
    assert "1.0.0" in document.json["policyRestrictions"]["versions"]
    assert clients.npm(fresh(tmp_path, "npm"), run["npm"], run["token"], "install", "nfar").ok
    assert clients.pip_install(fresh(tmp_path, "pip"), run["pypi"], run["token"], "farfuture").ok
    assert installed(tmp_path / "pip" / "site", "farfuture") == "0.1"


def test_sdists_refused_hide_only_the_source_files_and_pip_takes_the_wheel(live, tmp_path):
    set_rules(live, python={"sdists": {"allow": [], "action": "enforce"}})
    run = start_run(live)
    page = live.call("GET", "/pypi/acme/simple/mixed/", run["token"], headers=JSON_PAGE)
    assert [f["filename"] for f in page.json["files"]] == ["mixed-1.0-py3-none-any.whl"]
    assert page.json["versions"] == ["1.0"]
    assert clients.pip_install(fresh(tmp_path, "pip"), run["pypi"], run["token"], "mixed").ok
    assert installed(tmp_path / "pip" / "site", "mixed") == "1.0"
    sdist = live.call("GET", "/pypi/acme/files/mixed/mixed-1.0.tar.gz", run["token"])
    assert sdist.status == 403
    reasons = {(d["package_version"], d["request"]) for d in hidden(run_decisions(live, run), "sdist-refused")}
    assert reasons == {("2.0", "page"), ("1.0", "download")}  # 1.0 keeps its wheel: not a hidden version


def test_a_versions_deny_hides_the_version_and_its_direct_url_is_403(live, tmp_path):
    set_rules(live, python={"versions_deny": {"entries": ["cool==2.0"], "action": "enforce"}})
    run = start_run(live)
    assert clients.pip_install(fresh(tmp_path, "pip"), run["pypi"], run["token"], "cool").ok
    assert installed(tmp_path / "pip" / "site", "cool") == "1.0"
    reply = live.call("GET", "/pypi/acme/files/cool/cool-2.0.tar.gz", run["token"])
    assert reply.status == 403
    assert {d["request"] for d in hidden(run_decisions(live, run), "version-denied")} == {"page", "download"}


def under_a_versions_deny(live, entry: str, project: str, shown: list[str], refused: dict[str, str]):
    """With `entry` denying versions, a run's page of `project` lists only the files `shown`, and
    each file of `refused` is 403 saying its words; (the run, the page)."""
    set_rules(live, python={"versions_deny": {"entries": [entry], "action": "enforce"}})
    run = start_run(live)
    page = live.call("GET", f"/pypi/acme/simple/{project}/", run["token"], headers=JSON_PAGE)
    assert [f["filename"] for f in page.json["files"]] == shown
    for filename, words in refused.items():
        reply = live.call("GET", f"/pypi/acme/files/{project}/{filename}", run["token"])
        assert reply.status == 403 and words in reply.json["detail"], reply.body
    return run, page


def test_a_python_versions_deny_below_a_release_hides_that_releases_pre_and_dev_releases(live):
    refused = {f"vers-{version}-py3-none-any.whl": "vers<2" for version in ("2.0.dev3", "2.0rc1")}
    under_a_versions_deny(live, "vers<2", "vers", ["vers-2.0-py3-none-any.whl"], refused)


def test_an_sdists_version_is_read_after_the_projects_name_as_installers_read_it(live):
    """`vb-2.0-1.tar.gz` is vb 2.0.post1 to pip and uv; read at its last dash (project `vb-2.0`,
    version 1), it got past `vb>=2` and pip installed 2.0.post1 through the gate (a reviewer's)."""
    read = {"vb-2.0-1.tar.gz": "2.0.post1", "vb-2-0.tar.gz": "2.post0"}
    words = {filename: f"vb {version} matches the version deny entry 'vb>=2'" for filename, version in read.items()}
    run, page = under_a_versions_deny(live, "vb>=2", "vb", ["vb-1.0.tar.gz"], words)
    assert page.json["versions"] == ["1.0"]
    refused = hidden(run_decisions(live, run), "version-denied")
    assert {(d["file"], d.get("package_version")) for d in refused if d["request"] == "download"} == {
        ("vb-2.0-1.tar.gz", "2.0.post1"),
        ("vb-2-0.tar.gz", "2.post0"),
    }


def test_a_file_whose_name_does_not_say_its_version_is_refused_while_versions_are_judged(live, tmp_path):
    run = start_run(live)  # no rules: nothing needs its version, so it is served
    page = live.call("GET", "/pypi/acme/simple/legacy/", run["token"], headers=JSON_PAGE)
    assert "legacy-1.0.tar.bz2" in [f["filename"] for f in page.json["files"]]
    assert live.call("GET", "/pypi/acme/files/legacy/legacy-1.0.tar.bz2", run["token"]).status == 200

    unknown = {path: "does not say which version" for path in ("legacy-1.0.tar.bz2", "legacy-1.0.tar.bz2.metadata")}
    run, page = under_a_versions_deny(live, "legacy==1.0", "legacy", ["legacy-2.0-py3-none-any.whl"], unknown)
    assert page.json["versions"] == ["2.0"]  # 1.0's one file is gone, so is 1.0 (a reviewer's)
    assert clients.pip_install(fresh(tmp_path, "pip"), run["pypi"], run["token"], "legacy").ok
    assert installed(tmp_path / "pip" / "site", "legacy") == "2.0"
    refused = hidden(run_decisions(live, run), "version-unknown")  # the run went on: no project denial
    assert {(d["file"], d["request"], d.get("package_version")) for d in refused} == {
        ("legacy-1.0.tar.bz2", "download", None),
        ("legacy-1.0.tar.bz2", "metadata", None),
    }


def test_an_npm_tarball_not_named_for_its_version_is_judged_by_the_packument_version(live):
    set_rules(live, node={"install_scripts": {"allow": [], "action": "enforce"}})
    run = start_run(live)
    reply = live.call("GET", "/npm/acme/scripty/-/dl.tgz", run["token"])
    assert reply.status == 403 and "1.0.0" in reply.json["error"], reply.body
    [refused] = hidden(run_decisions(live, run), "install-scripts")
    assert refused["package_version"] == "1.0.0" and refused["request"] == "download"


def test_a_monitor_rule_serves_and_records_what_it_would_have_done(live, tmp_path):
    set_rules(live, python={"min_release_age": {"age": "P3D", "exempt": [], "action": "monitor"}})
    run = start_run(live)
    assert clients.pip_install(fresh(tmp_path, "pip"), run["pypi"], run["token"], "cool").ok
    assert installed(tmp_path / "pip" / "site", "cool") == "2.0"
    decisions = run_decisions(live, run)
    assert all(d["allowed"] for d in decisions)
    [download] = [d for d in decisions if d["request"] == "download"]
    assert download["context"]["monitor"] == ["too-new"] and download["context"]["version"] == "2.0"


def test_npm_falls_back_to_an_older_version_under_a_cooldown_with_dist_tags_and_time_kept_consistent(live, tmp_path):
    set_rules(live, node=COOLDOWN)
    run = start_run(live)
    assert clients.npm(fresh(tmp_path, "npm"), run["npm"], run["token"], "install", "cool").ok
    lock = (tmp_path / "npm" / "project" / "node_modules" / "cool" / "package.json").read_text()
    assert '"version": "1.0.0"' in lock
    document = live.call("GET", "/npm/acme/cool", run["token"]).json
    assert list(document["versions"]) == ["1.0.0"] and document["dist-tags"] == {"latest": "1.0.0"}
    assert "2.0.0" not in document["time"] and "2.0.0" in document["policyRestrictions"]["versions"]
    tarball = live.call("GET", "/npm/acme/cool/-/cool-2.0.0.tgz", run["token"])
    assert tarball.status == 403 and "2.0.0" in tarball.json["error"]
    reasons = {(d["package_version"], d["request"]) for d in hidden(run_decisions(live, run), "too-new")}
    assert reasons == {("2.0.0", "page"), ("2.0.0", "download")}
    pinned = start_run(live)
    outcome = clients.npm(fresh(tmp_path, "pinned"), pinned["npm"], pinned["token"], "install", "cool@2.0.0")
    assert not outcome.ok and "cool@2.0.0" in outcome.output and "E403" in outcome.output


def test_npm_install_scripts_hide_the_scripted_version_unless_its_name_is_allowed(live, tmp_path):
    set_rules(live, node={"install_scripts": {"allow": [], "action": "enforce"}})
    run = start_run(live)
    assert clients.npm(fresh(tmp_path, "npm"), run["npm"], run["token"], "install", "scripted").ok
    manifest = tmp_path / "npm" / "project" / "node_modules" / "scripted" / "package.json"
    assert '"version": "1.0.0"' in manifest.read_text()
    [refused] = hidden(run_decisions(live, run), "install-scripts")
    assert refused["package_version"] == "1.1.0" and refused["context"]["install_scripts"] is True

    set_rules(live, node={"install_scripts": {"allow": ["scripted"], "action": "enforce"}})
    allowed = start_run(live)
    assert clients.npm(fresh(tmp_path, "allowed"), allowed["npm"], allowed["token"], "install", "scripted").ok
    manifest = tmp_path / "allowed" / "project" / "node_modules" / "scripted" / "package.json"
    assert '"version": "1.1.0"' in manifest.read_text()


def test_a_tarball_whose_own_manifest_runs_scripts_the_packument_does_not_say_is_refused(live):
    """npm and pnpm run what the tarball's package.json says, and a registry does not check it
    against the packument: read from the tarball, the scripts are found before a byte is served."""
    set_rules(live, node={"install_scripts": {"allow": [], "action": "enforce"}})
    run = start_run(live)
    assert "1.0.0" in live.call("GET", "/npm/acme/confused", run["token"]).json["versions"]  # the packument's word
    reply = live.call("GET", "/npm/acme/confused/-/confused-1.0.0.tgz", run["token"])
    assert reply.status == 403 and "runs code at install time" in reply.json["error"], reply.body
    [refused] = hidden(run_decisions(live, run), "install-scripts")
    assert refused["request"] == "download" and refused["context"]["install_scripts"] is True
    assert live.call("GET", "/npm/acme/scripted/-/scripted-1.0.0.tgz", start_run(live)["token"]).status == 200
    set_rules(live, node={"install_scripts": {"allow": ["confused"], "action": "enforce"}})
    assert live.call("GET", "/npm/acme/confused/-/confused-1.0.0.tgz", start_run(live)["token"]).status == 200


def test_a_bundled_packages_install_scripts_and_binding_gyp_count_as_the_tarballs_own(live, tmp_path):
    """npm runs a bundled package's postinstall, and builds its binding.gyp, as its carrier's."""
    run = start_run(live)  # no rules: npm runs the bundled helper's script, and the record says so
    assert clients.npm(fresh(tmp_path, "npm"), run["npm"], run["token"], "install", "c-bundlescript").ok
    assert (
        tmp_path / "npm" / "project" / "node_modules" / "c-bundlescript" / "node_modules" / "helper" / "ran"
    ).exists()
    [download] = [d for d in run_decisions(live, run) if d["request"] == "download"]
    assert download["allowed"] and download["context"]["install_scripts"] is True, download

    set_rules(live, node={"install_scripts": {"allow": [], "action": "enforce"}})
    run = start_run(live)
    outcome = clients.npm(fresh(tmp_path, "ruled"), run["npm"], run["token"], "install", "c-bundlescript")
    assert not outcome.ok and "E403" in outcome.output, outcome.output
    assert not (tmp_path / "ruled" / "project" / "node_modules" / "c-bundlescript").exists()
    reply = live.call("GET", "/npm/acme/c-bundlegyp/-/c-bundlegyp-1.0.0.tgz", run["token"])
    assert reply.status == 403 and "runs code at install time" in reply.json["error"], reply.body
    refused = hidden(run_decisions(live, run), "install-scripts")
    assert {(d["name"], d["request"], d["context"]["install_scripts"]) for d in refused} == {
        ("c-bundlescript", "download", True),
        ("c-bundlegyp", "download", True),
    }


def test_known_malware_under_a_monitor_policy_is_served_and_the_download_records_it(live, tmp_path):
    record = Path(__file__).parents[1] / "corpus" / "osv" / "malicious" / "pypi" / "0-8" / "MAL-2025-2925.json"
    imported = live.call("POST", W + "/advisories", live.tokens["owner"], json.loads(record.read_text()))
    assert imported.status == 201, imported.body
    monitor_known_malware(live)
    run = start_run(live)
    assert clients.pip_install(fresh(tmp_path, "pip"), run["pypi"], run["token"], "0-8==0.0.0.1").ok
    [download] = [d for d in run_decisions(live, run) if d["request"] == "download"]
    assert download["allowed"] and download["context"]["monitor"] == ["known-malware"]
    assert download["context"]["advisories"] == ["MAL-2025-2925"]


def test_downloads_record_the_facts_so_a_drafted_cooldown_shows_what_it_would_have_hidden(live, tmp_path):
    run = start_run(live, sandbox="sbx-early")  # no rules yet: the newest versions are installed
    assert clients.pip_install(fresh(tmp_path, "pip"), run["pypi"], run["token"], "cool").ok
    assert clients.npm(fresh(tmp_path, "npm"), run["npm"], run["token"], "install", "cool", "scripted").ok
    draft = {"python": {"rules": COOLDOWN}, "node": {"rules": COOLDOWN}}
    reply = live.call("POST", W + "/impact", live.tokens["admin"], {"draft": draft, "days": 30})
    assert reply.status == 200, reply.body
    hidden = {(h["language"], h["name"], h["version"], h["reason"]) for h in reply.json["would_hide"]}
    # scripted 1.1.0, uploaded long ago, is not: its upload time was recorded with the download
    assert hidden == {("python", "cool", "2.0", "too-new"), ("node", "cool", "2.0.0", "too-new")}


def would_hide(live, draft: dict) -> set[tuple]:
    """POST /impact of `draft`: (language, name, version, reason, installs) of each download it would hide."""
    reply = live.call("POST", W + "/impact", live.tokens["admin"], {"draft": draft, "days": 30})
    assert reply.status == 200, reply.body
    return {(h["language"], h["name"], h["version"], h["reason"], h["installs"]) for h in reply.json["would_hide"]}


def test_a_download_records_what_the_tarball_says_of_install_scripts_so_the_preview_agrees_with_the_save(
    live, tmp_path
):
    """The packument of `confused` says no script; its tarball's own package.json runs one."""
    run = start_run(live)  # no rules: served, and recorded with the tarball's word
    assert clients.npm(fresh(tmp_path, "npm"), run["npm"], run["token"], "install", "confused@1.0.0").ok
    [download] = [d for d in run_decisions(live, run) if d["request"] == "download"]
    assert download["allowed"] and download["context"]["install_scripts"] is True, download
    rules = {"install_scripts": {"allow": [], "action": "enforce"}}
    assert would_hide(live, {"node": {"rules": rules}}) == {("node", "confused", "1.0.0", "install-scripts", 1)}
    set_rules(live, node=rules)  # saved, the index refuses what the preview listed
    reply = live.call("GET", "/npm/acme/confused/-/confused-1.0.0.tgz", start_run(live)["token"])
    assert reply.status == 403 and "runs code at install time" in reply.json["error"], reply.body


def test_a_file_whose_name_does_not_say_its_version_records_its_facts_and_a_draft_judging_it_previews_it(live):
    legacy = "/pypi/acme/files/legacy/legacy-1.0.tar.bz2"
    run = start_run(live)  # no rules: served, its facts recorded all the same
    assert live.call("GET", legacy, run["token"]).status == 200
    [download] = [d for d in run_decisions(live, run) if d["request"] == "download"]
    assert download["allowed"] and download.get("package_version") is None
    assert download["context"] | {"sandbox": None, "actor": None} == {
        "source": "index",
        "sandbox": None,
        "actor": None,
        "version": None,
        "uploaded_at": OLD,
        "advisories": [],
    }
    drafts = (
        {"versions_deny": {"entries": ["legacy<2"], "action": "enforce"}},
        {"sdists": {"allow": [], "action": "enforce"}},
        {"min_release_age": {"age": "P1D", "exempt": [], "action": "enforce"}},
    )
    for rules in drafts:  # any rule needs the version: the index refuses the file, so it is counted
        assert would_hide(live, {"python": {"rules": rules}}) == {("python", "legacy", None, "version-unknown", 1)}
    for rules in drafts:
        set_rules(live, python=rules)
        other = start_run(live)
        reply = live.call("GET", legacy, other["token"])
        assert reply.status == 403 and "does not say which version" in reply.json["detail"], reply.body
        [refused] = [d for d in run_decisions(live, other) if d["request"] == "download"]
        assert refused["reason"] == "version-unknown" and refused["context"]["version"] is None
    # saved, the rules hid it: a draft without them shows every download of it, the refused ones too
    reply = live.call("POST", W + "/impact", live.tokens["admin"], {"draft": {"python": {"rules": {}}}, "days": 30})
    shown = [(s["name"], s["version"], s["reason"], s["installs"]) for s in reply.json["would_show"]]
    assert shown == [("legacy", None, "version-unknown", 4)], reply.body


def closure(live, language: str, *specs: str) -> tuple[dict, list[dict]]:
    """POST /allowlist/closure: {name: (versions, status, reason)}, and what was not followed."""
    body = {"language": language, "specs": list(specs)}
    reply = live.call("POST", W + "/allowlist/closure", live.tokens["admin"], body)
    assert reply.status == 200, reply.body
    return {n["name"]: (n["versions"], n["status"], n["reason"]) for n in reply.json["names"]}, reply.json["unresolved"]


def test_a_closure_takes_the_versions_the_index_shows_and_refuses_a_name_whose_every_version_is_hidden(live):
    record = Path(__file__).parents[1] / "corpus" / "osv" / "malicious" / "pypi" / "0-8" / "MAL-2025-2925.json"
    assert live.call("POST", W + "/advisories", live.tokens["owner"], json.loads(record.read_text())).status == 201
    no_sdists, no_scripts = {"sdists": {"allow": []}}, {"install_scripts": {"allow": []}}
    set_rules(live, python=COOLDOWN | no_sdists, node=COOLDOWN | no_scripts)
    allowed = "not-on-the-deny-list"

    # what pip gets through the index (the tests above): cool 1.0 under the cooldown, mixed 1.0 (2.0 is an sdist)
    names, unresolved = closure(live, "python", "app", "mixed", "untimed", "0-8")
    assert names == {
        "app": (["1.0"], "allowed", allowed),
        "cool": (["1.0"], "allowed", allowed),
        "mixed": (["1.0"], "allowed", allowed),
        "untimed": ([], "refused", "too-new"),  # no upload time: too new, its only version hidden
        "0-8": ([], "refused", "known-malware"),
    }
    assert {u["name"]: u["spec"] for u in unresolved} == {"untimed": "any", "0-8": "any"}
    assert all(u["why"].startswith("every version it could take is hidden: ") for u in unresolved)
    names, unresolved = closure(live, "python", "cool>=2")
    assert names == {"cool": ([], "refused", "too-new")} and "less than min_release_age (P3D)" in unresolved[0]["why"]

    # and npm: cool 1.0.0 (`latest` moved off 2.0.0, as the index moves it), scripted 1.0.0
    names, _ = closure(live, "node", "cool", "scripted")
    assert names == {"cool": (["1.0.0"], "allowed", allowed), "scripted": (["1.0.0"], "allowed", allowed)}
    names, unresolved = closure(live, "node", "cool@2", "scripted@1.1.0")
    assert names == {"cool": ([], "refused", "too-new"), "scripted": ([], "refused", "install-scripts")}
    assert [u["spec"] for u in unresolved] == ["2", "1.1.0"]


def test_in_a_closure_a_name_the_policy_does_not_allow_keeps_its_status_though_every_version_is_hidden(live):
    body = {"python": {"mode": "allowlist", "allow": ["app"], "deny": [], "rules": COOLDOWN}}
    assert live.call("PUT", W + "/policy", live.tokens["admin"], body).status == 200
    names, unresolved = closure(live, "python", "app", "untimed")
    assert names == {
        "app": (["1.0"], "allowed", "matches-the-allow-list"),
        "cool": (["1.0"], "unlisted", "not-on-the-allow-list"),
        "untimed": ([], "unlisted", "not-on-the-allow-list"),  # what an approval changes; the hiding is below
    }
    assert [(u["name"], u["why"].split(":")[0]) for u in unresolved] == [
        ("untimed", "every version it could take is hidden")
    ]
