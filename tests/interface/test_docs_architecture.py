"""The architecture page's tree is the code's: every package and module it names exists, and
every package and module of the three layers is named (a new module fails until it is placed)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("domain", "application", "interface")


def tree_lines() -> list[str]:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"```\n(domain/.*?)```", page, re.S)
    assert block, "the architecture page lost its tree"
    return block.group(1).splitlines()


def named() -> tuple[set[str], set[str]]:
    """(folders, modules) the tree names, as paths from the repository root."""
    folders, modules, stack = set(), set(), []
    for line in tree_lines():
        depth = (len(line) - len(line.lstrip())) // 2
        words = line.split()
        if words and words[0].endswith("/"):
            stack = [*stack[:depth], words[0].rstrip("/")]
            folders.add("/".join(stack))
            continue
        where = "/".join(stack[:depth])
        modules |= {f"{where}/{w}" for w in words if re.fullmatch(r"[\w]+\.py", w)}
    return folders, modules


def present() -> tuple[set[str], set[str]]:
    folders, modules = set(), set()
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            modules.add(relative)
            folders.add(path.parent.relative_to(ROOT).as_posix())
    return folders, modules


def test_the_tree_names_every_package_and_module_of_the_layers_and_nothing_else():
    (named_folders, named_modules), (folders, modules) = named(), present()
    assert folders - named_folders == set(), "packages missing from the tree"
    assert modules - named_modules == set(), "modules missing from the tree"
    assert {f for f in named_folders if f.split("/")[0] in LAYERS} - folders == set(), (
        "the tree names folders that are gone"
    )
    assert named_modules - modules == set(), "the tree names modules that are gone"
