"""Python installers, each pointed at the run's index: pip (`install`, `download`, requirement
files, local projects), `uv pip install|sync`, `uv sync|lock|add`, `pdm install|lock|add`,
`pipenv install`, `pip-compile` and `poetry install|lock|add`.

Before running, the gate asks the service about everything the command will install that it can
read: names on the command line, every line of the requirement files it names (nested ones
too), and the requirements of a project's pyproject.toml (so a URL requirement, which a client
fetches without asking any index, is refused first). Every index a project file or lockfile
names besides the service's is refused with what to do instead. Then each client runs with its
configuration files ignored and the index as its only source (see `settings`): the index judges
every package it fetches, at any depth.

Standard library only, like the whole gate.
"""

from __future__ import annotations

import os

from ...installers import PYTHON, Usage
from ..plan import Plan
from . import projects, requirements
from .settings import PIP, prepare_argv, settings_for

__all__ = ["plan_for", "prepare"]

# Options of the project clients that the gate lets through: they choose what to install from
# the project, not where from. Anything else (an index, a config file, --frozen ...) is refused.
PROJECT_OPTIONS = {
    "uv": "-q --quiet -v --verbose --dev --no-dev --all-extras --all-groups --no-install-project "
    "--inexact --exact --locked -U --upgrade --no-sync --no-progress "
    "--extra --group --optional --upgrade-package -P",
    "pdm": "-q --quiet -v --verbose -d --dev -G --group --prod --production --no-self --no-sync "
    "-u --unconstrained --save-compatible --save-exact --save-minimum --update-reuse --update-all",
    "poetry": "-q --quiet -v --verbose -n --no-interaction --no-root --sync --only --with --without -G --group",
    "pipenv": "-q --quiet -v --verbose -d --dev --deploy",
    "pip-compile": "-q --quiet -v --verbose -o --output-file --upgrade -U --upgrade-package -P --extra "
    "--all-extras --generate-hashes --strip-extras --no-strip-extras --allow-unsafe",
}
VALUED = frozenset(
    "--extra --group --optional --upgrade-package -P -G --only --with --without -o --output-file".split()
)
SUBCOMMANDS = {
    "uv": ("sync", "lock", "add"),
    "pdm": ("install", "lock", "add", "sync"),
    "poetry": ("install", "lock", "add"),
    "pipenv": ("install",),
}
# What each client's lockfile-only mode would install as it is, and what to run instead.
FROZEN = {
    "--frozen": "installs uv.lock's file URLs as they are, whatever index they point at",
    "--frozen-lockfile": "installs pdm.lock's file URLs as they are",
}


def plan_for(command: list[str], cwd: str) -> Plan | None:
    program = command[0]
    if PIP.match(program) or (PYTHON.match(program) and command[1:3] == ["-m", "pip"]):
        return pip_plan(command, command[3:] if PYTHON.match(program) else command[1:], cwd)
    if program == "uv" and command[1:2] == ["pip"]:
        return uv_pip_plan(command, cwd)
    if program == "pip-compile":
        return project_plan("pip-compile", command, None, command[1:], cwd)
    if program in SUBCOMMANDS:
        words = command[1:]
        if not words or words[0] not in SUBCOMMANDS[program]:
            raise Usage(f"the gate runs {program} {'|'.join(SUBCOMMANDS[program])} only, not {' '.join(command)!r}")
        return project_plan(program, command, words[0], words[1:], cwd)
    return None


def prepare(kind: str, argv: list[str], run: dict, workdir: str, env: dict, cwd: str):
    env.update(settings_for(kind, run, workdir, cwd))
    return prepare_argv(kind, argv), env


def pip_plan(command: list[str], args: list[str], cwd: str) -> Plan:
    """pip install / download: the command (files and local projects aside) and every file line."""
    verb = next((a for a in args if not a.startswith("-")), None)
    if verb not in ("install", "download"):
        raise Usage(f"the gate runs pip install and pip download only, not {' '.join(command)!r}")
    at = args.index(verb)
    rest, files = requirements.split_files(args[at + 1 :])
    if verb == "download":  # judged as the install it is, less where the files are written
        rest = without_option(rest, ("-d", "--dest", "--destination-dir", "--download-dir"))
    rest, lines = local_projects(rest, cwd)
    lines += [line for f in files for line in requirements.lines_of(f, cwd)]
    head = [*command[: len(command) - len(args)], *args[:at], "install"]
    return Plan("pip", "python", command_question(head, rest, lines), specs_question(lines))


def uv_pip_plan(command: list[str], cwd: str) -> Plan:
    verb = command[2:3]
    if verb == ["install"]:
        rest, files = requirements.split_files(command[3:])
    elif verb == ["sync"]:  # `uv pip sync FILE...`: no options, the files are all it installs
        files, rest = command[3:], []
        if not files or any(f.startswith("-") for f in files):
            raise Usage("the gate runs `uv pip sync FILE...` with requirement files and no options")
    else:
        raise Usage(f"the gate runs uv pip install and uv pip sync only, not {' '.join(command)!r}")
    rest, lines = local_projects(rest, cwd)
    for name in files:
        lines += project_file_lines(name, cwd) if is_project_file(name) else requirements.lines_of(name, cwd)
    return Plan("uv", "python", command_question(["uv", "pip", "install"], rest, lines), specs_question(lines))


def project_plan(kind: str, command: list[str], verb: str | None, args: list[str], cwd: str) -> Plan:
    """Project clients: their closed set of options, the project's requirements and the names
    given, every index the project's files name checked against the service's."""
    words, lines = check_options(kind, command, args), []
    if kind == "pdm":
        check_pdm_options(command, projects.project_folder("pdm", cwd))
    if kind == "pip-compile":  # its words are the files it reads
        for name in words or ["requirements.in"]:
            lines += project_file_lines(name, cwd) if is_project_file(name) else requirements.lines_of(name, cwd)
    else:  # its words are names to add, beside the project (and workspace) it finds from cwd
        lines += [*words, *projects.project_requirements(kind, cwd)]
    return Plan(kind if kind != "uv" else "uv-project", "python", None, specs_question(lines))


def check_options(kind: str, command: list[str], args: list[str]) -> list[str]:
    """The positional words of the command (names or files); Usage for any option not in the
    client's closed set, with what to run instead for a lockfile-only mode."""
    allowed = PROJECT_OPTIONS[kind].split()
    positional, at = [], 0
    while at < len(args):
        word = args[at]
        name = word.split("=", 1)[0]
        if name in FROZEN:
            raise Usage(
                f"`{' '.join(command)}` is refused: {name} {FROZEN[name]}. Run it without {name}: "
                "through the gate the lockfile is re-resolved against the policy index (and rewritten to it)"
            )
        if not word.startswith("-"):
            positional.append(word)
        elif name not in allowed:
            raise Usage(
                f"the gate does not pass {name!r} to {kind}: it may change where packages come from. "
                f"Options it passes: {' '.join(allowed)}"
            )
        at += 2 if (name in VALUED and "=" not in word) else 1
    return positional


def check_pdm_options(command: list[str], project: str) -> None:
    """pdm adds its project's `[tool.pdm.options]` to its command line (`install = ["-L",
    "evil.lock"]`): each list is judged as the gate judges that command line, and may name no package."""
    table = projects.pyproject(project).get("tool", {}).get("pdm", {}).get("options", {})
    for verb, options in table.items() if isinstance(table, dict) else [("", None)]:
        where = f"{os.path.join(project, 'pyproject.toml')} [tool.pdm.options] {verb}".rstrip()
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise Usage(f"{where} is not a list of options: the gate cannot judge it")
        try:
            named = check_options("pdm", command, options)
        except Usage as error:
            raise Usage(f"{where}: {error}") from None
        if named:
            raise Usage(f"{where} names {named[0]!r}: give what to install on the command line, where it is judged")


def command_question(head: list[str], rest: list[str], lines: list[str]) -> dict | None:
    """The command for the service to parse, without its files and local projects. The service
    judges a command's options only beside a name, so when the files name the packages, the
    first requirement of the files stands beside the options (it is judged with the files too)."""
    if not rest:
        return None
    if not any(not r.startswith("-") for r in rest):
        first = next((line.split(" -")[0] for line in lines if not line.startswith("-")), None)
        rest = [*rest, first] if first else rest
    return {"command": [*head, *rest]}


def specs_question(lines: list[str]) -> tuple:
    return ({"language": "python", "specs": lines},) if lines else ()


def without_option(args: list[str], names: tuple) -> list[str]:
    kept, at = [], 0
    while at < len(args):
        name, equals, _ = args[at].partition("=")
        if name in names:
            at += 1 if equals else 2
        elif any(args[at].startswith(n) and not n.startswith("--") for n in names):
            at += 1  # -dDIR
        else:
            kept.append(args[at])
            at += 1
    return kept


def local_projects(args: list[str], cwd: str) -> tuple[list[str], list[str]]:
    """(the arguments less local project folders, those projects' requirements): a folder of the
    sandbox's own is no package to judge, but what it requires is (URL requirements above all,
    which pip fetches without asking the index), and so is its build backend."""
    rest, lines, editable = [], [], False
    for word in args:
        folder = os.path.join(cwd, word)
        if not word.startswith("-") and os.path.isdir(folder):
            if not is_project(folder):
                raise Usage(f"{word!r} is a folder without pyproject.toml: the gate cannot read what it installs")
            lines += projects.requirements(folder) or []
            if editable:
                rest.pop()  # the `-e` before it
        else:
            rest.append(word)
        editable = word in ("-e", "--editable")
    return rest, lines


def is_project(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "pyproject.toml"))


def is_project_file(name: str) -> bool:
    return os.path.basename(name) in ("pyproject.toml", "setup.py", "setup.cfg")


def project_file_lines(name: str, cwd: str) -> list[str]:
    if os.path.basename(name) != "pyproject.toml":
        raise Usage(f"{name}: the gate reads requirements from pyproject.toml, not from {os.path.basename(name)}")
    requirements.check_readable(name, "the command line")  # a URL: the client would fetch another one
    return projects.requirements(os.path.dirname(os.path.join(cwd, name)) or cwd)
