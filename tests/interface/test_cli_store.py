"""Where the CLI finds its store: `--data-dir` / RUNCODE_POLICY_DATA_DIR, commands that read
never create one, and `serve` on a port already taken says so in one line. Real processes in a
temporary directory (the default store is relative to where the command runs)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RUNCODE_POLICY_")}
    clean["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "interface.cli", *args],
        cwd=cwd,
        env=clean | (env or {}),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "command",
    [
        ("token", "list"),
        ("policy", "show"),
        ("decisions", "export"),
        ("token", "create", "--role", "owner", "--name", "again"),
        ("policy", "add", "python", "allow", "pandas"),
    ],
)
def test_a_command_outside_a_store_names_the_store_it_looked_for_and_creates_none(tmp_path, command):
    done = run(tmp_path, *command)
    assert done.returncode == 1 and done.stdout == ""
    assert f"no store at {tmp_path}/var/runcode-policy.sqlite" in done.stderr
    assert "--data-dir" in done.stderr and "RUNCODE_POLICY_DATA_DIR" in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing was created, not even ./var


def test_an_empty_file_where_the_store_should_be_is_not_made_a_store_by_a_reading_command(tmp_path):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "runcode-policy.sqlite").touch()
    done = run(tmp_path, "policy", "show")
    assert done.returncode == 1 and f"no store at {tmp_path}/var/runcode-policy.sqlite" in done.stderr
    assert (tmp_path / "var" / "runcode-policy.sqlite").stat().st_size == 0


def test_the_data_dir_option_and_variable_name_the_same_store(tmp_path):
    created = run(tmp_path, "--data-dir", "store", "workspace", "create", "acme")
    assert created.returncode == 0, created.stderr
    assert (tmp_path / "store" / "runcode-policy.sqlite").exists() and not (tmp_path / "var").exists()
    listed = run(tmp_path, "token", "list", "-w", "acme", env={"RUNCODE_POLICY_DATA_DIR": str(tmp_path / "store")})
    assert listed.returncode == 0 and "owner" in listed.stdout
    missing = run(tmp_path, "--data-dir", "elsewhere", "token", "list", "-w", "acme")
    assert missing.returncode == 1 and f"no store at {tmp_path}/elsewhere/runcode-policy.sqlite" in missing.stderr


def test_serve_on_a_port_in_use_says_so_in_one_line_and_spends_no_token(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run(tmp_path, "serve", "--port", str(port))
    assert done.returncode == 1 and done.stdout == ""  # no owner token printed for a server that never ran
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"port {port}" in lines[0] and "PORT=" in lines[0], done.stderr
    served = run(tmp_path, "token", "list")  # nothing was made: the first real start will create `default`
    assert served.returncode == 1 and "no store at" in served.stderr


def start_serve(cwd: Path, port: int) -> tuple[subprocess.Popen, str]:
    """`serve` on a fixed port; (the process, the line it said last: "listening ..." once it does)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RUNCODE_POLICY_")}
    clean.pop("PROMETHEUS_MULTIPROC_DIR", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "interface.cli", "serve", "--port", str(port), "--workers", "1", "--threads", "2"],
        cwd=cwd,
        env=clean | {"PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = ""
    for line in process.stdout:  # the owner token on the first start, then "listening"
        if line.startswith("runcode-policy listening on "):
            break
    return process, line


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    process.wait(timeout=60)
    process.stdout.close()
    process.stderr.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_serve_starts_again_on_the_same_port_right_after_it_served_a_client(tmp_path):
    port = free_port()
    process, line = start_serve(tmp_path, port)
    try:
        assert line.startswith("runcode-policy listening on "), process.stderr.read()
        client = socket.create_connection(("127.0.0.1", port))  # kept alive: the server closes it on stop
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert client.recv(100).startswith(b"HTTP/1.1 200")
    finally:
        stop(process)
    client.close()  # the server closed first: its side of the connection is in TIME_WAIT now
    again, line = start_serve(tmp_path, port)
    try:
        assert line.startswith("runcode-policy listening on "), again.stderr.read()
    finally:
        stop(again)


def test_serve_says_listening_only_once_the_port_accepts_connections(tmp_path):
    process, line = start_serve(tmp_path, free_port())
    try:
        assert line.startswith("runcode-policy listening on "), process.stderr.read()
        url = line.split()[3]
        host, _, port = url.removeprefix("http://").rpartition(":")
        socket.create_connection((host, int(port)), timeout=5).close()  # at once: no retry, no wait
    finally:
        stop(process)


@pytest.mark.postgres
def test_a_postgres_database_that_does_not_exist_is_named_as_such(tmp_path, postgres_database):
    missing = postgres_database.rsplit("/", 1)[0] + "/runcode_policy_no_such_database"
    done = run(tmp_path, "serve", "--port", "0", env={"RUNCODE_POLICY_DATABASE_URL": missing})
    assert done.returncode == 1
    assert 'database "runcode_policy_no_such_database" does not exist' in done.stderr, done.stderr


@pytest.mark.postgres
def test_verifying_a_postgres_store_without_tables_says_so_in_one_line(tmp_path, postgres_schema_url):
    """It opens the store as found (no tables made): the relation missing was a traceback."""
    done = run(tmp_path, "audit", "verify", "-w", "acme", env={"RUNCODE_POLICY_DATABASE_URL": postgres_schema_url})
    assert done.returncode == 1
    [said] = done.stderr.splitlines()
    assert said.startswith("Error: the store (PostgreSQL database ") and said.endswith(
        ") is reachable but has no runcode-policy tables: nothing was ever recorded there; point at the store to check"
    ), said
