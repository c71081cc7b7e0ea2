"""The project's code and docs say what they mean in place, or point to docs/: never to
documents a reader of the repository does not have (the contract files kept outside it) nor to
issue numbers of a tracker they cannot see."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("domain", "application", "interface", "bench", "tests", "docs")
SUFFIXES = {".py", ".md", ".html", ".txt", ".toml", ".cfg", ".json", ".jsonl", ".js", ".css", ".sh"}
SKIPPED = {"node_modules", "env", "__pycache__", ".venv"}
# Spelt in pieces so that this file does not cite them itself.
OUTSIDE = [name + ".md" for name in ("SPECS", "API", "EGRESS", "ARCHITECTURE")]
# The shared corpora's folder: the corpus test reads it when present, but no page sends a reader there.
SHARED = ".." + "/shared"
ISSUE = re.compile(r"\bissue\s+#?\d+\b", re.I)


def project_files() -> list[Path]:
    found = [ROOT / "README.md", ROOT / "pyproject.toml", ROOT / "Makefile"]
    for folder in FOLDERS:
        for top, dirs, names in os.walk(ROOT / folder):  # symlinked tool folders are not followed
            dirs[:] = [d for d in dirs if d not in SKIPPED]
            found += [Path(top, n) for n in names if Path(n).suffix in SUFFIXES or n == "run"]
    return sorted(p for p in found if p.is_file())


def citations(text: str, page: bool = False) -> list[str]:
    outside = [*OUTSIDE, SHARED] if page else OUTSIDE
    return [name for name in outside if name in text] + ISSUE.findall(text)


def test_the_scan_reaches_every_layer_and_the_docs():
    seen = {p.relative_to(ROOT).parts[0] for p in project_files()}
    assert set(FOLDERS) <= seen


def test_a_citation_is_caught():
    assert citations("see " + OUTSIDE[1] + ", section 2") == [OUTSIDE[1]]
    assert citations("fixed in Issue " + "#12.") == ["Issue " + "#12"]
    assert citations("beside " + SHARED, page=True) == [SHARED] and not citations("beside " + SHARED)
    assert citations("pallets/click#3221 and the issues of 2026") == []


def test_no_file_cites_documents_or_issues_a_reader_does_not_have():
    cited = {}
    for path in project_files():
        found = citations(path.read_text(encoding="utf-8", errors="replace"), page=path.suffix == ".md")
        if found:
            cited[str(path.relative_to(ROOT))] = found
    assert not cited, f"say it in place, or point to docs/: {cited}"
