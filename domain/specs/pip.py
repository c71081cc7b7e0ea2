"""pip requirement lines and arguments, classified without touching a disk.

Returns (kind, name, detail) triples; `domain.specs` wraps them in `Spec`. The order of checks
is pip's own (`req_file.break_args_options`, `constructors.parse_req_from_line` and
`parse_editable`), except where pip would look at the installer's filesystem: the gate cannot,
so anything shaped like a path is a path.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from urllib.parse import unquote, urlsplit

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from domain.specs import pip_options
from domain.specs.types import UNSAFE_CHARS, Parsed
from domain.text import quoted

# PEP 508 names, spelled out in ASCII: `str.lower()` and re.IGNORECASE would let KELVIN SIGN
# or a long s through as `k`/`s`, so nothing is lowercased before this matches.
NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")  # two letters at least: C:\\ is a drive
_EGG_RE = re.compile(r"[#&]egg=([^&]*)")
_BLANK_HASH = re.compile(r"\s#")  # where pip's req_file.COMMENT_RE, (^|\s+)#.*$, can begin
_EXTRAS_RE = re.compile(r"^(.+)(\[[^\]]+\])$", re.DOTALL)
# printable ASCII and tabs without quotes or backslashes: shlex splits them at blanks only
_PLAIN_WORDS = re.compile(r"[\t !#-&(-\[\]-~]*")
_PATH_SEPARATOR = re.compile(r"[/\\]")
ARCHIVES = (  # what pip reads as a local archive, wheel or sdist, when no URL
    ".whl",
    ".zip",
    ".tar",
    ".tar.gz",
    ".tgz",
    ".tar.bz2",
    ".tbz",
    ".tar.xz",
    ".txz",
    ".tlz",
    ".tar.lz",
    ".tar.lzma",
)
_VCS = {
    "git": ("http", "https", "ssh", "git", "file"),
    "hg": ("http", "https", "ssh", "file", "static-http"),
    "svn": ("http", "https", "ssh", "svn", "file"),
    "bzr": ("http", "https", "ssh", "sftp", "ftp", "lp", "file"),
}
URL_KINDS = {
    "http": "url",
    "https": "url",
    "ftp": "url",
    "file": "path",
    **{f"{vcs}+{scheme}": "vcs" for vcs, schemes in _VCS.items() for scheme in schemes},
}
_SOURCE = {
    "url": "a direct download that skips the index",
    "path": "a local file or directory",
    "vcs": "a version-control checkout that is built outside the index",
}


def canonical(name: str) -> str | None:
    """PEP 503 form of an ASCII PEP 508 name, or None when the name is not one.

    The project's one canonical form of a Python name: packaging's `canonicalize_name`, after an
    ASCII check of our own (its `validate` folds case, so it takes `ſ` or the Kelvin sign for
    ASCII letters). Names read from an upstream's pages are canonicalised by the same function."""
    if not NAME_RE.fullmatch(name):
        return None
    return canonicalize_name(name)


def one_line(error: Exception) -> str:
    """packaging's message without the diagram it draws under it (the text again, then `^` under
    the place): a refusal is read on one line (the console, a gate's stderr), so the place is
    quoted instead, as the text from there on."""
    said, *diagram = str(error).split("\n")
    if len(diagram) != 2:
        return said
    text, place = diagram[0][4:], diagram[1].find("^") - 4  # both lines are indented by 4
    return f"{said} (at the end)" if place >= len(text) else f"{said} (at {quoted(text[max(place, 0) :])})"


def _invalid(why: str) -> Parsed:
    return ("invalid", None, why)


def _sourced(kind: str, name: str | None) -> Parsed:
    if name is None:
        return (kind, None, f"{_SOURCE[kind]}; its name cannot be known before it is built")
    return (kind, name, f"{_SOURCE[kind]}; it calls itself '{name}', which pip checks only after download")


def _hygiene(text: str) -> str | None:
    bad = UNSAFE_CHARS.search(text)
    if bad:
        return f"contains the control character U+{ord(bad.group()):04X}"
    if "${" in text:
        return "contains '${': pip would expand an environment variable the gate cannot see"
    return None


def parse_line(text: str) -> Parsed:
    """One requirements-file line: a requirement with optional trailing options, or a line of
    options (`-e X`, `-i URL`, ...). pip drops a ' #' comment, then splits the line at the first
    space-separated token that starts with '-'."""
    bad = _hygiene(text)
    if bad:
        return _invalid(bad)
    line = drop_comment(text).strip()
    requirement, options = split_line(line)
    if not requirement and options:  # the line starts with an option
        return _option_line(line)
    parsed = _requirement_options(options, requirement)
    return parsed or _ascii_only(parse_requirement(requirement), text)


def split_line(line: str) -> tuple[str, str]:
    """A requirements line without its comment, as pip's break_args_options splits it: the
    requirement, and its options from the first space-separated token that starts with '-'."""
    tokens = line.split(" ")  # single spaces only
    cut = next((i for i, token in enumerate(tokens) if token.startswith("-")), len(tokens))
    return " ".join(tokens[:cut]), " ".join(tokens[cut:])


def drop_comment(line: str) -> str:
    """One line (no line break) without its comment, as pip's req_file.ignore_comments drops it:
    from a '#' that starts the line or follows a blank, with the blanks before it. Found by a
    two-character search: pip's regex tries every blank of a run and scans the rest of the run
    from each (0.1 s for a line of 4,000 spaces, seconds for a pasted list of them)."""
    if line.startswith("#"):
        return ""
    found = _BLANK_HASH.search(line)
    return line if found is None else line[: found.start()].rstrip()


def parse_argument(text: str) -> Parsed:
    """One `pip install` argv item: no option splitting, no comments, no line mechanics."""
    bad = _hygiene(text)
    return _invalid(bad) if bad else _ascii_only(parse_requirement(text), text)


def _ascii_only(parsed: Parsed, text: str) -> Parsed:
    # pip strips Unicode blanks (NBSP) and markers may quote any text; a registry verdict on
    # text that is not plain ASCII is one guess too many, so it fails closed.
    if parsed[0] == "registry" and not text.isascii():
        return _invalid("non-ASCII text in a registry spec; refusing to guess how pip reads it")
    return parsed


def _shlex(options: str) -> list[str] | None:
    if _PLAIN_WORDS.fullmatch(options):  # nothing shlex treats specially: its split is str.split's
        return options.split()
    try:
        return shlex.split(options)
    except ValueError:
        return None


def _option_line(line: str) -> Parsed:
    """A line starting with '-' is all options; pip silently ignores trailing words."""
    tokens = _shlex(line)
    if tokens is None:
        return _invalid("unbalanced quotes in an option line")

    options = [e for e in pip_options.scan(tokens, pip_options.PIP_CLI) if e.name != pip_options.ARG]
    errors = [e for e in options if e.name is None]
    if errors:
        return _invalid(f"pip cannot parse {errors[0].text!r}: {errors[0].value}")
    if len(options) == 1 and options[0].name == "--editable":
        return parse_editable(options[0].value)  # type: ignore[arg-type]  # --editable takes a value
    why = "; ".join(f"{e.text!r} {pip_options.PIP_CLI.reason(e.name) or 'is a pip option'}" for e in options)  # type: ignore[arg-type]
    return ("option", None, f"a pip option line, it names no package: {why}")


def _requirement_options(options: str, requirement: str) -> Parsed | None:
    """Options after a requirement: pip applies --hash and --config-settings, ignores other
    requirements-file options and rejects the rest. An -e among them makes pip read the
    requirement itself as the editable (`ParsedLine.requirement`). None when the requirement
    stands."""
    if not options:
        return None
    tokens = _shlex(options)
    if tokens is None:
        return _invalid("unbalanced quotes in the options of a requirement line")

    events = pip_options.scan(tokens, pip_options.PIP_REQUIREMENTS_FILE)
    for event in events:
        if event.name is None:
            return _invalid(f"pip cannot parse {event.text!r}: {event.value}")
        if event.name == "--config-settings":
            return ("option", None, f"{event.text!r} passes settings to the build backend")
    if any(event.name == "--editable" for event in events):
        return parse_editable(requirement)  # `requests -e x` installs ./requests if it exists
    return None


def parse_requirement(text: str) -> Parsed:
    """A requirement without options, as pip's `parse_req_from_line` reads it."""
    marker_sep = "; " if url_kind(text) else ";"
    name, sep, marker = text.partition(marker_sep)
    if sep and marker.strip():
        try:
            Marker(marker.strip())
        except InvalidMarker as exc:
            return _invalid(f"invalid environment marker: {one_line(exc)}")
    name = name.strip()
    if not name:
        return _invalid("empty spec")
    kind = url_kind(name)
    if kind is not None:
        return _classify_url(kind, name)
    return _path_or_pep508(name)


def url_kind(text: str) -> str | None:
    """What a text starting with a URL scheme pip fetches from names (url, path or vcs), else None."""
    scheme, colon, _ = text.partition(":")
    return URL_KINDS.get(scheme.lower()) if colon else None


def _classify_url(kind: str, url: str) -> Parsed:
    try:
        path = urlsplit(url).path
    except ValueError as exc:
        return _invalid(f"malformed URL: {exc}")
    filename = unquote(posixpath.basename(path.rstrip("/")))
    if filename.endswith(".whl"):
        return _wheel(kind, filename)
    egg = _EGG_RE.search(url)
    if egg is None:
        return _sourced(kind, None)
    name = canonical(egg.group(1))
    if name is None:  # pip >= 26 rejects it, pip <= 25 used a part of it: a name is no fact
        return (kind, None, f"{_SOURCE[kind]}; its #egg={egg.group(1)!r} is not a bare name")
    return _sourced(kind, name)


def _wheel(kind: str, filename: str) -> Parsed:
    try:
        parse_wheel_filename(filename)
    except ValueError as exc:
        return _invalid(f"not a valid wheel filename: {exc}")
    # parse_wheel_filename accepts Unicode names and lowercases them; pip then fails on the
    # requirement it builds, so only an ASCII name part counts.
    name = canonical(filename.split("-", 1)[0])
    if name is None:
        return _invalid(f"wheel filename {filename!r} does not hold a valid project name")
    return _sourced(kind, name)


def _looks_like_path(text: str) -> bool:
    return "/" in text or "\\" in text or text.startswith((".", "~"))


def _strip_extras(text: str) -> str:
    match = _EXTRAS_RE.match(text)
    return match.group(1).rstrip() if match else text


def _path_or_pep508(text: str) -> Parsed:
    bare = _strip_extras(text)
    local = _looks_like_path(text) or bare.lower().endswith(ARCHIVES)
    before_at, at, _ = text.partition("@")
    if local and not (at and not _looks_like_path(before_at)):
        return _local_path(bare)
    parsed = _pep508(text)
    if local and parsed[0] == "registry":
        # pip installs a local file or directory of this name if one exists on the installer
        return _sourced("path", None)
    return parsed


def _local_path(path: str) -> Parsed:
    filename = _PATH_SEPARATOR.split(path.rstrip("/\\"))[-1]
    if filename.endswith(".whl"):
        return _wheel("path", filename)
    return _sourced("path", None)


def _pep508(text: str) -> Parsed:
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        return _invalid(f"not a valid PEP 508 requirement: {one_line(exc)}")
    name = canonical(req.name)
    if name is None:
        return _invalid(f"{req.name!r} is not an ASCII PEP 508 name")
    if req.url is None:
        return ("registry", name, None)
    kind = URL_KINDS.get(req.url.partition(":")[0].lower()) if ":" in req.url else None
    if kind is None:  # `requests@2.0`: packaging takes '2.0' as a URL, pip fails on it
        return _invalid(
            f"'{req.name} @ {req.url}' is a direct reference without a URL scheme pip can fetch (for a version use ==)"
        )
    return _sourced(kind, name)


def parse_editable(value: str) -> Parsed:
    """The value of -e/--editable (pip `parse_editable`): a named URL, a VCS URL with a bare
    #egg= name, or a local project."""
    bad = _hygiene(value)
    if bad:
        return _invalid(bad)
    try:
        req = Requirement(value)
    except InvalidRequirement:
        req = None
    if req is not None and req.url:
        return _editable_url(req.url, canonical(req.name), named=True)
    bare = _strip_extras(value)
    if _looks_like_path(bare) and not _SCHEME_RE.match(bare):
        return _sourced("path", None)  # pip turns an existing directory into a file: URL
    url = value
    if not bare.lower().startswith("file:") and value.partition(":")[0].lower() in _VCS:
        url = f"{value.partition(':')[0]}+{value}"
    return _editable_url(bare if bare.lower().startswith("file:") else url, None, named=False)


def _editable_url(url: str, name: str | None, named: bool) -> Parsed:
    kind = URL_KINDS.get(url.partition(":")[0].lower()) if ":" in url else None
    if kind not in ("vcs", "path"):
        return _invalid("an editable must be a VCS URL or a local project")
    if not named:
        egg = _EGG_RE.search(url)
        name = canonical(egg.group(1)) if egg else None
        if egg and name is None:
            return _invalid(f"#egg={egg.group(1)!r} is not a bare project name")
    if kind == "vcs" and name is None:
        return _invalid("an editable VCS URL needs a name (#egg=name or 'name @ url')")
    return _sourced(kind, name)
