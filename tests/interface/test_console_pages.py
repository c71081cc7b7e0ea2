"""The console's overview, package pages, versions and friendly edges over a real server, on
SQLite and PostgreSQL (the browser tests check the same pages in Chromium)."""

from __future__ import annotations

import re
import time
import urllib.parse
from datetime import UTC, datetime, timedelta
from html import unescape

from tests.interface.test_console import API, Console, P, api, now_typed, signed_in


def _decide(live) -> str:
    """Lock Python down and record decisions; returns the UTC day the store stamped the switch with."""
    saved = api(live, "PUT", "/policy", {"note": "lock down", "python": {"mode": "allowlist", "allow": "pandas"}})
    for sandbox in ("sbx-1", "sbx-2", "sbx-2"):
        body = {"language": "python", "specs": ["pandas", "torch", "Torch"], "context": {"sandbox": sandbox}}
        api(live, "POST", "/evaluate", body, role="sandbox")
    api(live, "POST", "/egress/evaluate", {"target": "http://10.0.0.1/"}, role="sandbox")
    return saved["changed_at"][:10]


def _links(page) -> dict[str, str]:
    """Each link's text -> its address (the last one wins)."""
    found = re.findall(r'<a href="([^"]+)"[^>]*>(.*?)</a>', page.text, re.S)
    return {" ".join(re.sub(r"<[^>]+>", "", unescape(text)).split()): unescape(href) for href, text in found}


def _count(console: Console, link: str) -> int:
    """How many decisions the audit log lists behind a link (all pages)."""
    parts = urllib.parse.urlsplit(link)
    page = console.get(parts.path, **dict(urllib.parse.parse_qsl(parts.query)))
    assert page.status == 200, page.plain
    return len(page.rows())


def test_the_overview_counts_from_the_read_model_and_every_number_opens_its_decisions(live):
    _decide(live)
    console = signed_in(live, "auditor")
    page = console.get("/console/overview")
    assert page.status == 200
    assert "10 decisions 3 allowed 7 denied" in page.plain  # 9 package decisions and 1 egress
    links = _links(page)
    assert _count(console, links["10 decisions"]) == 10 and _count(console, links["7 denied"]) == 7
    torch = re.search(r"torch Python (\d+) sbx-2 \((\d+)\), sbx-1 \((\d+)\)", page.plain)
    assert torch and torch.groups() == ("6", "4", "2")  # both spellings are one package
    assert _count(console, links["6"]) == 6 and _count(console, links["sbx-2"]) == 4
    assert "Egress denials, last 7 days Host Denied Sandboxes 10.0.0.1 1" in page.plain
    assert "Version 2, " in page.plain and "Python: added pandas to the allow list (note: “lock down”)" in page.plain
    assert links["torch"] == "/console/packages/python/torch" and "0 pending requests" in page.plain


def test_a_sandbox_recorded_blank_or_padded_opens_exactly_its_decisions(live, monkeypatch):
    """A context value is refused blank or padded now (`domain.text.check_context`), but a store may
    hold ones recorded before: the Overview showed " padded " as padded, its link's filter was
    stripped to padded's decisions, and a sandbox of spaces was an invisible link to every decision."""
    import application.evaluation

    api(live, "PUT", "/policy", {"python": {"deny": "zzz-denied, emptysbx-pkg"}})
    with monkeypatch.context() as before:  # recorded as a release without the rule did
        before.setattr(application.evaluation, "check_context", lambda context: dict(context or {}))
        for specs, sandbox in (
            (["zzz-denied"], " padded "),
            (["Zzz_Denied==1.0"], "padded"),
            (["emptysbx-pkg"] * 3, "   "),
            (["emptysbx-pkg"], ""),
        ):
            body = {"language": "python", "specs": specs, "context": {"sandbox": sandbox}}
            api(live, "POST", "/evaluate", body, role="sandbox")
    console = signed_in(live, "auditor")
    page = console.get("/console/overview")
    assert "zzz-denied Python 2 “ padded ” (1), padded (1)" in page.plain, page.plain
    assert "emptysbx-pkg Python 4 (blank) (3)" in page.plain  # the empty one is counted as no sandbox
    links = _links(page)
    for shown, sandbox, count in (("“ padded ”", " padded ", 1), ("padded", "padded", 1), ("(blank)", "   ", 3)):
        parts = urllib.parse.urlsplit(links[shown])
        audit = console.get(parts.path, **dict(urllib.parse.parse_qsl(parts.query)))
        assert [r[6] for r in audit.rows()] == [shown] * count, (shown, audit.plain[:800])
        form = audit.form("/console/audit")
        assert form.get("sandbox") == sandbox  # kept as given, so Filter again opens the same decisions
        again = console.get("/console/audit", **{k: v for k, v in form.fields if v})
        assert len(again.rows()) == count, shown
    # The API finds them alike; only an empty filter is refused (leave it out to match any).
    found = api(live, "GET", "/decisions?sandbox=%20%20%20", role="auditor")["decisions"]
    assert [d["context"]["sandbox"] for d in found] == ["   "] * 3
    empty = live.call("GET", API + "/decisions?sandbox=", live.tokens["auditor"])
    assert empty.status == 422 and empty.json["errors"] == [
        {"field": "sandbox", "message": "must not be empty (leave it out to match any)"}
    ]


def test_the_overview_of_a_quiet_workspace_says_so(live):
    page = signed_in(live, "auditor").get("/console/overview")
    assert page.status == 200 and "0 decisions" in page.plain
    assert "No package was denied in the last 7 days." in page.plain
    assert "The policy has never been changed" in page.plain


def test_a_package_page_shows_its_status_timeline_and_recent_decisions(live):
    day = _decide(live)  # not a "today" read afterwards, which midnight may have moved on
    console = signed_in(live, "auditor")
    page = console.get("/console/packages/python/Torch", **{"from": day})
    assert page.status == 200
    assert "Now Denied: not-on-the-allow-list (allowlist mode, policy version 2)" in page.plain
    assert "switched to allowlist mode (note: “lock down”)" in page.plain
    intervals = [r for r in page.rows() if len(r) == 4]
    assert [r[2].split(":")[0] for r in intervals] == ["Allowed", "Denied"]
    assert intervals[0][3] == "the default policy" and "by owner: Python: switched to allowlist" in intervals[1][3]
    assert "0 allowed installs and 6 denied installs" in page.plain
    assert len([r for r in page.rows() if len(r) == 7]) == 6


def test_a_package_page_refuses_what_is_no_package_in_plain_words(live):
    console = signed_in(live, "auditor")
    assert console.get("/console/packages/ruby/rails").status == 404
    bad = console.get("/console/packages/python/torch", **{"from": "soon"})
    assert bad.status == 422 and "From (UTC): “soon” is not a date or time" in bad.plain


def test_a_version_shows_its_own_state_and_the_difference_from_the_one_before(live):
    api(live, "PUT", "/policy", {"python": {"mode": "allowlist", "allow": "pandas, numpy"}})
    console = signed_in(live, "auditor")
    second = console.get("/console/time-travel", version="2")
    assert second.status == 200 and "Differences from version 1 Python allow list: + pandas" in second.plain
    assert "Python: allowlist Allow list pandas Deny list (empty)" in second.plain
    first = console.get("/console/time-travel", version="1")
    assert "Python: mode denylist → allowlist" in first.plain
    assert "The default policy, before any change." in console.get("/console/time-travel", version="0").plain
    assert console.get("/console/time-travel", version="9").status == 404
    for typed in ("x", "-1"):
        plain = console.get("/console/time-travel", version=typed).plain
        assert "That is not a version number Version: must be a whole number from 0 up, such as 3" in plain, typed
    # '²' is a digit to str.isdigit() and not a number to int()
    superscript = console.get("/console/time-travel", version="2²")
    assert superscript.status == 422 and "That is not a version number" in superscript.plain
    # past what int() reads (4,300 digits), and past any version
    huge = console.get("/console/time-travel", version="9" * 5000)
    assert huge.status == 422 and "That is not a version number" in huge.plain


def test_a_version_shows_the_rules_and_exceptions_it_changed(live):
    """Differences listed only modes, lists, egress and known malware: a rule's version and an
    exception's showed an empty list, under a headline ending in "version.."."""
    rules = {"min_release_age": {"age": "P3D"}, "versions_deny": {"entries": "requests<2.20"}}
    api(live, "PUT", "/policy", {"python": {"rules": rules}})  # versions 1 and 2
    granted = api(live, "POST", "/exceptions", {"language": "node", "name": "left-pad", "duration": "P1D"})
    api(live, "DELETE", f"/exceptions/{granted['id']}")
    api(live, "PUT", "/policy", {"python": {"rules": {"versions_deny": {"entries": "requests<2.21"}}}})  # 5 and 6
    console = signed_in(live, "auditor")

    def differences(version: int) -> str:
        page = console.get("/console/time-travel", version=str(version))
        assert page.status == 200 and ".." not in page.plain, page.plain
        return page.plain.split(f"Differences from version {version - 1} ")[1].split(" Version ")[0]

    assert differences(1) == "Python rule: + Minimum release age: P3D. Enforce: hide the version."
    assert differences(2) == "Python rule: + Denied versions: requests<2.20. Enforce: hide the version."
    version = console.get("/console/time-travel", version="2").plain
    assert "set the rule Denied versions: requests<2.20. Enforce: hide the version. Differences" in version
    assert re.fullmatch(r"Node exception: \+ left-pad, until \S+ \S+ UTC", differences(3))
    assert differences(4) == "Node exception: − left-pad (revoked)"
    assert differences(5) == "Python rule: − Minimum release age: P3D. Enforce: hide the version."  # off
    # An exception that ran out before a version was made is not one it revoked.
    soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat().replace("+00:00", "Z")
    api(live, "POST", "/exceptions", {"language": "python", "name": "numpy", "expires_at": soon})  # 7
    time.sleep(1.2)
    api(live, "PUT", "/policy", {"python": {"deny": "evil"}})  # 8
    assert differences(8) == "Python deny list: + evil"
    assert differences(6) == (
        "Python rule: − Denied versions: requests<2.20. Enforce: hide the version. "
        "Python rule: + Denied versions: requests<2.21. Enforce: hide the version."
    )


def test_a_crafted_address_is_refused_naming_its_field_by_a_plain_label(live):
    """A language the console never offers, a name that is none, a changed page link and a
    negative version: each refusal names the field as a person knows it (a page link had been
    `cursor` and its rule spoke of next_cursor; -1 had been "not a number")."""
    link = "Page link: must be an Older, Later changes or Next page link as the page gave it"
    said = {
        "/console/time-travel?at=2020-01-01&language=ruby&name=pandas": "Language: must be python or node",
        "/console/time-travel?at=2020-01-01&name=--": "Package name: must be a registry package name",
        "/console/time-travel?version=-1": "Version: must be a whole number from 0 up, such as 3",
        "/console/audit?cursor=garbage": link,
        "/console/history?cursor=garbage": link,
        "/console/requests?cursor=garbage": link,
    }
    console = signed_in(live)
    for path, words in said.items():
        page = console.get(path)
        assert page.status in (404, 422) and words in page.plain, (path, page.plain[:600])


def test_the_policy_api_answers_at_a_version(live):
    api(live, "PUT", "/policy", {"python": {"mode": "allowlist", "allow": "pandas, numpy"}})
    second = api(live, "GET", "/policy?version=2")
    assert (second["version"], second["python"]["allow"]) == (2, ["pandas"]) and second["at"].endswith("Z")
    assert api(live, "GET", "/policy?version=0")["python"] == {"mode": "denylist", "allow": [], "deny": []}
    assert live.call("GET", API + "/policy?version=4", live.tokens["auditor"]).status == 404
    both = live.call("GET", API + "/policy?version=1&at=2026-03-03T00:00:00Z", live.tokens["auditor"])
    assert both.status == 422 and both.json["errors"][0]["field"] == "version"


def test_the_root_url_leads_to_the_sign_in_and_unknown_console_pages_are_html(live):
    console = Console(live)
    root = console.request("GET", "/")
    assert root.status == 302 and root.headers["Location"].endswith("/console/")
    assert console.follow(root).url == "/console/sign-in"
    console = signed_in(live, "auditor")
    missing = console.get("/console/no-such-page")
    assert missing.status == 404 and missing.headers["Content-Type"].startswith("text/html")
    assert "There is no such page in the console" in missing.plain and "Back to the overview" in missing.plain
    assert missing.headers["X-Frame-Options"] == "DENY"
    api_missing = live.call("GET", "/api/v1/no-such-thing")
    assert api_missing.status == 404 and api_missing.media == "application/problem+json"


def test_a_wrong_method_on_a_console_address_is_an_html_page_keeping_allow(live):
    """They were answered in problem+json, as the API's are."""
    console = signed_in(live, "auditor")
    for method, path in (
        ("POST", "/console/overview"),
        ("PUT", P),
        ("DELETE", "/console/audit"),
        ("POST", "/console/x"),
    ):
        page = console.request(method, path, data=[])
        assert page.status == 405 and page.headers["Content-Type"].startswith("text/html"), (method, path)
        assert f"A {method} request is not how this address is used, so nothing was changed" in page.plain
        assert "Back to the overview" in page.plain and page.headers["X-Frame-Options"] == "DENY"
        assert "GET" in page.headers["Allow"] and method not in page.headers["Allow"], page.headers
    assert "POST" in console.request("PUT", P, data=[]).headers["Allow"]  # the form's Save
    api_wrong = live.call("DELETE", API + "/policy", live.tokens["owner"])
    assert (
        api_wrong.status == 405
        and api_wrong.media == "application/problem+json"
        and "GET" in api_wrong.headers["allow"]
    )


def test_the_overview_shows_pending_requests(live):
    body = {"language": "python", "name": "Polars", "justification": "dataframes", "context": {"sandbox": "sbx-1"}}
    api(live, "POST", "/requests", body, role="sandbox")
    page = signed_in(live, "auditor").get("/console/overview")
    assert "1 pending request" in page.plain
    assert "Pending requests polars Python: asked by 1 requester since" in page.plain and "(“dataframes”)" in page.plain
    assert _links(page)["1 pending request"] == "/console/requests"


def test_a_package_page_shows_the_versions_the_index_hid_and_why(live, app):
    from datetime import UTC, datetime, timedelta

    from domain.rules import VersionFacts

    saved = api(live, "PUT", "/policy", {"python": {"rules": {"versions_deny": {"entries": ["alpha==1.0"]}}}})
    run = app.index.authenticate(app.index.runs.start("acme", app.authenticate(live.tokens["sandbox"]))["token"])
    old = datetime.now(UTC) - timedelta(days=30)
    for version in ("1.0", "2.0"):
        facts = VersionFacts(version, old, sdist=False)
        wheel = f"alpha-{version}-py3-none-any.whl"
        app.index.gate.judge(run, "python", "alpha", "download", wheel, version, facts=lambda facts=facts: facts)
    console = signed_in(live, "auditor")
    page = console.get("/console/packages/python/alpha", **{"from": saved["changed_at"][:10]})
    assert page.status == 200, page.plain
    hidden = [r for r in page.rows() if r and r[0] in ("1.0", "2.0") and len(r) == 4]
    assert [(r[0], r[1].split(":")[0], r[2]) for r in hidden] == [("1.0", "version-denied", "1")]
    link = _links(page)["1"]
    assert "reason=version-denied" in link and _count(console, link) == 1
    quiet = console.get("/console/packages/python/beta", **{"from": saved["changed_at"][:10]})
    assert "The index hid no version of beta in this period" in quiet.plain


def test_time_travel_shows_the_rules_in_force_then_in_the_packages_page_words(live):
    rules = {"min_release_age": {"age": "P3D", "exempt": ["@acme/*"]}, "install_scripts": {"allow": ["esbuild"]}}
    first = api(live, "PUT", "/policy", {"note": "cool down", "node": {"rules": rules}})
    later = {"versions_deny": {"entries": ["requests<2.20"], "action": "monitor"}, "sdists": {"allow": []}}
    api(live, "PUT", "/policy", {"python": {"rules": later}})
    console = signed_in(live, "auditor")
    then = console.get("/console/time-travel", at=first["changed_at"]).plain
    node = "Node: denylist Allow list (empty) Deny list (empty) Rules beyond names"
    assert (
        f"{node} Minimum release age: P3D; never too new: @acme/*. Enforce: hide the version."
        " Refuse versions that run install scripts; allowed anyway: esbuild. Enforce: hide the version." in then
    )
    assert "Python: denylist Allow list (empty) Deny list (empty) Rules beyond names (none)" in then
    assert "Denied versions" not in then and "Wheels only" not in then
    now = console.get("/console/time-travel", at=now_typed()).plain
    assert "Denied versions: requests<2.20. Monitor: serve it, record what the rule would do." in now
    assert "Wheels only: refuse source distributions. Enforce: hide the version." in now


def test_egress_and_known_malware_changes_read_well_and_hosts_link_to_what_exists(live):
    body = {"note": "files", "egress": {"allow": ["files.example.com"]}, "known_malware": "monitor"}
    api(live, "PUT", "/policy", body)
    api(live, "POST", "/requests", {"language": "egress", "name": "cdn.example.com"}, role="sandbox")
    console = signed_in(live)
    history = console.get("/console/history")
    assert "Egress: added files.example.com to the allow list" in history.plain
    assert "known malware: switched to monitor" in history.plain and ": added" not in history.plain.replace(
        "Egress: added", ""
    )
    overview = console.get("/console/overview")
    assert "Egress: added files.example.com to the allow list" in overview.plain
    requests = console.get("/console/requests")
    assert "Egress cdn.example.com" in requests.plain
    version = console.get("/console/time-travel", version="3")
    assert "Egress: added files.example.com to the allow list" in version.plain
    assert "Egress allow list: + files.example.com" in version.plain
    malware = console.get("/console/time-travel", version="1")
    assert "Known malware: mode enforce → monitor" in malware.plain
    for page in (history, overview, requests, version):
        hosts = [href for text, href in _links(page).items() if text.endswith(".example.com")]
        assert hosts and all("/console/packages/egress" not in h for h in hosts), hosts
        for href in hosts:
            parts = urllib.parse.urlsplit(href)
            assert console.get(parts.path, **dict(urllib.parse.parse_qsl(parts.query))).status == 200, href


def test_a_package_page_names_the_revocation_that_denied_it_and_what_opened_each_interval(live):
    """The page had named the mode switch (older than the interval) for an interval a revocation
    opened, and the deny entry's removal as why the name was denied; the revocation ends the lift."""
    locked = api(live, "PUT", "/policy", {"note": "lock down", "python": {"mode": "allowlist", "deny": "beta"}})
    filed = live.call(
        "POST", API + "/requests", live.tokens["sandbox"], {"language": "python", "name": "beta", "justification": "x"}
    ).json
    approval = {"duration": "P7D", "note": "for the report", "lift_deny": True}
    api(live, "POST", f"/requests/{filed['id']}/approve", approval)
    exception_id = api(live, "GET", "/exceptions", role="auditor")["exceptions"][0]["id"]
    assert live.call("DELETE", f"{API}/exceptions/{exception_id}", live.tokens["owner"]).status == 204
    page = signed_in(live, "auditor").get("/console/packages/python/beta", **{"from": locked["changed_at"][:10]})
    assert page.status == 200
    assert "Now Denied: matches-the-deny-list (allowlist mode, policy version 4)" in page.plain
    assert "Because: version 4, " in page.plain and "by owner: Python: revoked the exception for beta." in page.plain
    intervals = [r for r in page.rows() if len(r) == 4]
    assert [r[2].split(" (")[0] for r in intervals] == [
        "Allowed: not-on-the-deny-list",
        "Denied: matches-the-deny-list",
        "Allowed: matches-an-exception",
        "Denied: matches-the-deny-list",
    ]
    openers = [r[3] for r in intervals]
    assert openers[0] == "the default policy"
    assert openers[1].startswith("version 2, ") and "added beta to the deny list (note: “lock down”)" in openers[1]
    assert openers[2].startswith("version 3, ") and "Python: granted an exception for beta, until" in openers[2]
    assert openers[3].startswith("version 4, ") and openers[3].endswith("Python: revoked the exception for beta")
    assert "by owner" in openers[3]


def test_an_interval_is_opened_by_the_change_at_its_start_never_an_older_one(live):
    """Off the deny list again in allowlist mode: its cause is the older mode switch, but the
    interval begins at the removal, which the page names (it had named the switch)."""
    locked = api(live, "PUT", "/policy", {"note": "lock down", "python": {"mode": "allowlist"}})
    api(live, "PUT", "/policy", {"note": "try it", "python": {"deny": "zzzdemo"}})
    api(live, "PUT", "/policy", {"note": "undo", "python": {"deny": ""}})
    page = signed_in(live, "auditor").get("/console/packages/python/zzzdemo", **{"from": locked["changed_at"][:10]})
    assert "Because: version 1, " in page.plain and "switched to allowlist mode (note: “lock down”)." in page.plain
    intervals = [r for r in page.rows() if len(r) == 4]
    assert [r[2].split(":")[0] for r in intervals] == ["Allowed", "Denied", "Denied", "Denied"]
    assert [r[3].split(",")[0] for r in intervals] == ["the default policy", "version 1", "version 2", "version 3"]
    assert intervals[3][3].endswith("removed zzzdemo from the deny list (note: “undo”)")
