"""The sandbox gate as the sandbox runs it: a copy of its folder, in a Python without the
project's packages, asking the real service on loopback (SQLite and PostgreSQL) before running a
stand-in program (tests/interface/test_gate_installs.py runs real installers)."""

from __future__ import annotations

import ast
import base64
import http.server
import json
import socket
import sys
import urllib.parse

import pytest

from interface.gate.clients.python.settings import PIP_BOOTSTRAP
from tests.support.background import serve_in_background
from tests.support.gate import GATE, Gate
from tests.support.index_live import index_live_env  # noqa: F401 - fixture live_env: the index's upstreams local
from tests.support.target_env import TargetEnv


@pytest.fixture
def gate(tmp_path):
    return Gate(tmp_path)


OFFLINE = {"RUNCODE_POLICY_TOKEN": "rcp_any", "RUNCODE_POLICY_WORKSPACE": "acme"}


@pytest.fixture
def sandbox_env(live) -> dict:
    return {
        "RUNCODE_POLICY_URL": live.url,
        "RUNCODE_POLICY_TOKEN": live.tokens["sandbox"],
        "RUNCODE_POLICY_WORKSPACE": "acme",
        "RUNCODE_POLICY_SANDBOX": "sbx-7",
        "RUNCODE_POLICY_ACTOR": "agent-7",
    }


@pytest.mark.parametrize(
    ("command", "runs"),
    [
        (["pip", "install", "pandas==2.1"], ["pip", "install", "pandas==2.1"]),
        (
            ["python", "-m", "pip", "install", "pandas"],
            ["python", "-I", "-S", "-c", PIP_BOOTSTRAP, "-m", "pip", "install", "pandas"],
        ),
        (["uv", "pip", "install", "pandas"], ["uv", "pip", "install", "pandas"]),
    ],
)
def test_an_allowed_install_runs_the_gates_own_program_with_the_arguments(gate, sandbox_env, app, command, runs):
    done = gate("--", *command, env=sandbox_env)
    assert done.returncode == 0, done.stderr
    ran = gate.ran()["argv"]
    assert ran == [str(gate.programs / runs[0]), *runs[1:]]
    recorded = app.audit.decisions("acme")["decisions"][0]
    assert recorded["allowed"] is True
    assert recorded["context"] == {"sandbox": "sbx-7", "source": "run-code", "actor": "agent-7", "skill": None}


def test_the_commands_own_exit_status_becomes_the_gates(gate, sandbox_env):
    done = gate("--", "pip", "install", "pandas", env={**sandbox_env, "FAKE_EXIT": "7"})
    assert done.returncode == 7 and gate.ran()["argv"][1:] == ["install", "pandas"]


def test_a_denied_package_is_not_installed_and_the_gate_exits_3(gate, sandbox_env, app):
    app.change_policy(
        "acme",
        [{"action": "add", "language": "python", "list": "deny", "entries": ["numpy"]}],
        by="security",
        note="no numpy here",
    )
    done = gate("--", "pip", "install", "pandas", "numpy", env=sandbox_env)
    assert done.returncode == 3 and gate.ran() is None
    denials = [line for line in done.stderr.splitlines() if "denied:" in line]
    assert len(denials) == 1 and "numpy" in denials[0] and "deny list" in denials[0], done.stderr
    assert "pandas" not in denials[0]


@pytest.mark.parametrize("option", [["--target", "/tmp/t"], ["--report", "-"], ["--index-url", "http://x/simple/"]])
def test_a_command_refused_only_for_an_option_exits_2_there_is_no_package_to_ask_for(gate, sandbox_env, option):
    done = gate("--", "pip", "install", "pandas", *option, env=sandbox_env)
    assert done.returncode == 2 and gate.ran() is None, done.stderr
    assert f"denied: '{' '.join(option)}' cannot be judged" in done.stderr and "exit status 2" in done.stderr


def test_an_option_beside_a_denied_package_is_still_exit_3(gate, sandbox_env, app):
    app.change_policy("acme", [{"action": "add", "language": "python", "list": "deny", "entries": ["numpy"]}], by="t")
    done = gate("--", "pip", "install", "numpy", "--target", "/tmp/t", env=sandbox_env)
    assert done.returncode == 3 and gate.ran() is None and "exit status 3" in done.stderr, done.stderr


def test_an_unreachable_service_fails_closed_with_exit_4(gate):
    with socket.socket() as probe:  # a port that was free a moment ago: nobody listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = gate("--", "pip", "install", "pandas", env={**OFFLINE, "RUNCODE_POLICY_URL": f"http://127.0.0.1:{port}"})
    assert done.returncode == 4 and gate.ran() is None
    assert "unreachable" in done.stderr and "fail closed" in done.stderr


def test_a_service_that_does_not_answer_in_time_fails_closed_with_exit_4(gate):
    with socket.socket() as silent:  # accepts connections (backlog) but never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        env = {
            **OFFLINE,
            "RUNCODE_POLICY_URL": f"http://127.0.0.1:{silent.getsockname()[1]}",
            "RUNCODE_POLICY_TIMEOUT": "0.5",
        }
        done = gate("--", "pip", "install", "pandas", env=env)
    assert done.returncode == 4 and gate.ran() is None
    assert "no answer within 0.5 s" in done.stderr


def test_a_refused_token_fails_closed_with_exit_4_and_the_problem_detail(gate, sandbox_env):
    done = gate("--", "pip", "install", "pandas", env={**sandbox_env, "RUNCODE_POLICY_TOKEN": "rcp_wrong"})
    assert done.returncode == 4 and gate.ran() is None
    assert "HTTP 401" in done.stderr


def test_a_refused_label_setting_is_named_by_its_variable(gate, sandbox_env):
    """A label is one line: the service refuses `context.sandbox`, which the gate had said without
    the setting that filled it."""
    for variable in ("RUNCODE_POLICY_SANDBOX", "RUNCODE_POLICY_ACTOR"):
        done = gate("--", "pip", "install", "pandas", env={**sandbox_env, variable: "a\tb"})
        assert done.returncode == 4 and gate.ran() is None, done.stderr
        assert f"set by {variable}: must be one line" in done.stderr, done.stderr
        padded = gate("--", "pip", "install", "pandas", env={**sandbox_env, variable: "sbx-7 "})
        assert padded.returncode == 4 and gate.ran() is None, padded.stderr
        assert f"set by {variable}: must not be blank nor begin or end with whitespace" in padded.stderr


def test_a_pip_command_the_gate_does_not_run_is_a_usage_error_with_exit_2(gate, sandbox_env):
    done = gate("--", "pip", "frobnicate", env=sandbox_env)
    assert done.returncode == 2 and gate.ran() is None
    assert "the gate runs pip install and pip download only" in done.stderr


def test_a_command_the_service_refuses_to_parse_is_a_usage_error_with_its_reason(gate):
    body = b'{"title": "Not an install command", "status": 422, "detail": "no", '
    body += b'"errors": [{"field": "command", "message": "only pip install"}]}'
    with canned_service(422, body) as url:
        done = gate("--", "pip", "install", "pandas", env={**OFFLINE, "RUNCODE_POLICY_URL": url})
    assert done.returncode == 2 and gate.ran() is None, done.stderr
    assert "the policy service refuses `pip install pandas`: HTTP 422" in done.stderr
    assert "(command: only pip install)" in done.stderr and "cannot verify" not in done.stderr


def test_another_invalid_input_answer_still_fails_closed_with_exit_4(gate):
    body = (
        b'{"title": "Invalid input", "status": 422, "detail": "no", "errors": [{"field": "context", "message": "x"}]}'
    )
    with canned_service(422, body) as url:
        done = gate("--", "pip", "install", "pandas", env={**OFFLINE, "RUNCODE_POLICY_URL": url})
    assert done.returncode == 4 and gate.ran() is None and "HTTP 422 Invalid input: no (context: x)" in done.stderr


def test_every_decision_of_a_gated_install_names_the_agent_and_sandbox_the_gate_was_given(sandbox_env, app, tmp_path):
    """Real pip through the gate: the gate's `/evaluate` and each of the index's page, metadata
    and download decisions of its run record RUNCODE_POLICY_ACTOR and RUNCODE_POLICY_SANDBOX,
    not the name of the token that started the run."""
    target = TargetEnv(tmp_path / "venv")
    (tmp_path / "home").mkdir()
    env = {**sandbox_env, "HOME": str(tmp_path / "home"), "VIRTUAL_ENV": str(target.root)}
    done = Gate(tmp_path / "real", installer_path=f"{target.bin}:/usr/bin:/bin")(
        "--", "pip", "install", "alpha", env=env
    )
    assert done.returncode == 0 and {"alpha", "beta"} <= target.installed(), done.stderr
    decisions = app.audit.decisions("acme")["decisions"]
    assert {d.get("request") for d in decisions} == {None, "page", "metadata", "download"}  # None: /evaluate's
    assert {(d["context"]["actor"], d["context"]["sandbox"]) for d in decisions} == {("agent-7", "sbx-7")}


# An installer that fetches what it is told from the index with the run's token, then exits 0:
# like a resolver that got around a denial, or an optional dependency it did without.
FETCHING_PIP = """#!{python}
import base64, os, sys, urllib.error, urllib.parse, urllib.request
index = urllib.parse.urlsplit(os.environ["PIP_INDEX_URL"])
auth = base64.b64encode(urllib.parse.unquote(index.netloc.rpartition("@")[0]).encode()).decode()
base = index._replace(netloc=index.netloc.rpartition("@")[2]).geturl()
basic = {{"Authorization": "Basic " + auth}}
for project in os.environ["FETCH"].split():
    try:
        urllib.request.urlopen(urllib.request.Request(base + project + "/", headers=basic))
    except urllib.error.HTTPError:
        pass
if os.environ.get("KEEP_INDEX"):  # something the install leaves behind takes the run's token
    open(os.environ["KEEP_INDEX"], "w").write(os.environ["PIP_INDEX_URL"])
if os.environ.get("THEN_REVOKE"):  # the gate's own token, revoked while the installer runs
    owner = {{"Authorization": "Bearer " + os.environ["OWNER"]}}
    urllib.request.urlopen(urllib.request.Request(os.environ["THEN_REVOKE"], method="DELETE", headers=owner))
sys.exit(0)
"""


@pytest.fixture
def fetching_pip(gate):
    (gate.programs / "pip").write_text(FETCHING_PIP.format(python=sys.executable))
    return gate


def test_a_denial_during_the_install_exits_3_with_every_denial_even_when_the_installer_exits_0(
    fetching_pip, sandbox_env, app
):
    app.save_policy("acme", {"python": {"mode": "allowlist", "allow": ["alpha", "pandas"]}}, by="x")
    done = fetching_pip("--", "pip", "install", "pandas", env={**sandbox_env, "FETCH": "beta alpha gamma"})
    assert done.returncode == 3, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("runcode-policy-gate: denied:")]
    assert len(lines) == 1 and "denied: beta (python) \u2014 not-on-the-allow-list: beta is not on" in lines[0]
    assert 'runcode-policy-gate request python beta --why "..."' in lines[0]  # how to ask for it
    assert "refused this run 2 more fetch(es) (run-failed)" in done.stderr  # alpha, gamma: the run had failed
    assert "(the installer exited 0); exit status 3" in done.stderr


def test_a_name_a_deny_pattern_denies_is_not_offered_a_request_that_could_never_be_approved(
    fetching_pip, sandbox_env, app
):
    app.save_policy("acme", {"python": {"deny": ["beta-*"]}}, by="x")
    done = fetching_pip("--", "pip", "install", "pandas", env={**sandbox_env, "FETCH": "beta-x"})
    assert done.returncode == 3, done.stderr
    assert "beta-x is denied by the Python deny pattern beta-* of workspace acme" in done.stderr
    assert "runcode-policy-gate request" not in done.stderr and "to ask for it" not in done.stderr


def test_an_install_whose_run_recorded_no_denial_keeps_the_installers_status(fetching_pip, sandbox_env, app):
    app.save_policy("acme", {"python": {"mode": "allowlist", "allow": ["alpha", "pandas"]}}, by="x")
    done = fetching_pip("--", "pip", "install", "pandas", env={**sandbox_env, "FETCH": "alpha"})
    assert done.returncode == 0 and "denied" not in done.stderr, done.stderr


def test_the_runs_token_reads_the_index_no_more_once_the_install_is_over(
    fetching_pip, sandbox_env, app, live, tmp_path
):
    app.save_policy("acme", {"python": {"mode": "allowlist", "allow": ["alpha", "pandas"]}}, by="x")
    kept = tmp_path / "kept-index-url"
    done = fetching_pip(
        "--", "pip", "install", "pandas", env={**sandbox_env, "FETCH": "alpha", "KEEP_INDEX": str(kept)}
    )
    assert done.returncode == 0 and "could not be ended" not in done.stderr, done.stderr
    assert app.audit.decisions("acme")["decisions"][0]["name"] == "alpha"  # the token read the index during the install
    index = urllib.parse.urlsplit(kept.read_text())
    credentials = base64.b64encode(urllib.parse.unquote(index.netloc.rpartition("@")[0]).encode()).decode()
    reply = live.call("GET", index.path + "alpha/", headers={"Authorization": "Basic " + credentials})
    assert reply.status == 403 and b"a valid token is required" in reply.body, (
        reply.status,
        reply.body,
    )  # as pip expects


def test_when_the_runs_decisions_cannot_be_read_after_the_install_the_gate_fails_closed(
    fetching_pip, sandbox_env, app, live
):
    issued = app.issue_token("acme", "revoked-mid-install", "sandbox", by="founder")
    env = {
        **sandbox_env,
        "RUNCODE_POLICY_TOKEN": issued["token"],
        "FETCH": "alpha",
        "THEN_REVOKE": f"{live.url}/api/v1/workspaces/acme/tokens/{issued['id']}",
        "OWNER": live.tokens["owner"],
    }
    done = fetching_pip("--", "pip", "install", "pandas", env=env)
    assert done.returncode == 4, done.stderr
    assert "the installer exited 0, but this run's decisions cannot be read: HTTP 401" in done.stderr
    assert "cannot be verified (fail closed); exit status 4" in done.stderr


@pytest.mark.parametrize("variable", ["RUNCODE_POLICY_URL", "RUNCODE_POLICY_TOKEN"])
def test_missing_configuration_fails_closed_with_exit_4(gate, variable):
    env = {k: v for k, v in {**OFFLINE, "RUNCODE_POLICY_URL": "http://127.0.0.1:9"}.items() if k != variable}
    done = gate("--", "pip", "install", "pandas", env=env)
    assert done.returncode == 4 and gate.ran() is None and f"{variable} not set" in done.stderr


@pytest.mark.parametrize(
    "status,body,says",
    [
        (
            503,
            b'{"title": "Store unavailable", "status": 503, "detail": "decisions cannot be recorded"}',
            "HTTP 503 Store unavailable: decisions cannot be recorded",
        ),
        (500, b"<html>oops</html>", "HTTP 500"),
        (200, b"<html>a captive portal</html>", "not JSON"),
        (200, b'{"allowed": "yes"}', "shape"),
        (200, b'{"allowed": true, "decisions": [{"spec": "pandas", "allowed": false}]}', "denied: pandas"),
    ],
    ids=["503", "500-html", "not-json", "wrong-shape", "self-contradicting"],
)
def test_an_answer_that_is_not_a_clear_allow_never_runs_the_command(gate, status, body, says):
    with canned_service(status, body) as url:
        done = gate("--", "pip", "install", "pandas", env={**OFFLINE, "RUNCODE_POLICY_URL": url})
    assert done.returncode in (3, 4) and gate.ran() is None
    assert says in done.stderr, done.stderr


def test_a_redirect_is_not_followed_so_the_token_goes_nowhere_else(gate):
    with canned_service(200, b"{}") as elsewhere, canned_service(302, b"", location=elsewhere) as url:
        done = gate("--", "pip", "install", "pandas", env={**OFFLINE, "RUNCODE_POLICY_URL": url})
        assert done.returncode == 4 and elsewhere.requests == [] and gate.ran() is None
    assert "HTTP 302" in done.stderr


def test_without_a_command_the_gate_prints_usage_and_exits_2(gate):
    assert gate(env={}).returncode == 2
    assert gate("--", env={}).returncode == 2


def test_help_documents_every_exit_status(gate):
    done = gate("--help", env={})
    assert done.returncode == 0
    for status in ("2 ", "3 ", "4 ", "126, 127"):
        assert f"\n  {status}" in done.stdout
    assert "refuses to parse" in done.stdout  # 2: a command the service will not parse
    assert "package index refused the installer a package" in done.stdout  # 3: a denial during the install
    assert "decisions could not be read after the installer ran" in done.stdout  # 4: fail closed after it


@pytest.mark.parametrize("module", sorted(GATE.rglob("*.py")), ids=lambda path: str(path.relative_to(GATE)))
def test_the_gate_imports_only_the_standard_library_and_itself(module):
    tree = ast.parse(module.read_text())
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0
    }
    for node in ast.walk(tree):  # a relative import names a module of the gate's own folder
        if isinstance(node, ast.ImportFrom) and node.level:
            package = module.parent
            for _ in range(node.level - 1):
                package = package.parent
            target = package.joinpath(*(node.module or "").split(".")) if node.module else package
            assert GATE in (target, *target.parents), ast.unparse(node)
            assert target.with_suffix(".py").is_file() or (target / "__init__.py").is_file(), ast.unparse(node)
    assert imported <= sys.stdlib_module_names, imported - sys.stdlib_module_names


class canned_service:
    """A stand-in HTTP server on loopback that gives every request the same reply."""

    def __init__(self, status: int, body: bytes, location: str | None = None):
        outer = self
        self.requests: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                outer.requests.append(self.path)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def __enter__(self):
        serve_in_background(self._server)
        return CannedURL(f"http://127.0.0.1:{self._server.server_port}", self.requests)

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


class CannedURL(str):
    def __new__(cls, url: str, requests: list):
        made = super().__new__(cls, url)
        made.requests = requests
        return made


HIDDEN = {
    "allowed": False,
    "name": "beta",
    "language": "python",
    "reason": "direct-reference",
    "declared_by": "alpha==1.1",
    "message": "alpha==1.1 is not offered because of a dependency it declares: beta @ http://host/beta.whl",
}


def test_a_hidden_version_is_said_but_is_no_denial_of_the_install():
    from interface.gate import report_run

    body = json.dumps({"run": {}, "allowed": False, "decisions": [HIDDEN]}).encode()
    with canned_service(200, body) as url:
        config = {"base": url, "token": "rcp_x", "timeout": 5.0}
        assert report_run(config, "r-1", 0) == 0
        assert report_run(config, "r-1", 1) == 1  # the installer's own failure stands, not a denial's 3


def test_a_project_denial_beside_a_hidden_version_is_still_exit_3():
    from interface.gate import report_run

    denied = {**HIDDEN, "declared_by": None, "reason": "not-on-the-allow-list", "message": "beta is not allowed"}
    body = json.dumps({"run": {}, "allowed": False, "decisions": [HIDDEN, denied]}).encode()
    with canned_service(200, body) as url:
        assert report_run({"base": url, "token": "rcp_x", "timeout": 5.0}, "r-1", 0) == 3


def test_many_hidden_versions_are_said_a_few_and_counted_and_a_cut_list_is_said(capsys):
    """A reviewer's: the gate printed a `hidden:` line for each of 10,000 refusals. A few are said,
    the rest counted, and so is a list the service cut; the gate asks for a bounded few."""
    from interface.gate import REFUSALS_SHOWN, report_run
    from interface.gate.service import RUN_DECISIONS_READ

    hidden = [{**HIDDEN, "declared_by": f"alpha=={i}"} for i in range(REFUSALS_SHOWN + 7)]
    body = json.dumps({"run": {}, "allowed": False, "decisions": hidden, "truncated": True}).encode()
    with canned_service(200, body) as url:
        assert report_run({"base": url, "token": "rcp_x", "timeout": 5.0}, "r-1", 1) == 1
    assert url.requests == [f"/runs/r-1/decisions?limit={RUN_DECISIONS_READ}"]
    said = capsys.readouterr().err.splitlines()
    one = f"runcode-policy-gate: hidden: beta (python) \u2014 {HIDDEN['reason']}: {HIDDEN['message']}"
    assert said[:-1] == [one] * REFUSALS_SHOWN
    counted = "and 7 more such refusal(s) (and more the gate did not read)"
    assert said[-1] == f"runcode-policy-gate: {counted}: {url}/runs/r-1/decisions lists them"


@pytest.mark.parametrize("reason", ["known-malware", "not-found-upstream"])
def test_a_refusal_that_denies_no_project_is_said_but_keeps_the_installers_status(reason):
    from interface.gate import report_run

    refusal = {**HIDDEN, "declared_by": None, "reason": reason, "message": "not this one"}
    body = json.dumps({"run": {}, "allowed": False, "decisions": [refusal]}).encode()
    with canned_service(200, body) as url:
        assert report_run({"base": url, "token": "rcp_x", "timeout": 5.0}, "r-1", 0) == 0
