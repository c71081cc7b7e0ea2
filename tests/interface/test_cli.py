"""The `runcode-policy` command line against a real store (SQLite file and PostgreSQL), and
`runcode-policy serve` run for real as a process."""

from __future__ import annotations

import contextlib
import csv
import getpass
import io
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from interface.cli import main
from interface.exports import CSV_COLUMNS
from tests.support.service import served

ME = f"cli:{getpass.getuser()}"


@pytest.fixture
def cli(database_url):
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(
            main, list(args), env={"RUNCODE_POLICY_DATABASE_URL": database_url}, catch_exceptions=False
        )

    return run


@pytest.fixture
def acme(cli) -> str:
    """Workspace `acme` made with the CLI; its owner token."""
    return cli("workspace", "create", "acme").stdout.strip()


# -- workspaces and tokens ---------------------------------------------------------------------
def test_workspace_create_prints_only_the_owner_token_and_it_authenticates(cli, open_app):
    done = cli("workspace", "create", "acme")
    assert done.exit_code == 0, done.output
    token = done.stdout.strip()
    assert done.stdout == token + "\n" and token.startswith("rcp_")
    assert 'created workspace "acme"' in done.stderr
    who = open_app().authenticate(token)
    assert (who["workspace"], who["role"]) == ("acme", "owner")


def test_creating_a_workspace_that_exists_fails_with_a_clear_message(cli, acme):
    done = cli("workspace", "create", "acme")
    assert done.exit_code == 1 and done.stdout == ""
    assert "workspace 'acme' already exists" in done.stderr


def test_a_bad_workspace_slug_is_refused_naming_the_rule(cli):
    done = cli("workspace", "create", "Not A Slug")
    assert done.exit_code == 1 and "invalid workspace slug" in done.stderr
    assert "workspace: must match [a-z0-9][a-z0-9-]{0,62}" in done.stderr


def test_tokens_are_issued_listed_and_revoked(cli, acme, open_app):
    issued = cli("token", "create", "--workspace", "acme", "--role", "sandbox", "--name", "ci-sandbox")
    assert issued.exit_code == 0, issued.output
    secret = issued.stdout.strip()
    assert issued.stdout == secret + "\n"
    gov = open_app()
    assert gov.authenticate(secret)["role"] == "sandbox"
    listed = json.loads(cli("token", "list", "--workspace", "acme", "--json").stdout)
    assert sorted((t["name"], t["role"], t["issued_by"]) for t in listed) == [
        ("ci-sandbox", "sandbox", ME),
        ("owner", "owner", ME),
    ]
    assert all(secret not in json.dumps(t) for t in listed)
    sandbox_id = next(t["id"] for t in listed if t["name"] == "ci-sandbox")
    revoked = cli("token", "revoke", "--workspace", "acme", sandbox_id)
    assert revoked.exit_code == 0 and revoked.stdout == ""
    assert gov.authenticate(secret) is None
    shown = cli("token", "list", "--workspace", "acme").stdout.splitlines()
    assert shown[0].split() == ["ID", "NAME", "ROLE", "ISSUED", "BY", "STATUS"]
    assert any(sandbox_id in line and "revoked" in line and ME in line for line in shown[1:])
    assert any("owner" in line and line.endswith("active") for line in shown[1:])


def test_revoking_an_unknown_token_is_refused(cli, acme):
    done = cli("token", "revoke", "--workspace", "acme", "00000000-0000-0000-0000-000000000000")
    assert done.exit_code == 1 and "no token" in done.stderr


def test_a_token_for_an_unknown_workspace_or_role_is_refused(cli, acme):
    nowhere = cli("token", "create", "--workspace", "nowhere", "--role", "admin", "--name", "x")
    assert nowhere.exit_code == 1 and "no workspace 'nowhere'" in nowhere.stderr and nowhere.stdout == ""
    bad_role = cli("token", "create", "--workspace", "acme", "--role", "god", "--name", "x")
    assert bad_role.exit_code == 2 and "'god' is not one of" in bad_role.stderr


# -- the policy --------------------------------------------------------------------------------
def test_policy_changes_from_the_cli_are_recorded_and_shown(cli):
    cli("workspace", "create", "default")  # --workspace defaults to `default`
    added = cli("policy", "add", "python", "allow", "pandas==2.1,numpy", "SciPy", "--note", "data team")
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout)["python"]["allow"] == ["numpy", "pandas", "scipy"]
    assert "policy version 3 (3 changes recorded)" in added.stderr
    before_switch = datetime.now(UTC)
    switched = json.loads(cli("policy", "switch-mode", "python", "allowlist").stdout)
    removed = json.loads(cli("policy", "remove", "python", "allow", "numpy").stdout)
    assert switched["python"]["mode"] == "allowlist" and removed["python"]["allow"] == ["pandas", "scipy"]
    shown = json.loads(cli("policy", "show").stdout)
    assert shown == removed and shown["version"] == 5 and shown["changed_by"] == ME
    past = json.loads(cli("policy", "show", "--at", before_switch.isoformat()).stdout)
    assert (past["version"], past["python"]["mode"]) == (3, "denylist") and past["at"].endswith("Z")
    assert past["python"]["allow"] == ["numpy", "pandas", "scipy"]


def test_policy_show_at_a_date_is_the_policy_at_that_days_first_instant(cli, acme):
    added = json.loads(cli("policy", "add", "-w", "acme", "node", "deny", "left-pad").stdout)
    today = date.fromisoformat(added["changed_at"][:10])  # the day the store stamped it with
    morning = json.loads(cli("policy", "show", "-w", "acme", "--at", today.isoformat()).stdout)
    assert (morning["version"], morning["at"]) == (0, f"{today.isoformat()}T00:00:00.000000Z")
    tomorrow = cli("policy", "show", "-w", "acme", "--at", (today + timedelta(days=1)).isoformat())
    assert tomorrow.exit_code == 1 and "must not be in the future" in tomorrow.stderr


def test_adding_a_present_entry_records_nothing(cli, acme):
    cli("policy", "add", "-w", "acme", "node", "deny", "left-pad")
    again = cli("policy", "add", "-w", "acme", "node", "deny", "left-pad")
    assert again.exit_code == 0 and "policy version 1 (no changes recorded)" in again.stderr


def test_bad_entries_are_refused_naming_each_entry_and_nothing_is_saved(cli, acme):
    done = cli("policy", "add", "-w", "acme", "python", "allow", "pandas", "https://evil.example/x.tgz", "../local")
    assert done.exit_code == 1 and done.stdout == ""
    assert "https://evil.example/x.tgz" in done.stderr and "../local" in done.stderr
    assert "changes[0].entries[1]" in done.stderr and "changes[0].entries[2]" in done.stderr
    assert json.loads(cli("policy", "show", "-w", "acme").stdout)["version"] == 0


def test_a_bad_language_mode_or_instant_is_refused(cli, acme):
    assert cli("policy", "switch-mode", "-w", "acme", "ruby", "allowlist").exit_code == 2
    assert cli("policy", "switch-mode", "-w", "acme", "python", "maybe").exit_code == 2
    late = cli("policy", "show", "-w", "acme", "--at", "yesterday")
    either = "must be an RFC 3339 timestamp with an offset, such as 2026-03-03T14:05:00Z, or a date such as 2026-03-03"
    assert late.exit_code == 1 and f"  at (--at): {either}" in late.stderr  # the option, and a date is taken too
    for option in ("--from", "--to"):
        bad = cli("decisions", "export", "-w", "acme", option, "last week")
        assert bad.exit_code == 1 and f"  {option[2:]} ({option}): {either}" in bad.stderr, bad.stderr
    guessed = cli("policy", "show", "-w", "acme", "--at", "2020-12-07T06:56:35+00:99")  # had been read as 05:17Z
    assert guessed.exit_code == 1 and "has an offset RFC 3339 does not allow" in guessed.stderr


# -- decisions ---------------------------------------------------------------------------------
@pytest.fixture
def decided(acme, open_app):
    """Three recorded decisions in `acme`: pandas allowed twice, numpy denied once."""
    gov = open_app()
    gov.change_policy(
        "acme", [{"action": "add", "language": "python", "list": "deny", "entries": ["numpy"]}], by="security"
    )
    context = {"sandbox": "sbx-1", "source": "run-code"}
    gov.evaluation.evaluate("acme", command=["pip", "install", "pandas", "numpy"], context=context)
    gov.evaluation.evaluate("acme", command=["pip", "install", "pandas==2.1"], context=context)
    return gov


def test_decisions_export_as_csv_streams_every_decision(cli, decided):
    done = cli("decisions", "export", "-w", "acme")
    assert done.exit_code == 0, done.output
    rows = list(csv.reader(io.StringIO(done.stdout)))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 4
    records = [dict(zip(CSV_COLUMNS, row, strict=True)) for row in rows[1:]]
    assert sorted((r["name"], r["allowed"]) for r in records) == [
        ("numpy", "false"),
        ("pandas", "true"),
        ("pandas", "true"),
    ]
    assert {r["sandbox"] for r in records} == {"sbx-1"}
    assert "exported 3 decisions" in done.stderr and "exporting decisions" not in done.stderr


def test_decisions_export_as_jsonl_to_a_file_newest_first(cli, decided, tmp_path):
    target = tmp_path / "out" / "decisions.jsonl"
    target.parent.mkdir()
    done = cli("decisions", "export", "-w", "acme", "--format", "jsonl", "--output", str(target))
    assert done.exit_code == 0 and done.stdout == ""
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(lines) == 3 and lines == decided.audit.decisions("acme")["decisions"]
    assert [d["at"] for d in lines] == sorted((d["at"] for d in lines), reverse=True)
    assert f"exported 3 decisions to {target}" in done.stderr


def test_decisions_export_honours_the_period(cli, decided):
    today = decided.audit.decisions("acme")["decisions"][-1]["at"][:10]  # the first decision's day, as stamped
    assert len(cli("decisions", "export", "-w", "acme", "--from", today).stdout.splitlines()) == 4
    future = cli("decisions", "export", "-w", "acme", "--from", "2999-01-01T00:00:00Z")
    assert future.exit_code == 0 and future.stdout.splitlines() == [",".join(CSV_COLUMNS)]
    bad = cli("decisions", "export", "-w", "acme", "--to", "soon")
    assert bad.exit_code == 1 and "to: 'soon'" in bad.stderr


def test_exporting_an_unknown_workspace_is_refused_and_writes_no_file(cli, acme, tmp_path):
    target = tmp_path / "decisions.csv"
    done = cli("decisions", "export", "-w", "nowhere", "--output", str(target))
    assert done.exit_code == 1 and "no workspace 'nowhere'" in done.stderr and not target.exists()


def test_an_unsupported_store_url_is_refused():
    done = CliRunner().invoke(main, ["token", "list"], env={"RUNCODE_POLICY_DATABASE_URL": "mysql://db/x"})
    assert done.exit_code == 1 and "unsupported database URL scheme 'mysql'" in done.stderr


# -- serve, for real ---------------------------------------------------------------------------
def test_serve_on_an_empty_store_prints_a_working_owner_token_once(database_url):
    env = {**os.environ, "RUNCODE_POLICY_DATABASE_URL": database_url}
    with served(env) as (url, said):
        token = next(line for line in said if line.startswith('owner token for workspace "default": '))
        token = token.rsplit(" ", 1)[1]
        assert get(url + "/api/v1/workspaces/default/policy", token)["version"] == 0
    with served(env) as (url, said):  # a restart finds the store in use: no new workspace, no token
        assert not any("owner token" in line for line in said)
        assert get(url + "/api/v1/workspaces/default/policy", token)["workspace"] == "default"


def get(url: str, token: str) -> dict:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())


def test_decisions_export_shows_its_progress_only_to_a_person_at_a_terminal(database_url, decided, tmp_path):
    import pty

    target = tmp_path / "decisions.csv"
    terminal, stderr = pty.openpty()
    done = subprocess.run(
        [sys.executable, "-m", "interface.cli", "decisions", "export", "-w", "acme", "--output", str(target)],
        cwd=None,  # the test's own directory (conftest), never the checkout
        stderr=stderr,
        timeout=60,
        env={**os.environ, "RUNCODE_POLICY_DATABASE_URL": database_url, "TERM": "xterm"},
    )
    os.close(stderr)
    shown = os.read(terminal, 65536).decode()
    os.close(terminal)
    assert done.returncode == 0 and len(target.read_text().splitlines()) == 4
    assert re.search(r"exporting decisions\s+\[#+\]\s+3\b", shown), shown  # rows written, as they go
    assert "exported 3 decisions" in shown


def _group_of(pid: str) -> int:
    """A process's group id (`/proc/<pid>/stat`, the field after its state)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])


def test_ctrl_c_at_the_terminal_stops_serve_and_its_workers_promptly(tmp_path):
    """Ctrl-C signals the terminal's whole process group. Workers that took it too could miss
    the parent's stop: `serve` then held the port until its 30 s kill timeout. A hang, not a
    speed: the bound is far above the 2 s a stop takes and far below the timeout."""
    import signal

    from tests.support.service import wait_until_healthy

    env = {**os.environ, "RUNCODE_POLICY_DATA_DIR": str(tmp_path / "var")}
    command = [sys.executable, "-m", "interface.cli", "serve", "--port", "0", "--workers", "2"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               start_new_session=True)  # fmt: skip
    try:
        line = next(x for x in process.stdout if x.startswith("runcode-policy listening on "))
        wait_until_healthy(line.split()[3])
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text()
        workers = [p for p in children.split() if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text()]
        assert len(workers) == 2
        # Both workers up: each has left the terminal's group (one answering /healthz says nothing
        # of the other, which under load was still starting when Ctrl-C came, and took it).
        deadline = time.monotonic() + 60
        while any(_group_of(w) == process.pid for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)  # as the terminal sends it
        assert process.wait(timeout=20) == 0
        assert not [w for w in workers if os.path.exists(f"/proc/{w}")]  # none left holding the port
    finally:  # the workers left the parent's process group: each is killed by its own id
        for pid in [process.pid, *locals().get("workers", [])]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        process.wait()
        process.stdout.close()
