"""Install command lines (an argv list, no shell) turned into judged specs.

Options are judged, not skipped: pip's are read the way optparse reads them (unique prefixes of
long options, `--opt=value`, values glued to short options, clusters such as `-qU`), npm's the
way nopt does. The tables below hold every rule; a flag missing from them is judged as an option,
so a new or misspelt flag fails closed. The pip tables live in `pip_options`.
"""

from __future__ import annotations

import re

from domain.errors import FieldError, InvalidInputError
from domain.specs import parse, pip
from domain.specs.pip_options import ARG, PIP_CLI, Event, scan
from domain.specs.types import Spec, make_spec

_PIP = re.compile(r"pip(?:\d+(?:\.\d+)*)?")
_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)*)?")
# npm 11 `install` and its aliases (cmd-list.js); install-test, ci and friends are refused.
_NPM_INSTALL = frozenset("install i add in ins inst insta instal isnt isnta isntal isntall".split())
# npm flags that only change what is saved to package.json or how much is printed.
_NPM_HARMLESS = frozenset(
    "--save -S --save-dev -D --save-optional -O --save-prod -P "
    "--save-exact -E --no-save --no-fund --no-audit --silent "
    "--no-package-lock --loglevel".split()
)
# npm options that read the next argument as their value; nopt reads other flags as booleans
# (a boolean may still swallow a literal `true`/`false` after it).
_NPM_VALUED = frozenset(
    "--loglevel --registry --prefix -C --userconfig --globalconfig --cache "
    "--tag --workspace -w --omit --include --install-strategy --otp "
    "--before --save-prefix --script-shell --node-options --cafile --ca "
    "--cert --key --proxy --https-proxy --noproxy --location".split()
)
_NPM_WHY = "an npm config flag: it can change the registry, npmrc, install location or scripts"


def parse_command(argv: list[str]) -> tuple[str, list[Spec]]:
    """Split an install command (argv, no shell) into (language, specs), options included.

    Raises InvalidInputError (field `command`) for anything but pip/pip3/pip3.11 install,
    python[3[.12]] -m pip install, uv pip install, npm install (or one of its aliases) and
    pnpm add/install. uv's and pnpm's own flags are not in the tables: they fail closed.
    """
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise _refused("a command must be a non-empty list of strings (argv, no shell)")
    program = argv[0].replace("\\", "/").rsplit("/", 1)[-1]
    if _PIP.fullmatch(program):
        return "python", _pip_specs(argv[1:], argv)
    if _PYTHON.fullmatch(program) and argv[1:3] == ["-m", "pip"]:
        return "python", _pip_specs(argv[3:], argv)
    if program == "uv" and argv[1:2] == ["pip"]:
        return "python", _pip_specs(argv[2:], argv)
    if program in ("npm", "pnpm"):
        return "node", _npm_specs(argv[1:], argv)
    raise _refused(
        f"{argv[0]!r} is not pip, python -m pip, uv pip, npm or pnpm; only their install commands can be judged"
    )


def _refused(why: str) -> InvalidInputError:
    return InvalidInputError("Not an install command the gate can judge", [FieldError(field="command", message=why)])


def _option(language: str, text: str, why: str) -> Spec:
    return Spec(text=text, language=language, kind="option", name=None, detail=why)


def _pip_specs(args: list[str], argv: list[str]) -> list[Spec]:
    # pip's top-level parser stops at the command name; the install parser then re-reads every
    # argument except that name, so options before `install` count as well.
    # Finding the command, an unknown option takes no word with it: `uv pip --offline install x`.
    command = next((e for e in scan(args, PIP_CLI, unknown_takes_value=False) if e.name == ARG), None)
    if command is None or command.value != "install":
        raise _refused(f"only `pip install` can be judged, not {' '.join(argv)!r}")
    rest = args[: command.at] + args[command.at + 1 :]
    specs = [spec for event in scan(rest, PIP_CLI) for spec in _pip_event(event)]
    return specs or [_option("python", " ".join(argv), "pip install names nothing to install")]


def _pip_event(event: Event) -> list[Spec]:
    if event.name == ARG:
        return [make_spec("python", event.text, pip.parse_argument(event.value))]  # type: ignore[arg-type]
    if event.name is None:
        return [_option("python", event.text, f"pip cannot parse it: {event.value}")]
    if event.name == "--editable":
        return [make_spec("python", event.text, pip.parse_editable(event.value))]  # type: ignore[arg-type]
    reason = PIP_CLI.reason(event.name)
    return [_option("python", event.text, f"{event.name} {reason}")] if reason else []


def _npm_specs(args: list[str], argv: list[str]) -> list[Spec]:
    items: list[Spec | str] = []  # option specs and positional arguments, in argv order
    at = 0
    while at < len(args):
        if args[at] == "--":
            items += args[at + 1 :]
            break
        if args[at].startswith("-") and args[at] != "-":
            used, spec = _npm_flag(args[at], args[at + 1] if at + 1 < len(args) else None)
            items += [spec] if spec else []
            at += used
        else:
            items.append(args[at])
            at += 1
    command = next((i for i, item in enumerate(items) if isinstance(item, str)), None)
    if command is None or items[command] not in _NPM_INSTALL:
        raise _refused(f"only `npm install` (or i, add, ...) can be judged, not {' '.join(argv)!r}")
    del items[command]
    specs = [parse("node", item) if isinstance(item, str) else item for item in items]
    if not any(isinstance(item, str) for item in items):
        specs.append(
            _option(
                "node",
                " ".join(argv),
                "npm install without packages installs package.json and the lockfile, which the gate cannot see",
            )
        )
    return specs


def _npm_flag(token: str, following: str | None) -> tuple[int, Spec | None]:
    """nopt's reading of one flag: (arguments used, an option spec or None when harmless)."""
    name, eq, value = token.partition("=")
    boolean_word = name not in _NPM_VALUED and following in ("true", "false")
    takes_next = not eq and following not in (None, "--") and (name in _NPM_VALUED or boolean_word)
    text = f"{token} {following}" if takes_next else token
    harmless = name in _NPM_HARMLESS and (not eq or name in _NPM_VALUED or value in ("true", "false"))
    return (2 if takes_next else 1), (None if harmless else _option("node", text, _NPM_WHY))
