"""Allow/deny list entries as an admin pastes them, turned into canonical package names and
patterns (`domain.patterns`)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from domain.errors import FieldError
from domain.limits import MAX_ERRORS, MAX_LIST_ENTRIES, MAX_TEXT
from domain.names import skeleton
from domain.patterns import is_pattern, parse_pattern
from domain.specs import parse
from domain.specs.pip import NAME_RE, drop_comment, split_line, url_kind
from domain.text import json_words, quoted

_LINES = re.compile(r"\r\n|\r|\n")  # what a form's textarea sends: not U+2028, VT or FF (str.splitlines)
# The other characters str.splitlines (so pip reading a file) ends a line at. A comment ends
# there too: `pandas # x\u2028evil` is no comment hiding `evil` but an entry holding U+2028,
# refused naming it, as is a `#` line holding one.
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_BREAK = re.compile(f"[{_OTHER_BREAKS}]")
_VERSION_OPERATOR = tuple("<>=!~")
_WHAT = {
    "url": "a url",
    "vcs": "a version-control source",
    "path": "a local path",
    "option": "an installer option",
    "alias": "an npm alias (it installs another package)",
}
_RULE = "a list entry must be the plain name of a registry package (or a pattern: Python 'name-*', Node '@scope/*')"
_NAMES_ONLY = "a rule's exempt and allow lists take names or patterns only, each standing for every version"


def parse_entries(
    language: str,
    value: object,
    field: str,
    names_only: bool = False,
) -> tuple[list[str], list[FieldError]]:
    """Canonical names (de-duplicated, first-seen order) and one error per bad entry.

    `value` is one string or a list of strings; either may hold several entries separated by
    newlines and/or commas. Blank lines and lines starting with '#' are skipped; for python a
    trailing ` # comment` is dropped as pip does. Every character of the input lands in an
    entry that is judged (`_split_commas`): no name typed is ever dropped unseen (an entry past
    MAX_TEXT is refused whatever it holds: it is kept only as its start and length). For python a
    comma fragment that starts with a version operator continues the entry before it
    (`pandas>=1,<2`), and commas inside closed [...], (...) or quotes do not split; node entries
    split at every comma. Versions, extras and markers are stripped through `specs.parse`; with
    `names_only` (a rule's exempt or allow names) they are refused, as dropping them would widen
    what the entry says to every version.

    Error fields are `f"{field}[{i}]"` where i counts the non-blank, non-comment entries from 0
    across the whole input: for a list holding one entry per element that is the list index;
    when an element holds several entries the count simply runs on through them.
    """
    if not isinstance(value, (str, list)):
        return [], [not_entries(value, field)]
    names: list[str] = []
    seen: set[str] = set()
    errors: list[FieldError] = []
    for index, entry in enumerate(split_entries(language, value)):
        if index == MAX_LIST_ENTRIES:  # as many as a list may hold, however they are pasted: judge no more
            errors.append(FieldError(field, f"a list may hold at most {MAX_LIST_ENTRIES} entries; this one holds more"))
            break
        name, problem = _judge(language, entry, names_only)
        if problem is not None:
            errors.append(FieldError(field=f"{field}[{index}]", message=problem))
            if len(errors) > MAX_ERRORS:  # a refusal names no more (domain.errors.named): judge no more
                break
        elif name is not None and name not in seen:
            seen.add(name)
            names.append(name)
    return names, errors


def not_entries(value: object, field: str) -> FieldError:
    """The error of a value (user JSON) that is neither shape a list is written in."""
    return FieldError(field, f"must be one string of entries or a list of them, not {json_words(value)}")


def split_entries(language: str, value: object) -> Iterator[object]:
    """The entries of a pasted list, one string each (other JSON values as they are), before judging."""
    chunks = value if isinstance(value, list) else [value]
    for chunk in chunks:
        if not isinstance(chunk, str):
            yield chunk  # user JSON: reported as an entry of its own
            continue
        for line in lines(chunk):
            line = line.strip()
            whole = _BREAK.search(line) is not None  # a line holding a break is judged whole
            if not line or (line.startswith("#") and not whole):
                continue
            if language == "python" and not whole:
                line = drop_comment(line)  # pip's rule: '#' starts a comment after a blank
            yield from _split_commas(language, line)


def lines(text: str) -> list[str]:
    """A pasted text's lines, as entries and the console's Test panel read them."""
    return _LINES.split(text)


def _split_commas(language: str, line: str) -> list[str]:
    """A line's comma-separated entries; every character of it is in one of them, so a name
    typed after an unclosed bracket or quote is judged rather than dropped.

    Node splits at every comma: no npm name holds one, while its old names may hold `(`, `)`
    and `'` (validate-npm-package-name's validForOldPackages), which are no brackets or quotes
    there. Python's commas inside [...] (extras), (...) (a version) or quotes
    (a marker's values) do not split; a bracket or quote still open at the end of the line
    protected nothing, so the commas after it split as any other (`pandas --hash=[x, evil`
    would otherwise be read as `pandas`, with `evil` inside an option's value).
    """
    if language != "python":
        return [_entry([f]) for f in (part.strip() for part in line.split(",")) if f]
    fragments: list[str] = []
    depth, quote, start = 0, None, 0
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[(":
            depth += 1
        elif char in "])":
            depth = max(depth - 1, 0)
        elif char == "," and depth == 0:
            fragments.append(line[start:i])
            start = i + 1
    rest = line[start:]
    fragments += rest.split(",") if depth or quote else [rest]
    return _join_specifiers([f.strip() for f in fragments])


def _join_specifiers(fragments: list[str]) -> list[str]:
    """The entries of a line's fragments: one starting with a version operator continues the
    entry before it. Each entry is joined once from its pieces (joined a fragment at a time, a
    1 MiB line of `,<1` was copied whole per fragment: 8 s before its refusal)."""
    pieces: list[list[str]] = []
    for fragment in fragments:
        if pieces and fragment.startswith(_VERSION_OPERATOR):
            pieces[-1].append(fragment)
        elif fragment:
            pieces.append([fragment])
    return [_entry(p) for p in pieces]


class _Cut(str):
    """The start of an entry longer than any list takes (its first MAX_TEXT + 1 characters: every
    length check refuses it) and its whole `length`, for the refusal to name."""

    length: int

    def __new__(cls, start: str, length: int) -> _Cut:
        cut = super().__new__(cls, start)
        cut.length = length
        return cut


def _entry(pieces: list[str]) -> str:
    """The pieces joined by commas, kept no further than MAX_TEXT + 1 characters (a `_Cut`): an
    entry past MAX_TEXT is refused whatever it holds, so the rest of it is only counted."""
    length = sum(map(len, pieces)) + len(pieces) - 1
    if length <= MAX_TEXT:
        return ",".join(pieces)
    kept, size = [], -1
    for piece in pieces:
        kept.append(piece)
        size += len(piece) + 1
        if size > MAX_TEXT:
            break
    return _Cut(",".join(kept)[: MAX_TEXT + 1], length)


def _judge(language: str, entry: object, names_only: bool) -> tuple[str | None, str | None]:
    """(canonical name, None) for a registry entry, else (None, a message naming the rule)."""
    if not isinstance(entry, str):
        return None, f"must be a string, not {json_words(entry)}; {_RULE}"
    if len(entry) > MAX_TEXT:  # the longest spec /evaluate and the index judge: no name past it is ever asked
        length = entry.length if isinstance(entry, _Cut) else len(entry)
        return None, f"{quoted(entry)} has {length} characters; a list entry may have at most {MAX_TEXT}"
    spec = parse(language, entry)
    named = language == "python" and spec.kind in ("registry", "option")  # a name, maybe with options after it
    requirement, options = split_line(drop_comment(entry).strip()) if named else ("", "")
    if requirement and options:  # pip drops words after an option: `pandas --hash=x evil` would be `pandas` alone
        return None, f"{quoted(entry)} is not a plain name: it carries installer options ({quoted(options)}); {_RULE}"
    if spec.kind == "registry" and spec.name is not None:  # its version may hold '*': `numpy==1.*`
        if names_only and not _bare(language, entry):
            return None, f"{quoted(entry)} is more than a name; {_NAMES_ONLY}"
        return spec.name, None
    if is_pattern(entry):
        return parse_pattern(language, entry)
    # a URL pip cannot fetch as written (`https://x/y.whl`, no wheel's name) is still a URL
    kind = url_kind(entry) if language == "python" and spec.kind == "invalid" else spec.kind
    if kind in _WHAT:
        return None, f"{quoted(entry)} is {_WHAT[kind]}, not a package name; {_RULE}"
    foreign = _not_ascii(entry)
    if language == "node" and _bare(language, entry):  # npm reads a bare word it cannot name as a tag
        return None, f"{quoted(entry)} is not a valid Node package name{foreign}; {_RULE}"
    return None, f"{quoted(entry)} is not a valid package name{foreign or f' ({spec.detail})'}; {_RULE}"


def _not_ascii(entry: str) -> str:
    """`: it holds 'е' (U+0435 CYRILLIC SMALL LETTER IE), a look-alike of 'e', at character 2, ...`
    for an entry that is not ASCII ('' for one that is): a look-alike is not seen, so it is named."""
    at, char = next(((i, c) for i, c in enumerate(entry) if not c.isascii()), (-1, ""))
    if not char:
        return ""
    looks = unicodedata.normalize("NFKC", char)  # fullwidth `ｒ` is `r`
    if not looks.isascii():  # the Latin letter a Cyrillic or Greek one is drawn like (domain.names)
        looks = skeleton(char).upper() if char.isupper() else skeleton(char)
    alike = f", a look-alike of {looks!r}," if looks.isascii() and looks.strip() else ""
    named = f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}"
    return f": it holds {char!r} ({named}){alike} at character {at + 1}, and names are ASCII only"


def _bare(language: str, entry: str) -> bool:
    """Whether a registry entry is its name alone (node: no `@` but a scope's)."""
    return NAME_RE.fullmatch(entry) is not None if language == "python" else entry.find("@", 1) < 0
