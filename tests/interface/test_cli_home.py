"""Every Click command of the project is declared under interface/cli/, so a reader finds the
whole `runcode-policy` command in one folder, and nothing there is imported back lazily."""

from __future__ import annotations

import re
from pathlib import Path

import click

from interface.cli import main

ROOT = Path(__file__).resolve().parents[2]
DECLARES = re.compile(r"@(?:click|\w+)\.(?:command|group)\(")


def test_no_command_is_declared_outside_the_cli_folder():
    outside = [
        path.relative_to(ROOT).as_posix()
        for layer in ("domain", "application", "interface")
        for path in (ROOT / layer).rglob("*.py")
        if DECLARES.search(path.read_text(encoding="utf-8")) and "interface/cli" not in path.as_posix()
    ]
    assert outside == []


def test_every_command_reached_from_main_is_a_module_of_the_cli_folder():
    def commands(group: click.Group):
        for command in group.commands.values():
            yield command
            if isinstance(command, click.Group):
                yield from commands(command)

    homes = {command.callback.__module__ for command in commands(main) if command.callback}
    assert homes and all(home.startswith("interface.cli") for home in homes), homes
