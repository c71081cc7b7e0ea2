"""The admin console over a real server on loopback, on SQLite and PostgreSQL.

`Console` below is a small browser without JavaScript: it keeps cookies, reads a page's forms
(hidden fields, checked radios, textareas, selected options) and submits them with a chosen
button, so the tests post exactly what a person's browser would.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import unescape
from html.parser import HTMLParser
from http.cookiejar import CookieJar

import pytest

from interface.console import when

P = "/console/settings/governance/packages"
API = "/api/v1/workspaces/acme"


@dataclass
class Form:
    action: str
    fields: list[tuple[str, str]] = field(default_factory=list)
    buttons: list[dict] = field(default_factory=list)
    readonly: set[str] = field(default_factory=set)

    def get(self, name: str) -> str | None:
        return next((v for n, v in self.fields if n == name), None)


class FormReader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.forms: dict[str, Form] = {}
        self._form: Form | None = None
        self._text: tuple[str, list] | None = None  # (name, parts) of an open textarea
        self._select: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self._form = self.forms.setdefault(a.get("id") or a.get("action", ""), Form(a.get("action", "")))
        elif self._form is None or "disabled" in a:
            return
        elif (
            tag == "input"
            and a.get("type") not in ("radio", "checkbox", "submit")
            or (tag == "input" and "checked" in a)
        ):
            self._form.fields.append((a["name"], a.get("value", "")))
        elif tag == "textarea":
            self._text = (a["name"], [])
            if "readonly" in a:
                self._form.readonly.add(a["name"])
        elif tag == "select":
            self._select = a["name"]
        elif tag == "option" and self._select and "selected" in a:
            self._form.fields.append((self._select, a.get("value", "")))
        elif tag == "button":
            self._form.buttons.append(a)

    def handle_data(self, data):
        if self._text is not None:
            self._text[1].append(data)

    def handle_endtag(self, tag):
        if tag == "textarea" and self._text is not None:
            self._form.fields.append((self._text[0], "".join(self._text[1])))
            self._text = None
        elif tag == "select":
            self._select = None
        elif tag == "form":
            self._form = None


@dataclass
class Page:
    status: int
    url: str
    headers: dict
    text: str

    @property
    def plain(self) -> str:
        """The visible text, tags dropped and whitespace squeezed."""
        inline = re.sub(r"</?(?:a|bdi|code|strong|span|time|em)\b[^>]*>", "", self.text)
        return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", inline))).strip()

    def form(self, key: str = "policy-form") -> Form:
        reader = FormReader()
        reader.feed(self.text)
        return reader.forms[key]

    def rows(self) -> list[list[str]]:
        """Body rows of the page's tables, each cell's text squeezed."""
        body = "".join(re.findall(r"<tbody>(.*?)</tbody>", self.text, re.S))
        return [
            [
                re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", c))).strip()
                for c in re.findall(r"<td>(.*?)</td>", row, re.S)
            ]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
        ]


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # redirects are followed by Console, so tests can see them


class Console:
    def __init__(self, live):
        self.live = live
        self.jar = CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _Stay)

    def request(self, method: str, path: str, data=None) -> Page:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(self.live.url + path, data=body, method=method)
        request.add_header("Referer", self.live.url + path)
        try:
            with self.opener.open(request, timeout=30) as response:
                return Page(response.status, path, dict(response.headers), response.read().decode())
        except urllib.error.HTTPError as error:
            return Page(error.code, path, dict(error.headers), error.read().decode())

    def follow(self, page: Page) -> Page:
        while page.status in (301, 302, 303):
            target = urllib.parse.urlsplit(page.headers["Location"])
            page = self.request("GET", target.path + (f"?{target.query}" if target.query else ""))
        return page

    def get(self, path: str, **params) -> Page:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return self.follow(self.request("GET", path + query))

    def post(self, path: str, data) -> Page:
        return self.request("POST", path, data)

    def submit(self, page: Page, key: str = "policy-form", against: str | None = None, **typed) -> Page:
        """Submit a page's form as a browser would, with fields changed (`python_allow` -> `python-allow`)."""
        form = page.form(key)
        changes = {k.replace("_", "-"): v for k, v in typed.items()}
        fields = [(n, changes.pop(n, v)) for n, v in form.fields] + list(changes.items())
        action = form.action
        if against is not None:
            button = next(b for b in form.buttons if b.get("value") == against)
            action = button["formaction"]
            fields.append(("against", against))
        return self.post(action, fields)

    def test(self, page: Page, against: str, **typed) -> Page:
        """Press a Test button: the post redirects to the answer's own address, which is followed."""
        answer = self.submit(page, against=against, **typed)
        assert answer.status == 303 and answer.headers["Location"].endswith("#results"), answer.status
        return self.follow(answer)

    def sign_in(self, token: str) -> Page:
        return self.submit(self.get("/console/sign-in"), "/console/sign-in", token=token)


def signed_in(live, role: str = "admin") -> Console:
    console = Console(live)
    assert console.sign_in(live.tokens[role]).status == 302
    return console


def api(live, method: str, path: str, body=None, role: str = "owner"):
    reply = live.call(method, API + path, live.tokens[role], body)
    assert reply.status < 400, reply.body
    return reply.json if reply.body else None


def now_typed() -> str:
    """Now as the console prints it: the whole second that holds the present (time travel's latest)."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def decision_count(live) -> int:
    return len(api(live, "GET", "/decisions?limit=1000")["decisions"])


# -- signing in and out ----------------------------------------------------------------------
def test_an_admin_signs_in_with_a_token_and_lands_on_the_overview(live):
    console = Console(live)
    answer = console.sign_in(live.tokens["admin"])
    assert answer.status == 302 and answer.headers["Location"].endswith("/console/overview")
    cookie = answer.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/console" in cookie
    page = console.follow(answer)
    assert page.status == 200 and "Decisions per day" in page.plain
    assert "Signed in to workspace acme as admin-token (admin)" in page.plain
    assert "Settings › Governance › Run-code packages" in console.get(P).plain


def test_the_session_cookie_never_reveals_the_token(live):
    console = signed_in(live)
    value = next(c.value for c in console.jar if c.name == "runcode_console")
    payload = value.lstrip(".").split(".")[0]
    raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    decoded = zlib.decompress(raw) if value.startswith(".") else raw
    assert live.tokens["admin"].encode() not in decoded and b"sid" in decoded


def test_a_sandbox_token_is_refused_at_sign_in(live):
    console = Console(live)
    page = console.sign_in(live.tokens["sandbox"])
    assert page.status == 403 and "A sandbox token cannot sign in" in page.plain
    assert console.request("GET", P).headers["Location"].endswith("/console/sign-in")


def test_an_unknown_token_is_refused_and_every_page_needs_a_session(live):
    console = Console(live)
    assert console.sign_in("rcp_not-a-real-token").status == 401
    for path in (P, "/console/audit", "/console/history", "/console/time-travel", "/console/audit/export.csv"):
        assert console.request("GET", path).status == 302, path


def test_signing_out_ends_the_session(live):
    console = signed_in(live)
    page = console.get(P)
    answer = console.post("/console/sign-out", [("csrf_token", page.form().get("csrf_token"))])
    assert answer.status == 302
    assert console.request("GET", P).headers["Location"].endswith("/console/sign-in")


def test_a_revoked_tokens_session_stops_working_at_once(live):
    console = signed_in(live)
    page = console.get(P)
    token = next(t for t in api(live, "GET", "/tokens")["tokens"] if t["name"] == "admin-token")
    api(live, "DELETE", f"/tokens/{token['id']}")
    refused = console.submit(page, python_mode="allowlist", python_allow="pandas")
    assert refused.status == 302 and refused.headers["Location"].endswith("/console/sign-in")
    assert "Your session has ended" in console.follow(refused).plain
    assert console.request("GET", P).status == 302
    assert api(live, "GET", "/policy")["version"] == 0


# -- the policy form -------------------------------------------------------------------------
def test_saving_the_form_changes_the_policy(live):
    console = signed_in(live)
    answer = console.submit(
        console.get(P),
        python_mode="allowlist",
        python_allow="pandas==2.1, numpy\nscipy",
        node_deny="@evil/pkg",
        note="approve pandas for the data team",
    )
    assert answer.status == 302
    page = console.follow(answer)
    assert "Saved. The policy is now version 5." in page.plain
    policy = api(live, "GET", "/policy")
    assert policy["python"] == {"mode": "allowlist", "allow": ["numpy", "pandas", "scipy"], "deny": []}
    assert policy["node"]["deny"] == ["@evil/pkg"] and policy["changed_by"] == "admin-token"
    assert page.form().get("python-allow") == "numpy\npandas\nscipy"  # saved entries, one per line
    notes = {c["note"] for c in api(live, "GET", "/history")["changes"]}
    assert notes == {"approve pandas for the data team"}


def test_invalid_entries_are_all_named_and_nothing_is_saved(live):
    console = signed_in(live)
    typed = "pandas\nnot a name!\nhttps://example.com/x.whl"
    page = console.submit(console.get(P), python_mode="allowlist", python_allow=typed, node_deny="ok-pkg, @@bad")
    assert page.status == 422
    assert "3 invalid entries; nothing was saved" in page.plain
    for where in ("Python allow list, entry 2", "Python allow list, entry 3", "Node deny list, entry 2"):
        assert where in page.plain
    assert page.form().get("python-allow") == typed and page.form().get("python-mode") == "allowlist"
    assert 'id="python-allow" name="python-allow"' in page.text and 'aria-invalid="true"' in page.text
    assert api(live, "GET", "/policy")["version"] == 0


def test_the_form_says_a_trailing_comment_is_dropped_as_a_save_drops_it(live):
    """The hint had said only that lines starting with # are ignored."""
    console = signed_in(live)
    page = console.get(P)
    hint = "and so is a Python line's trailing comment (pandas # for the data team lists pandas)"
    assert hint in " ".join(page.plain.split()), page.plain
    assert console.submit(page, python_allow="pandas  # for the data team").status == 302
    assert api(live, "GET", "/policy")["python"]["allow"] == ["pandas"]


def test_a_stale_form_shows_the_conflict_and_saves_nothing(live):
    console = signed_in(live)
    opened = console.get(P)
    api(live, "PUT", "/policy", {"note": "meanwhile", "python": {"mode": "denylist", "deny": "requests"}})
    page = console.submit(opened, python_mode="allowlist", python_allow="pandas")
    assert page.status == 409
    assert (
        "Someone else saved the policy after you opened this page (you started from version 0; "
        "it is now version 1). Nothing was saved." in page.plain
    )
    assert "expected_version" not in page.plain
    assert "Changed since you opened the form" in page.plain and "added requests to the deny list" in page.plain
    assert page.form().get("python-allow") == "pandas"
    assert api(live, "GET", "/policy")["python"] == {"mode": "denylist", "allow": [], "deny": ["requests"]}
    # Having seen the change, saving again applies exactly what the form shows, on purpose.
    assert console.submit(page).status == 302
    assert api(live, "GET", "/policy")["python"] == {"mode": "allowlist", "allow": ["pandas"], "deny": []}


def test_a_stale_form_shows_the_newest_changes_and_says_how_many_more_there_are(live):
    """The 409 page listed the oldest 100 changes since the form's version, with no sign of more:
    the newest, those the next Save would overwrite, were the ones left out."""
    console = signed_in(live)
    opened = console.get(P)
    names = [f"pkg-{i:03}" for i in range(130)]  # one change, one version, each
    api(
        live,
        "POST",
        "/policy/changes",
        {"changes": [{"action": "add", "language": "python", "list": "deny", "entries": names}]},
    )
    page = console.submit(opened, python_allow="pandas")
    assert page.status == 409
    listed = re.findall(r"added (pkg-\d+) to the deny list", page.plain)
    assert listed == names[30:], listed[:3]  # the newest 100, oldest first
    assert "Only the newest 100 are listed here: the 30 changes before them are in the change history." in page.plain
    history = unescape(re.search(r'href="([^"]+)">change history</a>', page.text).group(1))
    first = console.get(history.split("?")[0], **dict(urllib.parse.parse_qsl(history.split("?")[1])))
    assert first.rows()[0][3] == "Python: added pkg-000 to the deny list", first.rows()[0]


def test_a_second_save_of_the_same_form_says_whose_token_saved_first(live):
    """A second tab's Save (or Save pressed twice) was blamed on "someone else"."""
    console = signed_in(live)
    opened = console.get(P)
    assert console.submit(opened, python_allow="pandas").status == 302
    again = console.submit(opened, python_allow="pandas")
    assert again.status == 409
    assert "The policy was saved with the token you signed in with (admin-token) after you opened this page" in (
        again.plain
    )
    assert "Someone else" not in again.plain


def test_a_form_version_the_policy_never_had_is_refused_not_called_stale(live):
    api(live, "PUT", "/policy", {"note": "one", "python": {"mode": "denylist", "deny": "requests"}})
    console = signed_in(live)
    form = console.get(P).form()
    forged = {"expected_version": "3082", "python-deny": "requests\nevil"}
    page = console.post(form.action, [(n, forged.get(n, v)) for n, v in form.fields])
    assert page.status == 422, page.plain
    assert "The form's version: must be the current version, 1: the policy has never been at version 3082" in (
        page.plain
    )
    assert "you started from version" not in page.plain and "moved on" not in page.plain
    assert api(live, "GET", "/policy")["python"]["deny"] == ["requests"]


def test_an_auditor_sees_the_policy_read_only_and_cannot_save(live):
    api(live, "PUT", "/policy", {"python": {"mode": "allowlist", "allow": "pandas"}})
    console = signed_in(live, "auditor")
    page = console.get(P)
    form = page.form()
    assert "Save" not in [b.get("value", "") for b in form.buttons] and ">Save</button>" not in page.text
    assert {"python-allow", "python-deny", "node-allow", "node-deny"} <= form.readonly
    assert [b["value"] for b in form.buttons] == ["saved"]  # no draft tests either
    fields = form.fields + [("python-mode", "denylist"), ("node-mode", "denylist")]
    assert console.post(P, fields).status == 403
    assert console.post(P + "/test", fields + [("against", "draft"), ("test-input", "x")]).status == 403
    tested = console.follow(console.submit(page, against="saved", test_input="pandas\nnumpy"))
    assert tested.status == 200 and [r[3] for r in tested.rows()] == ["Allowed", "Denied"]
    assert api(live, "GET", "/policy")["version"] == 2


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(live):
    console = signed_in(live)
    fields = [(n, v) for n, v in console.get(P).form().fields if n != "csrf_token"]
    fields = [(n, "allowlist" if n == "python-mode" else v) for n, v in fields]
    for forged in (fields, fields + [("csrf_token", "forged")]):
        refused = console.post(P, forged)
        assert refused.status == 400 and "Nothing was changed" in refused.plain
    assert api(live, "GET", "/policy")["version"] == 0


# -- the Test panel --------------------------------------------------------------------------
def test_testing_a_draft_shows_results_but_records_and_saves_nothing(live):
    api(live, "POST", "/evaluate", {"language": "python", "specs": ["requests"]}, role="sandbox")
    before = decision_count(live)
    console = signed_in(live)
    page = console.test(
        console.get(P),
        against="draft",
        python_mode="allowlist",
        python_allow="pandas",
        test_language="python",
        test_input="pandas\nnumpy",
    )
    assert page.status == 200 and "Results against your unsaved draft" in page.plain
    rows = {r[0]: r for r in page.rows()}
    assert rows["pandas"][3:5] == ["Allowed", "matches-the-allow-list"]
    assert rows["numpy"][3:5] == ["Denied", "not-on-the-allow-list"]
    assert page.form().get("python-allow") == "pandas" and page.form().get("python-mode") == "allowlist"
    assert page.form().get("expected_version") == "0"
    assert api(live, "GET", "/policy")["python"]["mode"] == "denylist"
    assert decision_count(live) == before


def test_a_pasted_command_line_is_split_and_every_part_judged(live):
    console = signed_in(live)
    page = console.test(
        console.get(P),
        against="saved",
        test_language="node",
        test_input="pip install --index-url https://mirror.example/simple 'pandas>=2'",
    )
    assert page.status == 200
    rows = page.rows()
    assert [r[2] for r in rows] == ["option", "registry"]
    assert rows[0][3:5] == ["Denied", "invalid-spec"] and rows[1][:2] == ["pandas>=2", "pandas"]


@pytest.mark.parametrize(
    ("language", "lines"),
    [
        ("python", ["requests\u00a0", "\u3000requests", " requests", "pandas", "a\u2028b", "x\x0by", "numpy\x0c"]),
        ("node", [" lodash", "lodash", "lodash\u00a0", "left\u2028pad", "a(b"]),
    ],
)
def test_each_pasted_line_is_judged_as_the_apis_test_judges_it(live, language, lines):
    """The panel's answer for a line is /test's for that line: its own blanks and Unicode spaces
    reach the parser, and lines break at CR/LF only (not at U+2028, VT or FF)."""
    api(live, "PUT", "/policy", {"python": {"deny": "pandas"}, "node": {"deny": "lodash"}})
    console = signed_in(live)
    typed = "\r\n".join(["", "   ", *lines, "# a comment"])  # a textarea sends CRLF
    page = console.test(console.get(P), against="saved", test_language=language, test_input=typed)
    asked = api(live, "POST", "/test", {"language": language, "specs": lines}, role="admin")["decisions"]
    said = [[d["name"] or "—", d["kind"], "Allowed" if d["allowed"] else "Denied", d["reason"]] for d in asked]
    assert [r[1:5] for r in page.rows()] == said


def test_a_node_deny_list_of_old_names_holding_brackets_and_quotes_denies_every_one(live):
    console = signed_in(live)
    typed = "bad\nx(y, evil-one\nleft'pad"
    page = console.test(console.get(P), against="draft", node_deny=typed, test_language="node", test_input="evil-one")
    assert [r[3:5] for r in page.rows()] == [["Denied", "matches-the-deny-list"]]
    assert console.submit(page, node_deny=typed).status == 302
    assert api(live, "GET", "/policy")["node"]["deny"] == ["bad", "evil-one", "left'pad", "x(y"]


def test_an_unclosed_bracket_in_the_form_is_explained_and_nothing_is_saved(live):
    console = signed_in(live)
    page = console.submit(console.get(P), python_deny="ok, evil[x, evil-two")
    assert page.status == 422 and "Python deny list, entry 2: 'evil[x' is not a valid package name" in page.plain
    assert api(live, "GET", "/policy")["version"] == 0


def test_a_broken_draft_or_empty_test_is_explained_in_the_form(live):
    console = signed_in(live)
    page = console.test(console.get(P), against="draft", python_allow="bad name", test_input="pandas")
    assert page.status == 422 and "Python allow list, entry 1" in page.plain
    empty = console.test(console.get(P), against="saved", test_input="  ")
    assert empty.status == 422 and "no specs to judge" in empty.plain


# -- audit -----------------------------------------------------------------------------------
def _decide(live):
    api(live, "PUT", "/policy", {"node": {"mode": "denylist", "deny": "left-pad"}})
    specs = [f"pkg-{i}" for i in range(60)]
    context = {"sandbox": "sbx-1", "source": "run-code"}
    api(live, "POST", "/evaluate", {"language": "python", "specs": specs, "context": context}, role="sandbox")
    context = {"sandbox": "sbx-2", "source": "run-code"}
    api(live, "POST", "/evaluate", {"language": "node", "specs": ["left-pad"], "context": context}, role="sandbox")


def test_the_audit_log_lists_decisions_newest_first_with_older_pages(live):
    _decide(live)
    console = signed_in(live, "auditor")
    first = console.get("/console/audit")
    rows = first.rows()
    assert len(rows) == 50 and rows[0][2] == "left-pad" and rows[0][5] == "Denied matches-the-deny-list"
    assert len(rows[0]) == 11 and "Delivered" not in first.text  # no index download: no column for one
    older = re.search(r'href="([^"]+)" rel="next">Older', first.text).group(1)
    second = console.get(unescape(older))
    assert len(second.rows()) == 11 and "Older" not in second.plain
    seen = {r[2] for r in rows + second.rows()}
    assert seen == {"left-pad", *(f"pkg-{i}" for i in range(60))}


def test_the_audit_log_filters_by_outcome_name_and_sandbox(live):
    _decide(live)
    console = signed_in(live)
    denied = console.get("/console/audit", outcome="denied").rows()
    assert [(r[2], r[6]) for r in denied] == [("left-pad", "sbx-2")]
    spelled = console.get("/console/audit", language="python", name="PKG_7", sandbox="sbx-1").rows()
    assert [r[2] for r in spelled] == ["pkg-7"]
    assert console.get("/console/audit", reason="matches-the-deny-list", language="python").rows() == []
    bad = console.get("/console/audit", **{"from": "last tuesday"})
    assert bad.status == 422 and "From (UTC): “last tuesday” is not a date or time" in bad.plain
    assert "download>CSV" not in bad.text and "download>CSV" in console.get("/console/audit").text
    assert console.get("/console/audit", to="9999-12-31").rows() == console.get("/console/audit").rows()
    for page in ("/console/audit", "/console/history", "/console/packages/python/left-pad"):
        backwards = console.get(page, **{"from": "2026-03-05", "to": "2026-03-04"})
        assert backwards.status == 422 and "To (UTC) is not after From (UTC)" in backwards.plain, page


def test_the_export_downloads_the_filtered_decisions(live):
    _decide(live)
    console = signed_in(live, "auditor")
    page = console.get("/console/audit", outcome="denied")
    link = unescape(re.search(r'href="([^"]+)" download>CSV', page.text).group(1))
    csv = console.get(link.split("?")[0], **dict(urllib.parse.parse_qsl(link.split("?")[1])))
    assert csv.status == 200 and csv.headers["Content-Type"].startswith("text/csv")
    assert 'attachment; filename="decisions-acme.csv"' == csv.headers["Content-Disposition"]
    lines = csv.text.strip().splitlines()
    assert lines[0].startswith("id,at,language,name") and len(lines) == 2 and "left-pad" in lines[1]
    jsonl = console.get("/console/audit/export.jsonl", language="python")
    names = [json.loads(line)["name"] for line in jsonl.text.splitlines()]
    assert sorted(names) == sorted(f"pkg-{i}" for i in range(60))


def test_the_change_history_shows_who_when_what_and_why(live):
    console = signed_in(live)
    console.submit(console.get(P), python_mode="allowlist", python_allow="pandas", note="for the data team")
    page = console.get("/console/history")
    rows = page.rows()
    assert [r[0] for r in rows] == ["1", "2"]
    assert rows[0][2:5] == ["admin-token", "Python: switched to allowlist mode", "for the data team"]
    assert rows[1][3] == "Python: added pandas to the allow list" and rows[1][1].endswith("UTC")
    assert "/console/time-travel?version=2" in page.text


# -- time travel -----------------------------------------------------------------------------
def test_time_travel_shows_the_policy_as_it_stood_then(live):
    first = api(live, "PUT", "/policy", {"note": "first", "python": {"mode": "allowlist", "allow": "pandas"}})
    api(live, "PUT", "/policy", {"note": "second", "python": {"allow": "numpy"}})
    console = signed_in(live, "auditor")
    then = console.get("/console/time-travel", at=first["changed_at"], language="python", name="Pandas")
    assert then.status == 200
    assert "Version 2, last changed by owner" in then.plain
    assert "Python: allowlist Allow list pandas Deny list (empty)" in then.plain
    assert "Allowed: matches-the-allow-list (allowlist mode, policy version 2)" in then.plain
    assert "added pandas to the allow list (note: “first”)" in then.plain
    now = console.get("/console/time-travel", at=now_typed(), name="pandas")
    assert "Python: allowlist Allow list numpy Deny list" in now.plain
    assert "Denied: not-on-the-allow-list" in now.plain and "removed pandas" in now.plain
    before = console.get("/console/time-travel", at="2000-01-01")
    assert "Version 0: the default policy" in before.plain


def test_time_travel_to_a_time_as_the_console_prints_it_shows_what_was_saved_in_that_second(live):
    """The console prints whole seconds; a change's microseconds fall within them. An auditor who
    types the printed time of a Save gets the policy it saved, not the one before it."""
    saved = api(live, "PUT", "/policy", {"note": "first", "python": {"mode": "allowlist", "allow": "pandas"}})
    printed = when(saved["changed_at"])  # `2026-12-06 21:19:12 UTC`, as the history shows it
    console = signed_in(live, "auditor")
    for typed in (printed, printed.removesuffix(" UTC"), printed[: len("2026-12-06 21:19")]):
        then = console.get("/console/time-travel", at=typed, language="python", name="pandas")
        said = f"Allowed: matches-the-allow-list (allowlist mode, policy version {saved['version']})"
        assert said in then.plain, typed


def test_time_travel_lists_the_exceptions_in_force_then_without_revoke_buttons(live):
    saved = api(live, "PUT", "/policy", {"note": "first", "python": {"mode": "allowlist"}})
    granted = api(live, "POST", "/exceptions", {"language": "python", "name": "pandas", "note": "for the demo"})
    console = signed_in(live)  # an owner: the packages page offers Revoke, time travel never does
    after = console.get("/console/time-travel", at=now_typed())
    assert "Exceptions in force then" in after.plain and "pandas" in after.plain and "for the demo" in after.plain
    assert "Revoke" not in after.plain and "Revoke" in console.get(P).plain
    version = console.get("/console/time-travel", version=saved["version"])
    assert "Exceptions in force then None." in version.plain  # the version Saved before the grant
    api(live, "DELETE", f"/exceptions/{granted['id']}")
    assert "Exceptions in force then None." in console.get("/console/time-travel", at=now_typed()).plain


def test_a_bad_instant_is_explained_not_a_server_error(live):
    console = signed_in(live)
    page = console.get("/console/time-travel", at="yesterday", name="pandas")
    assert page.status == 422 and "Instant (UTC): “yesterday” is not a date or time" in page.plain
    assert "type a UTC date such as 2026-03-03" in page.plain and "RFC 3339 timestamp" not in page.plain
    assert page.form("/console/time-travel").get("at") == "yesterday"


def test_the_future_is_refused_and_the_second_that_holds_now_is_answered_up_to_now(live):
    """Time travel to a later instant had answered as if it were known; a package's timeline ran on
    to the end of its last day."""
    console = signed_in(live, "auditor")
    later = console.get("/console/time-travel", at="2099-01-01 00:00", name="pandas")
    assert later.status == 422 and "Instant (UTC): “2099-01-01 00:00” is later than now" in later.plain
    assert "Instant (UTC): must not be in the future" in later.plain
    now = console.get("/console/time-travel", at=now_typed(), name="pandas")
    assert now.status == 200 and "Allowed: not-on-the-deny-list" in now.plain
    ahead = console.get("/console/packages/python/pandas", **{"from": "2099-01-01"})
    assert ahead.status == 422 and "From (UTC): “2099-01-01” is later than now" in ahead.plain
    assert "From (UTC): must not be in the future" in ahead.plain
    day = now_typed()[:10]
    today = console.get("/console/packages/python/pandas", **{"from": day})
    assert today.status == 200 and f"From {day} 00:00:00 UTC to {day} " in today.plain  # not the next day's 00:00


def test_console_pages_can_not_be_framed_cached_or_run_scripts(live):
    page = signed_in(live).get(P)
    assert page.headers["X-Frame-Options"] == "DENY" and page.headers["Cache-Control"] == "no-store"
    assert "default-src 'none'" in page.headers["Content-Security-Policy"] and "<script" not in page.text


# -- the pieces underneath -------------------------------------------------------------------
def test_pasted_text_is_a_command_only_when_it_starts_like_one():
    from interface.console.forms import spec_input

    assert spec_input("python", "pip\nnumpy") == ("python", ["pip", "numpy"], None)
    assert spec_input("python", "pip >= 23\n# a comment\n") == ("python", ["pip >= 23"], None)
    assert spec_input("node", "pip install -r req.txt \\\n  'pandas>=2'") == (
        None,
        None,
        ["pip", "install", "-r", "req.txt", "pandas>=2"],
    )
    assert spec_input("python", "python3 -m pip install x")[2] == ["python3", "-m", "pip", "install", "x"]


def test_the_console_secret_key_is_generated_once_private_and_kept(tmp_path):
    from interface.settings import Settings

    settings = Settings.from_env({"RUNCODE_POLICY_DATA_DIR": str(tmp_path / "data")})
    key = settings.console_secret_key()
    assert len(key) >= 32 and settings.console_secret_key() == key
    assert (tmp_path / "data" / "secret_key").stat().st_mode & 0o777 == 0o600
    configured = Settings.from_env({"RUNCODE_POLICY_DATA_DIR": str(tmp_path), "RUNCODE_POLICY_SECRET_KEY": "k" * 40})
    assert configured.console_secret_key() == "k" * 40


def test_behind_a_trusted_tls_proxy_the_session_cookie_is_secure(app, tmp_path):
    from interface import create_app
    from tests.support.http_client import LiveServer

    env = {"RUNCODE_POLICY_DATA_DIR": str(tmp_path), "RUNCODE_POLICY_TRUSTED_PROXY_HOPS": "1"}
    server = LiveServer(create_app(env=env, governance=app))
    try:
        behind = server.call("GET", "/console/sign-in", headers={"X-Forwarded-Proto": "https"})
        direct = server.call("GET", "/console/sign-in")
    finally:
        server.close()
    assert "Secure" in behind.headers["set-cookie"] and "Secure" not in direct.headers["set-cookie"]
