"""pip's option tables and an optparse-faithful scanner over them.

Shared by whole command lines (`commands`) and by option lines inside requirements files
(`pip`). Every rule is in a table: a flag missing from them is judged as an option, so a new or
misspelt flag fails closed.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

ARG = "<arg>"
_FROM = "changes where packages come from"
_FILE = "installs what a file the gate cannot see lists"
_TO = "changes where or how files are installed"
_TRUST = "changes which servers and certificates are trusted"
_BUILD = "changes how packages are built"
_PICK = "changes which distributions pip may pick"
_WRITES = "writes a file of its own where it is told (a log, a report)"

# Why each pip option is judged; a trailing '=' marks an option that takes a value.
_PIP_JUDGED = {
    _FROM: "--index-url= --extra-index-url= --no-index --find-links= --isolated --cache-dir=",
    _FILE: "--requirement= --constraint= --build-constraint= --requirements-from-script= --group=",
    _TRUST: "--trusted-host= --cert= --client-cert= --proxy= --no-proxy-env --keyring-provider=",
    _TO: "--target= --prefix= --root= --user --no-user --src= --python= "
    "--break-system-packages --ignore-installed --exists-action=",
    _BUILD: "--config-settings= --no-binary= --no-build-isolation --use-pep517 --check-build-dependencies --no-clean",
    _PICK: "--platform= --python-version= --implementation= --abi= --use-feature= "
    "--use-deprecated= --no-require-hashes --all-releases= --only-final= "
    "--uploaded-prior-to= --refresh-package= --only-deps --ignore-requires-python",
    _WRITES: "--log= --report=",
    "installs an editable project": "--editable=",
}
# Harmless in a command: they only change output, retries or caching, or make pip stricter
# about the very packages named. Judged on purpose although often benign: --no-build-isolation
# (builds against whatever the sandbox has installed), --no-binary (forces running build
# backends), --isolated (drops the pinned PIP_INDEX_URL and pip.conf), --cache-dir (a cache can
# hold planted wheels), --ignore-requires-python and --only-deps (install other things).
_PIP_HARMLESS = (
    "--quiet --verbose --upgrade --no-cache-dir --disable-pip-version-check --no-input --pre "
    "--no-deps --force-reinstall --no-color --progress-bar= --upgrade-strategy= "
    "--require-hashes --only-binary= --prefer-binary --dry-run --compile --no-compile "
    "--no-warn-script-location --no-warn-conflicts --root-user-action= --timeout= --retries= "
    "--resume-retries= --debug --require-virtualenv --no-python-version-warning --help "
    "--version --hash="
)
# long option -> (takes a value, why it is judged or None when harmless)
PIP_OPTIONS: dict[str, tuple[bool, str | None]] = {
    word.rstrip("="): (word.endswith("="), why)
    for why, words in (*_PIP_JUDGED.items(), (None, _PIP_HARMLESS))
    for word in words.split()
}
PIP_ALIASES = {
    "-i": "--index-url",
    "--pypi-url": "--index-url",
    "-f": "--find-links",
    "-r": "--requirement",
    "-c": "--constraint",
    "-e": "--editable",
    "-t": "--target",
    "-C": "--config-settings",
    "-U": "--upgrade",
    "-I": "--ignore-installed",
    "-q": "--quiet",
    "-v": "--verbose",
    "-h": "--help",
    "-V": "--version",
    "--log-file": "--log",
    "--local-log": "--log",
    "--source": "--src",
    "--source-dir": "--src",
    "--source-directory": "--src",
    "--default-timeout": "--timeout",
    "--no-dependencies": "--no-deps",
    "--only-dependencies": "--only-deps",
    "--require-venv": "--require-virtualenv",
}
# pip's requirements-file parser (req_file.SUPPORTED_OPTIONS plus the per-requirement ones)
_REQ_FILE = (
    "--index-url",
    "--extra-index-url",
    "--no-index",
    "--constraint",
    "--requirement",
    "--editable",
    "--find-links",
    "--no-binary",
    "--only-binary",
    "--prefer-binary",
    "--require-hashes",
    "--no-require-hashes",
    "--pre",
    "--all-releases",
    "--only-final",
    "--trusted-host",
    "--use-feature",
    "--hash",
    "--config-settings",
)


class Event(NamedTuple):
    """One step of optparse: an option (`name` its long form), a positional (`name` is ARG)
    or a parse error (`name` None, `value` the message). `at` indexes the first token."""

    name: str | None
    text: str
    value: str | None
    at: int


@dataclass(frozen=True)
class OptionTable:
    """The options one optparse parser knows: long form -> (takes value, reason)."""

    options: dict[str, tuple[bool, str | None]]
    aliases: dict[str, str]

    def reason(self, name: str) -> str | None:
        return self.options[name][1]

    def takes_value(self, name: str) -> bool:
        return self.options[name][0]

    @cached_property
    def _long_words(self) -> tuple[str, ...]:
        """Every long spelling, sorted: the ones a prefix abbreviates are then one run."""
        return tuple(sorted(w for w in (*self.options, *self.aliases) if w.startswith("--")))

    def match_long(self, spelled: str) -> str | None:
        """optparse `_match_abbrev`: an exact spelling, else the one spelling it prefixes."""
        if spelled in self.options or spelled in self.aliases:
            hit = spelled if spelled.startswith("--") else None
        else:
            words = self._long_words
            at = bisect_left(words, spelled)
            unique = at < len(words) and words[at].startswith(spelled)
            if unique and at + 1 < len(words) and words[at + 1].startswith(spelled):
                unique = False
            hit = words[at] if unique else None
        return None if hit is None else self.aliases.get(hit, hit)


def _subset(names: tuple[str, ...]) -> OptionTable:
    return OptionTable({n: PIP_OPTIONS[n] for n in names}, {a: n for a, n in PIP_ALIASES.items() if n in names})


PIP_CLI = OptionTable({n: v for n, v in PIP_OPTIONS.items() if n != "--hash"}, PIP_ALIASES)
PIP_REQUIREMENTS_FILE = _subset(_REQ_FILE)


def scan(tokens: list[str], table: OptionTable, unknown_takes_value: bool = True) -> list[Event]:
    """Read argv like optparse with interspersed arguments; `--` ends the options.
    `unknown_takes_value`: an option not in the table may take the next word (`_unknown`)."""
    events: list[Event] = []
    at = 0
    while at < len(tokens):
        token = tokens[at]
        if token == "--":
            return events + [Event(ARG, t, t, i) for i, t in enumerate(tokens) if i > at]
        if token.startswith("--"):
            found, used = _long(token, tokens, at, table, unknown_takes_value)
        elif token.startswith("-") and token != "-":
            found, used = _short(token, tokens, at, table, unknown_takes_value)
        else:
            found, used = [Event(ARG, token, token, at)], 1
        events += found
        at += used
    return events


def _unknown(token: str, tokens: list[str], at: int, why: str, may_take_next: bool) -> tuple[list[Event], int]:
    """An option the table does not know (uv's own, say) may take the next word as its value:
    that word is refused with it, never judged as a package (`--overrides o.txt` is no `o-txt`)."""
    following = tokens[at + 1] if may_take_next and at + 1 < len(tokens) else None
    if following is None or following.startswith("-"):
        return [Event(None, token, why, at)], 1
    return [Event(None, f"{token} {following}", f"{why} (with {following!r}, which may be its value)", at)], 2


def _take_next(name: str, token: str, tokens: list[str], at: int, spelled: str) -> tuple[Event, int]:
    if at + 1 >= len(tokens):
        return Event(None, token, f"{spelled} needs a value", at), 1
    return Event(name, f"{token} {tokens[at + 1]}", tokens[at + 1], at), 2


def _long(token: str, tokens: list[str], at: int, table: OptionTable, unknown_value: bool) -> tuple[list[Event], int]:
    spelled, eq, value = token.partition("=")
    name = table.match_long(spelled)
    if name is None:
        return _unknown(
            token, tokens, at, f"no such option, or an ambiguous prefix: {spelled}", unknown_value and not eq
        )
    if not table.takes_value(name):
        error = Event(None, token, f"{spelled} takes no value", at)
        return [error if eq else Event(name, token, None, at)], 1
    if eq:
        return [Event(name, token, value, at)], 1
    event, used = _take_next(name, token, tokens, at, spelled)
    return [event], used


def _short(token: str, tokens: list[str], at: int, table: OptionTable, unknown_value: bool) -> tuple[list[Event], int]:
    events: list[Event] = []
    for i in range(1, len(token)):
        name = table.aliases.get("-" + token[i])
        if name is None:
            last = i + 1 == len(token)
            unknown, used = _unknown(token, tokens, at, f"no such option: -{token[i]}", unknown_value and last)
            return events + unknown, used
        if not table.takes_value(name):
            events.append(Event(name, "-" + token[i], None, at))
        elif i + 1 < len(token):
            return events + [Event(name, token, token[i + 1 :], at)], 1
        else:
            event, used = _take_next(name, token, tokens, at, "-" + token[i])
            return events + [event], used
    return events, 1
