"""node-semver 7.8's `valid` / `validRange`, ported: whether an npm spec is a version or range
(loose, as npm reads a spec), whether an admin's range is one (strict, as node-semver reads a range
by default), and the comparators a range stands for (`domain.specs.node_ranges` matches versions
against them)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from domain.specs.npm_hosts import JS_BLANK_CHARS

# node-semver 7.8, loose mode: a literal port of Range.parseRange with its "safe" regexes
# (\s* becomes \s{0,1}, digits and identifiers are bounded), because what survives its loose
# filter decides registry-or-EINVALIDTAGNAME. `[v=\s]*+` is possessive only for speed: what
# follows it never starts with v, = or a blank, so it matches exactly what node-semver matches.
_WS = f"[{re.escape(JS_BLANK_CHARS)}]"
_NUM = r"[0-9]{1,256}"
_STRICT_NUM = r"(?:0|[1-9][0-9]{0,256})"
_ID = r"[0-9]{0,256}[a-zA-Z-][a-zA-Z0-9-]{0,250}"
_PRE = rf"(?:-?((?:{_ID}|{_NUM})(?:\.(?:{_ID}|{_NUM}))*))"
_STRICT_PRE = rf"(?:-((?:{_ID}|{_STRICT_NUM})(?:\.(?:{_ID}|{_STRICT_NUM}))*))"
_BUILD = r"(?:\+([a-zA-Z0-9-]{1,250}(?:\.[a-zA-Z0-9-]{1,250})*))"
_V = f"[v={re.escape(JS_BLANK_CHARS)}]*+"
_LOOSE_PLAIN = rf"{_V}({_NUM})\.({_NUM})\.({_NUM}){_PRE}?{_BUILD}?"
_X_LOOSE = rf"{_V}({_NUM}|x|X|\*)(?:\.({_NUM}|x|X|\*)(?:\.({_NUM}|x|X|\*)(?:{_PRE})?{_BUILD}?)?)?"
_X_STRICT = (
    rf"{_V}({_STRICT_NUM}|x|X|\*)(?:\.({_STRICT_NUM}|x|X|\*)(?:\.({_STRICT_NUM}|x|X|\*)"
    rf"(?:{_STRICT_PRE})?{_BUILD}?)?)?"
)
_FULL_PLAIN = rf"v?({_STRICT_NUM})\.({_STRICT_NUM})\.({_STRICT_NUM}){_STRICT_PRE}?{_BUILD}?"
_GTLT = r"((?:<|>)?=?)"
_TRIM_COMPARATOR = re.compile(rf"({_WS}?){_GTLT}{_WS}?({_LOOSE_PLAIN}|{_X_STRICT})")
_TRIM_TILDE, _TRIM_CARET = re.compile(rf"({_WS}?)~>?{_WS}"), re.compile(rf"({_WS}?)\^{_WS}")


class _Grammar(NamedTuple):
    """The patterns node-semver picks by its `loose` option; the rest of its grammar is shared."""

    loose: bool
    version: re.Pattern[str]  # SemVer's LOOSE / FULL
    comparator: re.Pattern[str]  # COMPARATORLOOSE / COMPARATOR
    hyphen: re.Pattern[str]
    caret: re.Pattern[str]
    tilde: re.Pattern[str]
    xrange: re.Pattern[str]


def _grammar(loose: bool, version: str, xrange: str) -> _Grammar:
    return _Grammar(
        loose,
        re.compile(version),
        re.compile(rf"{_GTLT}{_WS}?({version})|"),
        re.compile(rf"{_WS}?({xrange}){_WS}-{_WS}({xrange}){_WS}?"),
        re.compile(rf"\^{xrange}"),
        re.compile(rf"~>?{xrange}"),
        re.compile(rf"{_GTLT}{_WS}?{xrange}"),
    )


_LOOSE, _STRICT = _grammar(True, _LOOSE_PLAIN, _X_LOOSE), _grammar(False, _FULL_PLAIN, _X_STRICT)
_STAR = re.compile(rf"(<|>)?=?{_WS}?\*")
_GTE0 = re.compile(rf"{_WS}?>={_WS}?0\.0\.0{_WS}?")
_BUILD_ANYWHERE = re.compile(r"\+[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)*")
_BLANKS = re.compile(f"{_WS}+")
_PREFIX_RUN = re.compile(_V)
_LONG_PREFIX_RUN = re.compile(f"[v={re.escape(JS_BLANK_CHARS)}]{{16}}")
_FIRST_BUILD = re.compile(_BUILD)
_MAX_SAFE = 2**53 - 1


class _Invalid(Exception):
    """Where node-semver throws (validRange/valid then return null)."""


def valid_version(text: str) -> bool:
    """semver.valid(text, loose=True): `new SemVer(text)` does not throw."""
    try:
        _semver(text, _LOOSE)
        return True
    except _Invalid:
        return False


def valid_range(text: str, loose: bool = True) -> bool:
    """semver.validRange(text, {loose}) is truthy: no `||` part throws and one keeps a
    comparator (loose: after the filter that drops what is not one; strict: every word of a part
    must desugar to a comparator, so `1.0.0 foo` or `>1 <` is no range)."""
    return comparator_sets(text, loose) is not None


def comparator_sets(text: str, loose: bool = True) -> list[list[str]] | None:
    """The desugared comparators of each `||` part (`^1.2` -> `>=1.2.0 <2.0.0-0`; `""` is any
    version), as node-semver's Range builds them; None when `valid_range` would say no."""
    grammar = _LOOSE if loose else _STRICT
    raw = _BLANKS.sub(" ", text.strip(JS_BLANK_CHARS))
    try:  # a list, not a generator: npm parses every part, and a later one may still throw
        sets = [_parse_range(part.strip(JS_BLANK_CHARS), grammar) for part in raw.split("||")]
    except _Invalid:
        return None
    kept = [s for s in sets if s]
    return kept or None


def _semver(version: str, grammar: _Grammar) -> None:
    match = grammar.version.fullmatch(version.strip(JS_BLANK_CHARS)) if len(version) <= 256 else None
    if match is None or any(int(n) > _MAX_SAFE for n in match.groups()[:3]):
        raise _Invalid(version)


def _parse_range(part: str, grammar: _Grammar) -> list[str]:
    part = _BUILD_ANYWHERE.sub("", part)
    hyphen = grammar.hyphen.fullmatch(part)
    part = _hyphen_replace(hyphen.groups()) if hyphen else part
    part = _trim_comparators(part)
    # callables, not r"\1~" templates: Python 3.11 re-parses a template on every call
    if "~" in part:
        part = _TRIM_TILDE.sub(lambda m: m.group(1) + "~", part)
    if "^" in part:
        part = _TRIM_CARET.sub(lambda m: m.group(1) + "^", part)
    part = " ".join(_parse_comparator(comp, grammar) for comp in part.split(" "))
    comps = [_gte0(comp.strip(JS_BLANK_CHARS)) for comp in _BLANKS.split(part)]
    kept = []
    for comp in comps:  # loose: drop what is no comparator; then new Comparator() must not throw
        match = grammar.comparator.fullmatch(comp)
        if match is None and grammar.loose:
            continue
        if match is None:
            raise _Invalid(comp)
        kept.append(comp)
        if version := match.group(2):
            _semver(version, grammar)
    return kept


def _trim_comparators(text: str) -> str:
    """COMPARATORTRIM's global replace (`> 1.2` to `>1.2`). A v/=/blank run that no version
    follows can only start a match at its last character (a blank before `<`), so the rest is
    skipped: long runs stay linear instead of quadratic. Without a long run, `sub` does the same
    leftmost, non-overlapping scan at C speed."""
    if _LONG_PREFIX_RUN.search(text) is None:
        return _TRIM_COMPARATOR.sub(_trimmed, text)
    out, pos, done = [], 0, 0
    while pos < len(text):
        run_end = _PREFIX_RUN.match(text, pos).end()  # type: ignore[union-attr]  # the run may be empty
        if run_end > pos + 1 and text[run_end : run_end + 1] not in tuple("0123456789xX*"):
            pos = run_end - 1
        match = _TRIM_COMPARATOR.match(text, pos)
        if match is None:
            pos += 1
            continue
        out += [text[done:pos], _trimmed(match)]
        pos = done = match.end()
    return "".join(out) + text[done:]


def _trimmed(match: re.Match[str]) -> str:
    return str(match.group(1) + match.group(2) + match.group(3))  # r"\1\2\3", all three always match


def _gte0(comp: str) -> str:
    return "" if _GTE0.fullmatch(comp) else comp


def _parse_comparator(comp: str, grammar: _Grammar) -> str:
    comp = _FIRST_BUILD.sub("", comp, count=1)
    pieces = _BLANKS.split(comp.strip(JS_BLANK_CHARS))
    # the caret and tilde passes split, replace and join; without their operator they would give
    # back the same pieces, so they are skipped
    if "^" in comp:
        pieces = _BLANKS.split(
            " ".join(_partial(grammar.caret, c, _caret_bounds) for c in pieces).strip(JS_BLANK_CHARS)
        )
    if "~" in comp:
        pieces = _BLANKS.split(" ".join(_partial(grammar.tilde, c, _tilde_bounds) for c in pieces))
    comp = " ".join(_xrange(c.strip(JS_BLANK_CHARS), grammar) for c in pieces)
    return _STAR.sub("", comp.strip(JS_BLANK_CHARS), count=1)


def _is_x(part: str | None) -> bool:
    return not part or part.lower() == "x" or part == "*"


def _inc(number: str) -> str:
    """`${+n + 1}` in JavaScript: a double, so 1e+21 and up come out in exponent form."""
    value = float(int(number)) + 1
    return str(int(value)) if value < 1e21 else repr(value)


def _hyphen_replace(groups: tuple[Any, ...]) -> str:
    start, f_major, f_minor, f_patch, f_pre, _, end, t_major, t_minor, t_patch, t_pre = groups[:11]
    if _is_x(f_major):
        start = ""
    elif _is_x(f_minor) or _is_x(f_patch):
        start = f">={f_major}.{'0' if _is_x(f_minor) else f_minor}.0"
    else:
        start = f">={start}"
    if _is_x(t_major):
        end = ""
    elif _is_x(t_minor):
        end = f"<{_inc(t_major)}.0.0-0"
    elif _is_x(t_patch):
        end = f"<{t_major}.{_inc(t_minor)}.0-0"
    else:
        end = f"<={t_major}.{t_minor}.{t_patch}-{t_pre}" if t_pre else f"<={end}"
    return f"{start} {end}".strip(JS_BLANK_CHARS)


def _partial(pattern: re.Pattern[str], comp: str, bounds: Callable[[str, str, str, str | None], str]) -> str:
    """node-semver's replaceCaret/replaceTilde share their first steps: no match leaves the
    comparator as is, `x` in major is "any", `x` in minor spans the major; `bounds` does the rest."""
    match = pattern.fullmatch(comp)
    if match is None:
        return comp
    major, minor, patch, pre = match.groups()[:4]
    if _is_x(major):
        return ""
    if _is_x(minor):
        return f">={major}.0.0 <{_inc(major)}.0.0-0"
    return bounds(major, minor, patch, pre)


def _caret_bounds(major: str, minor: str, patch: str, pre: str | None) -> str:
    if _is_x(patch):
        upper = f"{major}.{_inc(minor)}.0-0" if major == "0" else f"{_inc(major)}.0.0-0"
        return f">={major}.{minor}.0 <{upper}"
    if major != "0":
        upper = f"{_inc(major)}.0.0-0"
    else:
        upper = f"0.{minor}.{_inc(patch)}-0" if minor == "0" else f"0.{_inc(minor)}.0-0"
    return f">={major}.{minor}.{patch}{'-' + pre if pre else ''} <{upper}"


def _tilde_bounds(major: str, minor: str, patch: str, pre: str | None) -> str:
    low = f"{major}.{minor}.0" if _is_x(patch) else f"{major}.{minor}.{patch}"
    return f">={low}{'-' + pre if pre and not _is_x(patch) else ''} <{major}.{_inc(minor)}.0-0"


def _xrange(comp: str, grammar: _Grammar) -> str:
    match = grammar.xrange.fullmatch(comp)
    if match is None:
        return comp
    gtlt, major, minor, patch = match.groups()[:4]
    if (_is_x(major) and not _is_x(minor)) or (_is_x(minor) and patch and not _is_x(patch)):
        return comp  # out of order (`x.1`, `1.x.2`): left as written
    x_major, x_minor = _is_x(major), _is_x(major) or _is_x(minor)
    any_x = x_minor or _is_x(patch)
    gtlt = "" if gtlt == "=" and any_x else gtlt
    if x_major:
        return "<0.0.0-0" if gtlt in (">", "<") else "*"
    if gtlt and any_x:
        minor, patch, pre = ("0" if x_minor else minor), "0", ""
        if gtlt == ">":
            gtlt, major, minor = (">=", _inc(major), "0") if x_minor else (">=", major, _inc(minor))
        elif gtlt == "<=":
            gtlt, major, minor = ("<", _inc(major), minor) if x_minor else ("<", major, _inc(minor))
        return f"{gtlt}{major}.{minor}.{patch}{'-0' if gtlt == '<' else pre}"
    if x_minor:
        return f">={major}.0.0 <{_inc(major)}.0.0-0"
    if any_x:
        return f">={major}.{minor}.0 <{major}.{_inc(minor)}.0-0"
    return match.group(0)
