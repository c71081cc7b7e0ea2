"""The Configuration page names every variable the service and the gate read, and no other."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READ = re.compile(r"""["'](RUNCODE_POLICY_[A-Z0-9_]+)["']""")


def variables_read(*folders: str) -> set[str]:
    found = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            found |= set(READ.findall(path.read_text(encoding="utf-8")))
    return found


def test_every_variable_the_code_reads_is_in_the_configuration_page_and_no_other():
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(RUNCODE_POLICY_[A-Z0-9_]+)`", page, re.M))
    read = variables_read("interface", "application", "domain")
    assert read - documented == set(), "read but not documented"
    assert documented - read == set(), "documented but read nowhere"
