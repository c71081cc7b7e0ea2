"""Requirement files read the way pip reads them, so the service can judge every line.

pip joins lines ending in a backslash, drops ` #` comments and blank lines, and follows nested
`-r`/`-c` files relative to the file that names them. The gate does the same (to a bounded
depth) and hands the service the remaining lines: it judges options such as `--index-url`,
`--extra-index-url`, `-f` and URL requirements there. A `${VAR}` is refused: pip would expand
it from an environment the gate does not know.

Where the clients that read these files (pip, pip-compile, uv) read one differently, the file is
refused rather than read one client's way: a line with a `#` that ends in a backslash (pip joins
the next line to a trailing comment, uv ends the comment at the newline), a line separator other
than `\n` or `\r\n` (pip's splitlines breaks lines at U+2028, form feeds, ..., uv does not), a
coding declaration other than UTF-8 (pip decodes by it, uv does not). So is a file the gate
cannot read as requirements: a URL (pip fetches it), a `.py` script (uv reads its inline
metadata), a `pylock.toml` (uv installs its file URLs as written, asking no index).

Standard library only, like the whole gate.
"""

from __future__ import annotations

import codecs
import os
import re
import shlex

from ...files import read_regular
from ...installers import Usage
from ...service import CannotVerify

MAX_DEPTH = 10  # nested -r/-c files; pip has no limit, a deeper chain is refused
MAX_LINES = 5000  # every file read for one command, together
COMMENT = re.compile(r"(^|\s+)#.*$")  # pip's req_file.COMMENT_RE: '#' after blanks only
# The options that name another file: short forms, long forms (pip's and uv's spellings).
NESTED = {"-r": "-r", "--requirement": "-r", "--requirements": "-r", "-c": "-c", "--constraint": "-c"}
NESTED.update({"--constraints": "-c", "--override": "-c", "--overrides": "-c"})
NESTED.update({"-b": "-c", "--build-constraint": "-c", "--build-constraints": "-c"})
# pip's req_file.BOMS, in its order (UTF-16-LE's BOM begins UTF-32-LE's): decoded by them.
BOMS = [(codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF32, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32-be")]
BOMS += [(codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF16, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16-be")]
BOMS += [(codecs.BOM_UTF16_LE, "utf-16-le")]
CODING = re.compile(rb"coding[:=]\s*([-\w.]+)")  # pip's PEP263_ENCODING_RE, on a first or second '#' line
# Where str.splitlines (pip) breaks a line and uv does not ('\r' alone both do).
SEPARATORS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")  # a scheme (two letters at least: not a drive)
UNCLEAR_IN_PATHS = "#'\"\\"  # uv ends a file's name at `#`; quotes and backslashes are shlex's (pip's) alone
HASH_VALUE = re.compile(r"[A-Za-z0-9]+:[0-9A-Fa-f]+\Z")  # a hash as pip writes it, nothing uv could read otherwise
PYLOCK = re.compile(r"pylock(\.[^.]+)?\.toml\Z", re.IGNORECASE)  # PEP 751's names


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


def lines_of(path: str, cwd: str, depth: int = 0, seen: list | None = None, named_by: str = "") -> list[str]:
    """Every line pip would read from the file at `path` (relative to `cwd`), nested files
    expanded in place; `named_by` says where the path was given (a file's line)."""
    seen = [] if seen is None else seen
    if depth > MAX_DEPTH:
        raise CannotVerify(f"requirement files nested more than {MAX_DEPTH} deep at {path!r}")
    check_readable(path, named_by or "the command line")
    full = os.path.join(cwd, path)  # as pip joins it: `link/..` is the kernel's to resolve, not normpath's
    lines = []
    for number, line in logical_lines(decoded(full), full):
        check_after_requirement(line, f"{full} line {number}")
        words = option_words(line, full)
        used, nested = nested_file(words[0], words[1] if len(words) > 1 else None) if words else (0, None)
        if nested is not None:
            lines += lines_of(nested, os.path.dirname(full), depth + 1, seen, f"{full} line {number}")
        else:
            lines.append(line)
        seen.append(line)
        if len(seen) > MAX_LINES:
            raise CannotVerify(f"more than {MAX_LINES} requirement lines in {full!r} and the files it names")
    return lines


def check_after_requirement(line: str, where: str) -> None:
    """Refuse a requirement line with anything but hashes after its requirement. pip applies
    --hash (and --config-settings) there and ignores the other options and words, which is how
    the service reads the line; uv applies them all: `alpha --hash=sha256:00 --extra-index-url
    URL` installed a denied project from URL, a second requirement or `-e x` there is installed
    too. Each word must be a plain `--hash=ALGORITHM:HEX` (or `--hash` and its value): quotes, a
    backslash or anything glued on are read one way by pip's shlex and another by uv, which ends
    a hash at the first blank (`--hash=sha256:0\\ --extra-index-url=URL` was a hash to one, an
    index to the other)."""
    if line.startswith("-"):
        return
    tokens = line.split(" ")  # pip's break_args_options: the options start at the first `-` word
    first = next((i for i, token in enumerate(tokens) if token.startswith("-")), None)
    if first is None:
        return
    words = " ".join(tokens[first:]).split()
    at = 0
    while at < len(words):
        if words[at] == "--hash" and at + 1 < len(words) and HASH_VALUE.match(words[at + 1]):
            at += 2
        elif words[at].startswith("--hash=") and HASH_VALUE.match(words[at][len("--hash=") :]):
            at += 1
        else:
            raise Usage(
                f"{where}: {words[at]!r} after the requirement {' '.join(tokens[:first])!r}: only --hash=ALGORITHM:HEX "
                "may follow a requirement (pip ignores most others there, uv applies them all); write each "
                "requirement and each option on a line of its own"
            )


def check_readable(path: str, named_by: str) -> None:
    """Refuse a file the gate would not read as the client does: a URL, a script, a pylock."""
    name = os.path.basename(path)
    if path == "-":
        why = "is standard input, which uv reads and the gate does not: give a file"
    elif any(c in path for c in UNCLEAR_IN_PATHS):
        why = f"holds one of {UNCLEAR_IN_PATHS!r}, where pip and uv end or unquote a file's name differently: rename it"
    elif URL.match(path):
        why = "is a URL, which pip would fetch or open itself: give a local path"
    elif name.lower().endswith((".py", ".pyw")):
        why = "is a Python script, whose inline metadata (PEP 723) uv installs: list its requirements in a file"
    elif PYLOCK.match(name):
        why = (
            "is a PEP 751 lock, whose file URLs uv installs as written, asking no index: the gate does not "
            "run it; install its packages by name from a requirements file (or `uv sync` a project)"
        )
    else:
        return
    raise CannotVerify(f"{named_by}: the requirement file {path!r} {why}")


def decoded(full: str) -> str:
    """The file's text as pip decodes it: by a BOM (dropped), else as UTF-8. A coding line that
    is not UTF-8 is refused: pip would decode by it, uv would not."""
    try:
        data = read_regular(full)
    except OSError as error:
        raise CannotVerify(f"cannot read the requirement file {full!r}: {error}") from None
    bom = next(((b, encoding) for b, encoding in BOMS if data.startswith(b)), None)
    try:
        if bom:
            return data[len(bom[0]) :].decode(bom[1])
        for number, line in enumerate(data.split(b"\n")[:2], 1):
            found = CODING.search(line) if line.startswith(b"#") else None
            if found and not is_utf8(found.group(1).decode("ascii")):
                raise CannotVerify(
                    f"{full} line {number} declares the encoding {found.group(1).decode('ascii')!r}: "
                    "pip would decode the file by it, other clients as UTF-8; save it as UTF-8 without that line"
                )
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CannotVerify(f"cannot read the requirement file {full!r}: {error}") from None


def is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name in ("utf-8", "ascii")
    except LookupError:
        return False


def option_words(line: str, where: str) -> list[str]:
    """An option line's words as pip reads them (shlex: `-r 'x.txt'` names x.txt); none for a
    requirement line. pip follows a -r or -c only on a line of its own: after a requirement it
    ignores one, uv follows it, and the service refuses the line (it must see it, not the file)."""
    if not line.startswith("-"):
        return []
    try:
        return shlex.split(line)
    except ValueError as error:
        raise CannotVerify(f"{where}: pip could not split the options of {line!r}: {error}") from None


def joined_lines(text: str, where: str) -> list[tuple[int, str]]:
    """(first line's number, line) as pip's req_file.join_lines makes them: a line ending in a
    backslash goes on in the next one. A line with a '#' that ends in a backslash is refused, and
    so is a line separator other than \\n and \\r\\n: pip and uv read them differently."""
    odd = SEPARATORS.search(text)
    if odd:
        raise CannotVerify(
            f"{where} line {text.count(chr(10), 0, odd.start()) + 1} holds the line separator "
            f"{odd.group()!r}: pip breaks the line there and uv does not; use plain line ends"
        )
    lines, pending, start = [], [], 1
    for number, raw in enumerate(text.splitlines(), 1):
        if raw.endswith("\\") and "#" in raw:
            raise CannotVerify(
                f"{where} line {number} ends a comment with a backslash ({raw!r}): pip joins the next "
                "line to the comment, uv reads it as a line of its own; remove the backslash"
            )
        if raw.endswith("\\"):
            pending.append(raw.strip("\\"))  # as pip strips it, both ends
        else:
            raw = " " + raw if COMMENT.match(raw) else raw  # pip's: a comment after a continuation stays one
            lines.append((start, "".join([*pending, raw])))
            pending, start = [], number + 1
    if pending:
        lines.append((start, "".join(pending)))
    return lines


def logical_lines(text: str, where: str) -> list[tuple[int, str]]:
    """pip's req_file.preprocess: join continuations, drop comments and blank lines."""
    lines = []
    for number, raw in joined_lines(text, where):
        line = COMMENT.sub("", raw).strip()
        if "${" in line:
            raise CannotVerify(
                f"{where} line {number} uses an environment variable ({line!r}): "
                "the gate cannot know the value pip would read; write it out"
            )
        if line:
            lines.append((number, line))
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
