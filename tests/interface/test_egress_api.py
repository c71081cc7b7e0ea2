"""The egress endpoints against a real server on loopback, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
from ipaddress import IPv4Address

import pytest

from application.egress import EgressConfig
from application.governance import Governance
from domain.errors import EgressConfigError
from interface import create_app
from interface.services import services
from interface.settings import Settings, egress_config_from_env
from tests.support.corpus import CORPUS_DIR
from tests.support.http_client import LiveServer

CORPUS = CORPUS_DIR / "egress.jsonl"
P = "/api/v1/workspaces/acme"
EVALUATE = {
    "target": "https://docs.python.org/3/",
    "resolved": ["151.101.0.223"],
    "context": {"sandbox": "sbx-42", "source": "run-code", "skill": None, "actor": "agent-7"},
}
TEST = {
    "target": "https://docs.python.org/3/",
    "resolved": ["151.101.0.223"],
    "hostname_allowlist": ["docs.python.org"],
}


def _corpus() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_corpus_case_gets_its_expected_answer_from_the_test_endpoint(live):
    cases = _corpus()
    assert cases, f"no cases read from {CORPUS}"
    mismatches = []
    for case in cases:
        body = {k: case[k] for k in ("target", "resolved", "hostname_allowlist")}
        reply = live.call("POST", P + "/egress/test", live.tokens["admin"], body)
        got = (reply.status, reply.json.get("allowed"), reply.json.get("reason"))
        if got != (200, case["expected"] == "allow", case["reason"]):
            mismatches.append((case["target"], case["hostname_allowlist"], case["reason"], got))
    assert not mismatches, f"{len(mismatches)} of {len(cases)} cases differ: {mismatches}"


def test_the_test_endpoint_records_nothing_and_gives_no_id(live):
    reply = live.call("POST", P + "/egress/test", live.tokens["admin"], TEST)
    assert reply.status == 200 and reply.json["allowed"] is True and reply.json["id"] is None
    assert live.call("GET", P + "/decisions?kind=egress", live.tokens["auditor"]).json["decisions"] == []


def test_an_evaluated_destination_is_recorded_in_the_audit_log_and_its_export(live):
    answer = live.call("POST", P + "/egress/evaluate", live.tokens["sandbox"], EVALUATE).json
    assert answer == {
        "allowed": True,
        "reason": "allowed",
        "host": "docs.python.org",
        "port": 443,
        "id": answer["id"],
        "detail": None,
    }
    denied = live.call(
        "POST", P + "/egress/evaluate", live.tokens["sandbox"], {"target": "http://169.254.169.254/latest/meta-data/"}
    ).json
    assert denied["allowed"] is False and denied["reason"] == "cloud-metadata" and denied["detail"]

    listed = live.call("GET", P + "/decisions?kind=egress", live.tokens["auditor"]).json["decisions"]
    assert [d["id"] for d in listed] == [denied["id"], answer["id"]]
    first = listed[1]
    assert first["kind"] == "egress" and first["name"] == "docs.python.org" and first["language"] is None
    assert first["spec"] == EVALUATE["target"] and first["resolved"] == EVALUATE["resolved"]
    assert first["context"]["sandbox"] == "sbx-42" and first["at"].endswith("Z")
    one = live.call("GET", P + f"/decisions/{denied['id']}", live.tokens["auditor"]).json
    assert one["reason"] == "cloud-metadata" and one["allowed"] is False

    export = live.call("GET", P + "/decisions?kind=egress&format=csv", live.tokens["auditor"])
    rows = list(csv.DictReader(io.StringIO(export.body.decode())))
    assert [(r["kind"], r["name"], r["reason"]) for r in rows] == [
        ("egress", "169.254.169.254", "cloud-metadata"),
        ("egress", "docs.python.org", "allowed"),
    ]
    assert rows[1]["sandbox"] == "sbx-42"


def test_egress_decisions_are_filtered_apart_from_package_decisions(live):
    live.call("POST", P + "/evaluate", live.tokens["sandbox"], {"language": "python", "specs": ["numpy"]})
    live.call("POST", P + "/egress/evaluate", live.tokens["sandbox"], EVALUATE)
    kinds = {d["kind"] for d in live.call("GET", P + "/decisions", live.tokens["auditor"]).json["decisions"]}
    egress = live.call("GET", P + "/decisions?kind=egress", live.tokens["auditor"]).json["decisions"]
    assert kinds == {"registry", "egress"} and [d["kind"] for d in egress] == ["egress"]


def test_a_hosts_decisions_are_found_by_any_spelling_of_it_as_a_packages_are(live):
    """`name=GOOD.TEST` found nothing, nor did `name=127.1` the decisions for 127.0.0.1, while
    `name=PANDAS` found pandas: a host is spelled as the egress rules read it."""
    sandbox, auditor = live.tokens["sandbox"], live.tokens["auditor"]
    good = live.call("POST", P + "/egress/evaluate", sandbox, {**EVALUATE, "target": "https://good.test/"}).json
    local = live.call("POST", P + "/egress/evaluate", sandbox, {"target": "http://127.1/"}).json
    live.call("POST", P + "/evaluate", sandbox, {"language": "python", "specs": ["pandas"]})

    def found(query: str) -> list[str]:
        return [d["name"] for d in live.call("GET", P + f"/decisions?{query}", auditor).json["decisions"]]

    for spelling in ("GOOD.TEST", "good.test.", "Good.Test."):
        assert found(f"kind=egress&name={spelling}") == found(f"name={spelling}") == ["good.test"]
    assert found("kind=egress&name=127.1") == found("name=0x7f.0.0.1") == [local["host"]] == ["127.0.0.1"]
    assert found("name=PANDAS") == ["pandas"] and found("kind=egress&name=PANDAS") == []
    assert found("language=python&name=GOOD.TEST") == [] and found("kind=registry&name=good.test.") == []
    assert good["allowed"] and found("kind=egress&name=good.test:443") == []  # a host, not a target
    # a blank filter would match nothing, silently (an empty name was a 500): refused, named
    for query in ("name=", "name=%20&kind=egress", "name=a%09b", "sandbox=", "source=%0A", "name=&format=csv"):
        reply = live.call("GET", P + f"/decisions?{query}", auditor)
        assert reply.status == 422, (query, reply.status, reply.body)
        assert reply.json["errors"][0]["field"] == query.split("=")[0], reply.body

    # Each spelling among its own kind's decisions only: pip reads `a.b`, `a_b` and `a..b` as a-b,
    # which is not the host a-b, nor is npm's foo-bar the package foo.bar (they had been found).
    for host in ("a.b", "a-b"):
        body = {"target": f"https://{host}/", "resolved": ["93.184.216.34"]}
        live.call("POST", P + "/egress/evaluate", sandbox, body)
    live.call("POST", P + "/evaluate", sandbox, {"language": "node", "specs": ["foo-bar"]})
    assert found("name=a.b") == found("kind=egress&name=a.b") == found("name=A.B.") == ["a.b"]
    assert found("name=a-b") == found("kind=egress&name=A-B") == ["a-b"]
    assert found("name=a_b") == found("name=a..b") == []
    assert found("name=foo.bar") == [] and found("name=foo-bar") == found("language=node&name=foo-bar") == ["foo-bar"]
    for query in ("name=a.b", "name=foo.bar"):  # the exports share the filter
        csv_export = live.call("GET", P + f"/decisions?{query}&format=csv", auditor).body.decode()
        assert [r["name"] for r in csv.DictReader(io.StringIO(csv_export))] == found(query)
        jsonl = live.call("GET", P + f"/decisions?{query}&format=jsonl", auditor).body.decode().splitlines()
        assert [json.loads(line)["name"] for line in jsonl] == found(query)


def test_the_csv_export_carries_an_egress_decisions_port_and_resolved_addresses(live):
    body = {**EVALUATE, "target": "good.test:8443", "resolved": ["151.101.0.223", "2a04:4e42::223"]}
    live.call("POST", P + "/egress/evaluate", live.tokens["sandbox"], body)
    live.call("POST", P + "/evaluate", live.tokens["sandbox"], {"language": "python", "specs": ["pandas"]})
    export = live.call("GET", P + "/decisions?format=csv", live.tokens["auditor"]).body.decode()
    assert export.splitlines()[0].endswith(",deliveries,port,resolved")  # appended: earlier columns stay put
    package, egress = csv.DictReader(io.StringIO(export))
    assert (egress["name"], egress["port"]) == ("good.test", "8443")
    assert json.loads(egress["resolved"]) == body["resolved"]
    assert (package["name"], package["port"], package["resolved"]) == ("pandas", "", "")


def test_a_csv_resolved_cell_reads_back_as_the_entries_recorded(live):
    """Entries were joined by spaces: one invalid entry `1.1.1.1 8.8.8.8` (refused invalid-target)
    read as two valid addresses. The cell is a JSON array of the entries, `[]` for none."""
    for resolved in (["1.1.1.1 8.8.8.8"], ["1.1.1.1", "8.8.8.8"], [], ['=1+1 "x",y']):
        body = {**EVALUATE, "target": "https://good.test/", "resolved": resolved}
        live.call("POST", P + "/egress/evaluate", live.tokens["sandbox"], body)
    export = live.call("GET", P + "/decisions?kind=egress&format=csv", live.tokens["auditor"]).body.decode()
    rows = list(csv.DictReader(io.StringIO(export)))
    assert [json.loads(r["resolved"]) for r in reversed(rows)] == [
        ["1.1.1.1 8.8.8.8"],
        ["1.1.1.1", "8.8.8.8"],
        [],
        ['=1+1 "x",y'],
    ]
    assert [r["reason"] for r in reversed(rows)] == ["invalid-target", "allowed", "allowed", "invalid-target"]


def test_invalid_allowlist_entries_are_refused_naming_each_one(live):
    body = {**TEST, "hostname_allowlist": ["pypi.org", "*", "api.*.example.com", "10.0.0.1", "ok.example"]}
    reply = live.call("POST", P + "/egress/test", live.tokens["admin"], body)
    assert reply.status == 422 and reply.media == "application/problem+json"
    fields = {e["field"]: e["message"] for e in reply.json["errors"]}
    assert set(fields) == {"hostname_allowlist[1]", "hostname_allowlist[2]", "hostname_allowlist[3]"}
    assert "'api.*.example.com'" in fields["hostname_allowlist[2]"]
    assert "api.*.example.com" in reply.json["detail"] and "'10.0.0.1'" in reply.json["detail"]


def test_malformed_egress_bodies_are_problems_not_crashes(live):
    for body in (
        {"target": 5},
        {"resolved": []},
        {"target": "x", "resolved": "1.2.3.4"},
        {"target": "x", "extra": 1},
        {"target": "x", "resolved": ["1.1.1.1"] * 65},
    ):
        reply = live.call("POST", P + "/egress/evaluate", live.tokens["sandbox"], body)
        assert reply.status == 422 and reply.media == "application/problem+json", (body, reply.body)
    missing = live.call("POST", P + "/egress/test", live.tokens["admin"], {"target": "x"})
    assert missing.status == 422  # the allowlist must be given explicitly (null for open)


def test_an_unreadable_resolver_answer_is_denied_as_an_invalid_target(live):
    reply = live.call(
        "POST", P + "/egress/evaluate", live.tokens["sandbox"], {"target": "example.com", "resolved": ["not-an-ip"]}
    )
    assert reply.status == 200 and reply.json["reason"] == "invalid-target" and reply.json["id"]


def test_both_egress_endpoints_are_in_the_openapi_document(live):
    paths = live.call("GET", "/api/v1/openapi.json").json["paths"]
    evaluate = paths["/api/v1/workspaces/{ws}/egress/evaluate"]["post"]
    test = paths["/api/v1/workspaces/{ws}/egress/test"]["post"]
    assert evaluate["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/EgressBody")
    assert test["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/EgressTestBody")
    assert {"200", "403", "422", "503"} <= set(evaluate["responses"])


def _served_with(database_url: str, **egress_env: str):
    """The service built from settings with these egress settings; its owner and a sandbox token."""
    flask_app = create_app(env={"RUNCODE_POLICY_DATABASE_URL": database_url, **egress_env})
    governance: Governance = services(flask_app).governance
    owner = governance.create_workspace("acme", by="founder")["token"]
    server = LiveServer(flask_app)
    sandbox = governance.issue_token("acme", "s", "sandbox", by="x")["token"]
    server.tokens = {"owner": owner, "sandbox": sandbox}
    yield server
    server.close()
    governance.close()


@pytest.fixture
def deployed(database_url):
    """The service with a deployment allowlist and an extra deny range."""
    yield from _served_with(
        database_url,
        RUNCODE_POLICY_EGRESS_ALLOWLIST="docs.python.org,\n*.readthedocs.io",
        RUNCODE_POLICY_EGRESS_DENY_RANGES="151.101.64.0/18",
    )


def test_the_deployment_allowlist_and_deny_ranges_govern_evaluate(deployed):
    def judge(target, resolved=()):
        reply = deployed.call(
            "POST", P + "/egress/evaluate", deployed.tokens["sandbox"], {"target": target, "resolved": list(resolved)}
        )
        assert reply.status == 200, reply.body
        return reply.json["allowed"], reply.json["reason"]

    assert judge("https://docs.python.org/3/", ["151.101.0.223"]) == (True, "allowed")
    assert judge("https://pip.readthedocs.io/x", ["104.16.253.120"]) == (True, "allowed")
    # A public package registry stays refused, allowlist or not: sandboxes use the index.
    assert judge("https://pypi.org/simple/", ["151.101.0.223"]) == (False, "package-registry")
    assert judge("https://github.com/", ["140.82.121.4"]) == (False, "not-on-hostname-allowlist")
    assert judge("https://docs.python.org/", ["151.101.64.223"]) == (False, "reserved")  # operator range
    # The explicit allowlist of the test endpoint replaces the deployment's, for admins' what-ifs.
    test = deployed.call(
        "POST",
        P + "/egress/test",
        deployed.tokens["owner"],
        {"target": "https://github.com/", "resolved": [], "hostname_allowlist": None},
    )
    assert test.json["allowed"] is True


@pytest.fixture
def ported(database_url):
    """The service with a port policy and wss let through (optional deployment settings)."""
    yield from _served_with(
        database_url, RUNCODE_POLICY_EGRESS_PORTS="443, 8443", RUNCODE_POLICY_EGRESS_SCHEMES="https, WSS"
    )


def test_a_deployment_port_policy_and_its_schemes_govern_evaluate(ported):
    def judge(target, resolved=("140.82.121.4",)):
        body = {"target": target, "resolved": list(resolved)}
        reply = ported.call("POST", P + "/egress/evaluate", ported.tokens["sandbox"], body)
        assert reply.status == 200, reply.body
        return reply.json["allowed"], reply.json["reason"], reply.json["detail"]

    assert judge("https://github.com/")[:2] == (True, "allowed")
    assert judge("wss://github.com:8443/feed")[:2] == (True, "allowed")
    assert judge("github.com:22") == (
        False,
        "port-not-allowed",
        "port 22 is not allowed: egress goes through ports 443, 8443 only",
    )
    assert judge("github.com")[1:] == (
        "port-not-allowed",
        "a target without a port is not allowed: egress goes through ports 443, 8443 only",
    )
    assert judge("http://github.com/")[:2] == (False, "unsupported-scheme")  # http was left out
    assert judge("https://169.254.169.254:22/", ())[1] == "cloud-metadata"  # the address outranks the port


# -- deployment configuration (no store needed) -------------------------------------------------
def test_egress_is_open_unless_an_allowlist_is_configured():
    assert Settings.from_env({}).egress == EgressConfig()
    assert Settings.from_env({}).egress.hostname_allowlist is None


def test_an_empty_allowlist_setting_denies_every_name():
    config = egress_config_from_env({"RUNCODE_POLICY_EGRESS_ALLOWLIST": " ,\n "})
    assert config.hostname_allowlist == ()


def test_allowlist_settings_are_split_on_commas_and_newlines_and_normalised():
    config = egress_config_from_env(
        {
            "RUNCODE_POLICY_EGRESS_ALLOWLIST": "Example.COM., *.PyPI.org\nmünchen.de",
            "RUNCODE_POLICY_EGRESS_DENY_RANGES": "203.0.114.0/24,\n2a00:1::/32",
        }
    )
    assert config.hostname_allowlist == ("example.com", "*.pypi.org", "xn--mnchen-3ya.de")
    assert [str(r) for r in config.deny_ranges] == ["203.0.114.0/24", "2a00:1::/32"]
    assert config.allow_addresses == ()


def test_a_bad_egress_setting_refuses_to_start_naming_every_bad_entry():
    env = {
        "RUNCODE_POLICY_EGRESS_ALLOWLIST": "pypi.org, *, x.*.org",
        "RUNCODE_POLICY_EGRESS_DENY_RANGES": "10.0.0.1/8, nonsense",
    }
    with pytest.raises(EgressConfigError) as raised:
        Settings.from_env(env)
    fields = [e.field for e in raised.value.errors]
    assert fields == [
        "RUNCODE_POLICY_EGRESS_ALLOWLIST[1]",
        "RUNCODE_POLICY_EGRESS_ALLOWLIST[2]",
        "RUNCODE_POLICY_EGRESS_DENY_RANGES[0]",
        "RUNCODE_POLICY_EGRESS_DENY_RANGES[1]",
    ]
    for entry in ("'*'", "'x.*.org'", "'10.0.0.1/8'", "'nonsense'"):
        assert entry in raised.value.detail


def test_the_egress_config_file_is_read_and_checked(tmp_path):
    path = tmp_path / "egress.json"
    path.write_text(json.dumps({"hostname_allowlist": ["pypi.org"], "deny_ranges": ["198.51.0.0/16"]}))
    config = egress_config_from_env({"RUNCODE_POLICY_EGRESS_CONFIG": str(path)})
    assert config.hostname_allowlist == ("pypi.org",) and len(config.deny_ranges) == 1
    path.write_text(json.dumps({"hostname_allowlist": None}))
    assert egress_config_from_env({"RUNCODE_POLICY_EGRESS_CONFIG": str(path)}).hostname_allowlist is None


@pytest.mark.parametrize(
    "content,env,words",
    [
        ('{"hostname_allow_list": ["pypi.org"]}', {}, "unknown key"),
        ("[1, 2]", {}, "JSON object"),
        ("{not json", {}, "cannot read"),
        ('{"hostname_allowlist": "pypi.org"}', {}, "must be a list"),
        ('{"hostname_allowlist": ["*"]}', {}, "hostname_allowlist[0]"),
        ('{"ports": 443}', {}, "ports: must be a list"),
        ('{"ports": [443, 0, "x", true]}', {}, "ports[1]: 0: must be a port number from 1 to 65535"),
        ('{"schemes": ["ftp"]}', {}, "schemes[0]: 'ftp': must be one of http, https, ws, wss"),
        ('{"schemes": []}', {}, "schemes: must name at least one"),
        ("{}", {"RUNCODE_POLICY_EGRESS_PORTS": "443"}, "cannot be combined"),
        ("{}", {"RUNCODE_POLICY_EGRESS_ALLOWLIST": "pypi.org"}, "cannot be combined"),
    ],
)
def test_a_bad_egress_config_file_is_refused_with_a_clear_message(tmp_path, content, env, words):
    path = tmp_path / "egress.json"
    path.write_text(content)
    with pytest.raises(EgressConfigError) as raised:
        egress_config_from_env({"RUNCODE_POLICY_EGRESS_CONFIG": str(path), **env})
    assert words in raised.value.detail


def test_the_test_only_address_allowance_is_only_set_in_code():
    assert EgressConfig(allow_addresses=("127.0.0.1",)).allow_addresses == (IPv4Address("127.0.0.1"),)
    with pytest.raises(EgressConfigError):
        EgressConfig(allow_addresses=("localhost",))
    settings = Settings.from_env({"RUNCODE_POLICY_EGRESS_ALLOW_ADDRESSES": "127.0.0.1"})
    assert settings.egress.allow_addresses == ()


def test_the_index_fetches_registry_files_its_upstream_links_to_though_sandboxes_may_not(app, tmp_path):
    flask_app = create_app(env={"RUNCODE_POLICY_DATA_DIR": str(tmp_path)}, governance=app)
    wheel = "https://files.pythonhosted.org/packages/aa/bb/requests-2.32.0-py3-none-any.whl"
    assert app.egress.judge_egress(wheel)["reason"] == "package-registry"  # a sandbox's own connection
    assert app.egress.judge_upstream_egress(wheel, ["146.75.28.223"])["allowed"] is True
    assert flask_app.extensions["pypi_upstream"].allows_host(wheel)
    assert not flask_app.extensions["pypi_upstream"].allows_host("http://169.254.169.254/latest/")
    for upstream in ("pypi_upstream", "npm_upstream"):
        flask_app.extensions[upstream].close()
