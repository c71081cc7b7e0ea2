"""Requirement files read the way pip reads them, so the service can judge every line.

pip joins lines ending in a backslash, drops ` #` comments and blank lines, and follows nested
`-r`/`-c` files relative to the file that names them. The gate does the same (to a bounded
depth) and hands the service the remaining lines: it judges options such as `--index-url`,
`--extra-index-url`, `-f` and URL requirements there. A `${VAR}` is refused: pip would expand
it from an environment the gate does not know.

Standard library only, like the whole gate.
"""

from __future__ import annotations

import os
import re
import shlex

from ...service import CannotVerify

MAX_DEPTH = 10  # nested -r/-c files; pip has no limit, a deeper chain is refused
MAX_LINES = 5000  # every file read for one command, together
COMMENT = re.compile(r"(^|\s+)#.*$")  # pip's req_file.COMMENT_RE: '#' after blanks only
# The options that name another file: short forms, long forms (pip's and uv's spellings).
NESTED = {"-r": "-r", "--requirement": "-r", "--requirements": "-r", "-c": "-c", "--constraint": "-c"}
NESTED.update({"--constraints": "-c", "--override": "-c", "--overrides": "-c"})
NESTED.update({"-b": "-c", "--build-constraint": "-c", "--build-constraints": "-c"})


def nested_file(token: str, following: str | None) -> tuple[int, str | None]:
    """(words used, file) when `token` names a requirement or constraint file, else (0, None).

    `-r X`, `-rX`, `--requirement X`, `--requirement=X`: anything spelled otherwise is left in
    the command, where the service judges it as an option (and refuses it)."""
    name, equals, value = token.partition("=")
    if name in NESTED and name.startswith("--"):
        return (1, value) if equals else ((2, following) if following is not None else (0, None))
    if token[:2] in NESTED and not token.startswith("--"):
        return (1, token[2:]) if len(token) > 2 else ((2, following) if following is not None else (0, None))
    return 0, None


def lines_of(path: str, cwd: str, depth: int = 0, seen: list | None = None) -> list[str]:
    """Every line pip would read from the file at `path` (relative to `cwd`), nested files
    expanded in place; a nested file given as a URL stays a line, for the service to refuse."""
    seen = [] if seen is None else seen
    if depth > MAX_DEPTH:
        raise CannotVerify(f"requirement files nested more than {MAX_DEPTH} deep at {path!r}")
    full = os.path.join(cwd, path)  # as pip joins it: `link/..` is the kernel's to resolve, not normpath's
    try:
        with open(full, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise CannotVerify(f"cannot read the requirement file {full!r}: {error}") from None
    lines = []
    for line in logical_lines(text, full):
        words = option_words(line, full)
        used, nested = nested_file(words[0], words[1] if len(words) > 1 else None) if words else (0, None)
        if nested is not None and "://" not in nested:
            lines += lines_of(nested, os.path.dirname(full), depth + 1, seen)
        else:
            lines.append(line)
        seen.append(line)
        if len(seen) > MAX_LINES:
            raise CannotVerify(f"more than {MAX_LINES} requirement lines in {full!r} and the files it names")
    return lines


def option_words(line: str, where: str) -> list[str]:
    """A line's options as pip reads them (req_file.break_args_options, then shlex): the words
    from the first one that starts with `-`, quotes undone (`-r 'x.txt'` names x.txt)."""
    tokens = line.split(" ")
    first = next((i for i, token in enumerate(tokens) if token.startswith("-")), len(tokens))
    try:
        return shlex.split(" ".join(tokens[first:]))
    except ValueError as error:
        raise CannotVerify(f"{where}: pip could not split the options of {line!r}: {error}") from None


def joined_lines(text: str) -> list[str]:
    """pip's req_file.join_lines: a line ending in a backslash goes on in the next one, unless it
    is a comment (then it ends there, and the next line is a line of its own)."""
    lines, pending = [], []
    for raw in text.splitlines():
        comment = COMMENT.match(raw) is not None
        if not raw.endswith("\\") or comment:
            raw = " " + raw if comment else raw
            lines.append("".join([*pending, raw]))
            pending = []
        else:
            pending.append(raw.strip("\\"))
    if pending:
        lines.append("".join(pending))
    return lines


def logical_lines(text: str, where: str) -> list[str]:
    """pip's req_file.preprocess: join continuations, drop comments and blank lines."""
    lines = []
    for number, raw in enumerate(joined_lines(text), 1):
        line = COMMENT.sub("", raw).strip()
        if "${" in line:
            raise CannotVerify(
                f"{where} line {number} uses an environment variable ({line!r}): "
                "the gate cannot know the value pip would read; write it out"
            )
        if line:
            lines.append(line)
    return lines


def split_files(args: list[str]) -> tuple[list[str], list[str]]:
    """(arguments without their requirement and constraint files, the files they named)."""
    rest, files, at = [], [], 0
    while at < len(args):
        used, found = nested_file(args[at], args[at + 1] if at + 1 < len(args) else None)
        if found is None:
            rest.append(args[at])
            at += 1
        else:
            files.append(found)
            at += used
    return rest, files
