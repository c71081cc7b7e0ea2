"""The docs' walk-through, run verbatim against a real service on a fresh store.

The commands are read from docs/walk-through.md itself (every ```sh block of the page), so the
page cannot drift from what the service answers. Only what a reader fills in is filled in: the
owner token `make run` printed and the port. Each `# → {...}` line under a command
shows what the reader will see; every `"key": value` it shows must appear in the answer to that
command (its own output, cut from the others' by a marker echoed between commands).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.pypi_upstream import Dist, PyPIUpstream
from tests.support.service import served

ROOT = Path(__file__).resolve().parents[2]
WALK_THROUGH = ROOT / "docs" / "walk-through.md"
SHOWN = re.compile(r'"(?P<key>[\w-]+)": (?P<value>"[^"]*"|true|false|null|-?\d+)')
# The tree the walk-through allows with its closure: httpx and what it needs (the real names and
# requirements, in small wheels).
HTTPX_TREE = (
    Dist("httpx", "0.28.1", requires=("anyio", "certifi", "httpcore==1.*", "idna")),
    Dist("httpcore", "1.0.9", requires=("certifi", "h11>=0.16")),
    Dist("anyio", "4.12.0", requires=("idna>=2.8",)),
    Dist("h11", "0.16.0"),
    Dist("idna", "3.11"),
    Dist("certifi", "2026.1.4"),
)
STUB = '#!/bin/sh\necho "(the $(basename "$0") first on PATH ran: $*)"\n'


def walk_through_blocks(page: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", page, re.S)


def commands(block: str) -> list[str]:
    """The block cut after each shown answer: every piece ends with the command its `# →` lines
    show the answer of (and any lines that only prepare it, which print nothing)."""
    pieces, current, showing = [], [], False
    for line in block.splitlines(keepends=True):
        comment = line.lstrip()
        shows = comment.startswith("# →") or (showing and comment.startswith("#   "))
        if showing and not shows:
            pieces.append("".join(current))
            current = []
        current.append(line)
        showing = shows
    return [*pieces, "".join(current)] if current else pieces


def shown_lines(command: str) -> list[str]:
    """The `# →` lines under a command and their `#   ` continuations."""
    lines, showing = [], False
    for line in command.splitlines():
        comment = line.lstrip()
        showing = comment.startswith("# →") or (showing and comment.startswith("#   "))
        if showing:
            lines.append(comment)
    return lines


def shown_pairs(command: str) -> list[tuple[str, object]]:
    """Every `"key": value` the command's `# →` lines promise."""
    return [(m["key"], json.loads(m["value"])) for line in shown_lines(command) for m in SHOWN.finditer(line)]


def shown_texts(command: str) -> list[str]:
    """What a `# → ...` line without JSON shows: plain output, verbatim."""
    comments = [line.split("# →", 1)[1].strip() for line in shown_lines(command) if line.startswith("# →")]
    return [text for text in comments if not SHOWN.search(text)]


def answered_pairs(output: str) -> set[tuple[str, str]]:
    """Every (key, JSON value) pair of every JSON document in the output (the whole output as one
    indented document, or one document a line), at any depth."""
    found: set[tuple[str, str]] = set()

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                found.add((key, json.dumps(item)))
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for document in (output, *output.splitlines()):  # one indented document, or one per line
        try:
            walk(json.loads(document))
        except ValueError:
            continue
    return found


def answers(answered: set[tuple[str, str]], key: str, value) -> bool:
    """The pair was answered; a shown text ending in `...` or `…` stands for any text it begins
    (so `"id": "…"` is any id)."""
    if isinstance(value, str) and value.endswith(("...", "…")):
        prefix = json.dumps(value.removesuffix("...").removesuffix("…"))[:-1]
        return any(k == key and v.startswith(prefix) for k, v in answered)
    return (key, json.dumps(value)) in answered


def test_every_walk_through_command_answers_as_the_docs_show(tmp_path):
    blocks = walk_through_blocks(WALK_THROUGH.read_text(encoding="utf-8"))
    assert len(blocks) >= 6, "the walk-through lost its examples"
    run_as_shown(blocks, tmp_path)


# Pages whose runnable blocks run after the walk-through, in this order, in the same shell (they use
# its RCP, auth, ADMIN, AUDITOR and SANDBOX). Every other ```sh block of docs/ is marked `sh norun`
# with the reason on its first line.
PAGES = (
    "egress.md",
    "threat-model.md",
    "requests.md",
    "package-index.md",
    "allowlist-patterns-and-synthesis.md",
    "audit-integrity.md",
    "rules.md",
    "index-rules.md",  # after rules.md: it changes the python rules rules.md shows
)
NORUN = re.compile(r"```sh norun\n(?P<first>[^\n]*)\n")


def test_every_runnable_block_of_the_docs_answers_as_it_shows(tmp_path):
    blocks = walk_through_blocks(WALK_THROUGH.read_text(encoding="utf-8"))
    for page in PAGES:
        found = walk_through_blocks((ROOT / "docs" / page).read_text(encoding="utf-8"))
        assert found, f"{page} has no runnable block: take it out of PAGES"
        blocks += found
    run_as_shown(blocks, tmp_path)


def test_every_shell_block_of_the_docs_is_run_or_says_why_not():
    pages = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")}
    pages["README.md"] = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, text in pages.items():
        for info in re.findall(r"^\s*```((?:sh|bash|shell|console|zsh)[^\n]*)$", text, re.M):
            assert info in ("sh", "sh norun"), f"{name}: a ```{info} block is neither run nor marked norun"
        for first in NORUN.finditer(text):
            assert first["first"].lstrip().startswith("# not run"), f"{name}: a norun block without its reason"
        runs = name in ("walk-through.md", "README.md", *PAGES)
        assert runs or not walk_through_blocks(text), f"{name} has ```sh blocks the suite does not run"


def test_the_readmes_tour_answers_as_it_shows(tmp_path):
    blocks = walk_through_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) == 1, "the tour's runnable block (the others are marked `sh norun`, with why)"
    run_as_shown(blocks, tmp_path)


def run_as_shown(blocks: list[str], tmp_path: Path) -> None:
    """Run the blocks in order in one shell against a fresh service; each shown output must appear."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for program in ("pip", "npm"):
        (stubs / program).write_text(STUB)
        (stubs / program).chmod(0o755)
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))  # the reader's `.venv/bin/...`
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNCODE_POLICY_")}
    upstream = PyPIUpstream(HTTPX_TREE)  # the walk-through's closure reads a real index: this one
    try:
        run_served(pieces_of(blocks), tmp_path, stubs, env, upstream)
    finally:
        upstream.close()


def pieces_of(blocks: list[str]) -> list[str]:
    return [command for block in blocks for command in commands(block)]


def run_served(pieces: list[str], tmp_path: Path, stubs: Path, env: dict, upstream) -> None:
    env_served = {**env, "RUNCODE_POLICY_PYPI_UPSTREAM": f"{upstream.url}/simple/"}
    with served(env_served, cwd=tmp_path) as (url, said):  # a fresh install: the store under ./var
        owner = next(line.rsplit(" ", 1)[1] for line in said if line.startswith("owner token for workspace"))
        # A marker on its own line before each command (a curl answer ends without a newline).
        marked = [f"printf '\\n@@command {i}@@\\n'\n{command}" for i, command in enumerate(pieces)]
        script = "set -euo pipefail\n" + "\n".join(marked)
        script = script.replace("http://127.0.0.1:8000", url).replace("OWNER=rcp_...", f"OWNER={owner}")
        shell = {**env, "PATH": f"{stubs}:{env['PATH']}"}
        done = subprocess.run(
            ["bash", "-c", script], cwd=tmp_path, env=shell, capture_output=True, text=True, timeout=900
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    outputs = re.split(r"\n@@command \d+@@\n", done.stdout)[1:]
    for command, output in zip(pieces, outputs, strict=True):
        answered = answered_pairs(output)
        for text in shown_texts(command):
            assert text in output.splitlines(), f"{text!r} not in the output of\n{command}\n{output}"
        for key, value in shown_pairs(command):
            assert answers(answered, key, value), f"{key}: {value!r} not in the answer to\n{command}\n{output}"
