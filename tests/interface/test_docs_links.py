"""Every link between the README and docs/ lands: the file exists, and so does the heading an
anchor names (GitHub's slugs). A reader is never sent outside the repository for its own docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_of_the_page_lands(page):
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # http(s), mailto: not ours to check
            continue
        path, _, anchor = target.partition("#")
        landing = (page.parent / path).resolve() if path else page
        assert landing.exists(), f"{page.name}: {target}"
        assert ROOT in landing.parents or landing == ROOT, f"{page.name} sends the reader outside: {target}"
        if anchor and landing.suffix == ".md":
            assert anchor in anchors(landing), f"{page.name}: no heading for #{anchor} in {landing.name}"
