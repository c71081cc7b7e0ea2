"""The deployment's settings as `serve` reads them: yes/no settings take a documented set of words
and refuse anything else at start; a store whose tables are not made here is named as such."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from interface.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def serve(tmp_path: Path, **settings: str) -> subprocess.CompletedProcess:
    """`serve` as a process of this checkout's code, on its own data directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNCODE_POLICY_")}
    env |= {"PYTHONPATH": str(ROOT), "RUNCODE_POLICY_DATA_DIR": str(tmp_path / "data"), **settings}
    return subprocess.run(
        [sys.executable, "-m", "interface.cli", "serve", "--port", "0"], env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize("name", ["RUNCODE_POLICY_AUDIT_SEALING", "RUNCODE_POLICY_CREATE_TABLES"])
def test_yes_no_settings_take_the_documented_words_in_any_case(name):
    field = {"RUNCODE_POLICY_AUDIT_SEALING": "audit_sealing", "RUNCODE_POLICY_CREATE_TABLES": "create_tables"}[name]
    for word, meant in [("y", True), ("YES", True), ("True", True), ("1", True), ("n", False), ("No", False)]:
        assert getattr(Settings.from_env({name: word}), field) is meant, word
    for word in ("FALSE", "0", " n "):
        assert getattr(Settings.from_env({name: word}), field) is False, word
    assert getattr(Settings.from_env({name: ""}), field) is True  # blank: as unset, the default


@pytest.mark.parametrize(
    ("name", "word"), [("RUNCODE_POLICY_AUDIT_SEALING", "on"), ("RUNCODE_POLICY_CREATE_TABLES", "nope")]
)
def test_a_yes_no_setting_the_code_does_not_know_refuses_the_start_in_one_line(tmp_path, name, word):
    """`on` (or a typo) turned the audit sealer off without a word."""
    done = serve(tmp_path, **{name: word})
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"Error: {name} must be y/yes/true/1 or n/no/false/0 (any case), not {word!r}"]


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_store_without_tables_under_create_tables_n_is_named_so_not_unreachable(tmp_path, request, store):
    url = f"sqlite:///{tmp_path}/empty.sqlite" if store == "sqlite" else request.getfixturevalue("postgres_schema_url")
    done = serve(tmp_path, RUNCODE_POLICY_DATABASE_URL=url, RUNCODE_POLICY_CREATE_TABLES="n")
    assert done.returncode == 1, done.stderr
    [said] = done.stderr.splitlines()
    assert said.startswith("Error: the store (") and "not reachable" not in said, said
    assert said.endswith(
        ") is reachable but has no runcode-policy tables: they are not created because "
        "RUNCODE_POLICY_CREATE_TABLES=n; create them (start the service once without it) or unset it"
    ), said


def test_upstream_urls_that_do_not_parse_refuse_the_start_named_at_once_never_a_traceback(tmp_path):
    """`http://[::1` made urlsplit raise (`ValueError: Invalid IPv6 URL`), out of `serve` as a
    traceback; a URL's user and password are never repeated."""
    done = serve(
        tmp_path,
        RUNCODE_POLICY_PYPI_UPSTREAM="http://[::1",
        RUNCODE_POLICY_NPM_UPSTREAM="https://me:token@registry.example:npm/",
        RUNCODE_POLICY_UPSTREAM_PROXY="http://me:secret@[::1",
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "Error: invalid upstream settings (the service does not start):",
        "  RUNCODE_POLICY_PYPI_UPSTREAM: 'http://[::1' is not an http:// or https:// URL with a host, no query or "
        "fragment (https://pypi.org/simple/)",
        "  RUNCODE_POLICY_NPM_UPSTREAM: 'https://registry.example:npm/' is not an http:// or https:// URL with a "
        "host, no query or fragment (https://registry.npmjs.org/)",
        "  RUNCODE_POLICY_UPSTREAM_PROXY: 'http://[::1' is not an http:// or https:// proxy URL (http://proxy:3128)",
    ]
