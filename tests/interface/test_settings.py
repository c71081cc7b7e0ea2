"""The deployment's settings as `serve` reads them: yes/no settings take a documented set of words
and refuse anything else at start."""

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
