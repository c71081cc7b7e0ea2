"""What a Node project install brings besides the registry: its manifests' non-registry
dependencies, its lockfile's URLs, and the flags a project install may carry.

A project install (`npm ci`, `pnpm install`, `yarn install`, `bun install`) names nothing on the
command line; the index judges every registry package the client fetches. What the index never
sees is judged here before the client runs:

- every dependency, override or resolution in a package.json (the project's, each one above it,
  and each one below its workspace's root, outside node_modules) whose spec is not a registry
  range or tag (a URL, git, a path, `file:`, `github:`, `link:`, an alias...) goes to /evaluate
  as `name@spec`, so a denied or unknown one is refused with the service's reason before
  anything runs;
- a lockfile that would fetch from anywhere but the run's registry, or install a local tarball or
  directory or a git repository, is refused, with what to run instead (npm's is rerouted instead:
  see `npm`);
- a workspace whose package patterns reach outside its root folder is refused: the client would
  install packages whose manifests the gate never read.

Standard library only, like the whole gate.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse

from ...files import ancestors, read_regular
from ...installers import Unresolvable, Usage
from ..plan import Plan
from . import urls

# package.json fields that declare what gets installed; overrides nest (npm) or name a path
# (`alpha>beta`, `**/beta`, `beta@1`): the package installed is the last name in the key.
DEPENDENCY_FIELDS = ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies")
OVERRIDE_FIELDS = (("overrides",), ("resolutions",), ("pnpm", "overrides"))
# A registry spec is a semver range or a dist-tag: neither has a colon or a slash, and a tarball
# file name ends in one of these. `workspace:` names a package of this very project; a client
# that reads catalogs (pnpm) keeps `catalog:` too, and judges what it resolves to (`settings`).
TARBALL_ENDINGS = (".tgz", ".tar.gz", ".tar")
LOCAL_PROTOCOLS = ("workspace:",)
SKIPPED_DIRECTORIES = ("node_modules", "__pycache__")  # and every dot-folder: workspace globs skip them
MAX_MANIFESTS = 2000  # package.json files read below the project: a bound on a hostile tree
MAX_FOLDERS = 50_000  # folders walked below it (outside node_modules and dot-folders)
# A workspace package pattern the gate can follow: plain path parts (any characters but a glob's
# braces, classes, extglob parentheses, `?`, `!`, a colon or a backslash, and not starting with a
# dot or `~`), `*` and `**` (which npm's and pnpm's globs never match to a dot-folder or `..`),
# `!` in front to exclude. Those others could name what the walk does not read (`{../x,a}`,
# `[.][.]`, `@(..)`, `C:/x`).
PATTERN_PART = re.compile(r"^(?:\*\*|\.|[^{}\[\]()?!:\\/.~][^{}\[\]()?!:\\/]*)$")
# A spec npm reads as a path, not a registry range: npm-package-arg's `isFilespec` (`..`, `.git`,
# `~/x`, `/x`, `C:x`).
PATH_SPEC = re.compile(r"^(?:\.|~/|[/\\]|[A-Za-z]:)")
# Where a workspace lists its packages: package.json `workspaces` (npm, yarn, bun; a list, or
# yarn's `{"packages": [...]}`) and pnpm-workspace.yaml `packages`.
WORKSPACE_FILE = "pnpm-workspace.yaml"
# What a lockfile could fetch is what a client reads as a URL (`urls`). A backslash could hide
# one behind an escape (JSON, YAML and yarn's format all unescape), so a lockfile with one is
# refused; so is a YAML block scalar (`|`, `>`: a value over several lines, each line break kept),
# which no client writes: a URL parser drops line breaks, so one could spell a URL over lines.
BLOCK_SCALAR = re.compile(r"(?:^|\s)[|>][-+0-9]*[ \t]*(?:#.*)?$")
LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")  # YAML 1.1's, which libyaml reads
# The characters of a value at the start of a line, and what comes before those at its end: a
# space, a quote, `,`, `}` or `]` ends a value; a tab does not (a URL parser drops it).
VALUE_START = re.compile(r"(?:\t|[^\s\"',}\]])*")
BEFORE_VALUE_END = re.compile(r".*(?:[^\S\t]|[\"',}\]])")
# What else a lockfile could install that the index never judges: a local tarball or directory
# (`file:`, pnpm's `type: directory`), git in any spelling (`git+…:`, `github:`, scp-style
# `git@host:`, pnpm's `type: git`), yarn's `portal:` and `exec:`, a `link:` to an absolute path.
# A package.json with any of these is asked about (declared_specs); a lockfile that names one
# itself is refused. Kept: `workspace:` and a relative `link:` (this project's own packages, as
# pnpm writes them), and yarn's `patch:` of a registry package (its builtin compatibility patches).
NON_REGISTRY_SOURCE = re.compile(
    r"(?<![\w.+-])(?:file:|git(?:\+[a-z]+)?:|github:|gitlab:|bitbucket:|gist:|portal:|exec:|link:\s*(?=[/~])"
    r"|git@[^\s:\"']+:)|\btype:\s*['\"]?(?:git|directory)\b",
    re.IGNORECASE,
)
MAX_DECODINGS = 8  # rounds of percent-decoding before a lockfile line is refused as obfuscated
LOCKFILE_HELP = (
    "delete {lockfile} and run `runcode-policy-gate -- {client} install` to resolve the project "
    "again through the package index"
)


def is_registry_spec(spec: str) -> bool:
    spec = spec.strip()
    return (
        ":" not in spec
        and "/" not in spec
        and not spec.lower().endswith(TARBALL_ENDINGS)
        and PATH_SPEC.match(spec) is None
    )


def declared_specs(cwd: str, kept: tuple = LOCAL_PROTOCOLS) -> list[str]:
    """`name@spec` for every non-registry dependency, override or resolution of the project
    (but those of a `kept` protocol)."""
    specs: list[str] = []
    for manifest in manifests(cwd).values():
        for field in DEPENDENCY_FIELDS:
            for name, spec in _mapping(manifest.get(field)).items():
                specs += _judged(name, spec, kept)
        for path in OVERRIDE_FIELDS:
            specs += _override_specs(_mapping(_field(manifest, path)), kept)
    return list(dict.fromkeys(specs))


def manifests(cwd: str) -> dict[str, dict]:
    """{path: document} of the package.json of every folder above the project, and of every
    folder below its workspace's root (`workspace_root`) but node_modules: a workspace's client
    installs every package of it, from any of its folders."""
    above = (os.path.join(d, "package.json") for d in ancestors(cwd)[1:] if _is_file(d, "package.json"))
    found = {path: _manifest(path) for path in above}
    for directory, files in project_folders(cwd):
        if "package.json" in files:
            path = os.path.join(directory, "package.json")
            found[path] = _manifest(path)
        if len(found) > MAX_MANIFESTS:
            raise Unresolvable(f"more than {MAX_MANIFESTS} package.json files below {workspace_root(cwd)}")
    return found


def project_folders(cwd: str):
    """(folder, its file names) for every folder below the workspace's root but node_modules and
    dot-folders, at most MAX_FOLDERS of them; a folder linked to outside the root is refused
    (npm's glob follows links, which the walk does not)."""
    root = workspace_root(cwd)
    inside = os.path.realpath(root) + os.sep
    declared = workspace_patterns(root) is not None  # without a workspace, the client installs no folder
    for count, (directory, folders, files) in enumerate(os.walk(root)):
        if count >= MAX_FOLDERS:
            raise Unresolvable(f"more than {MAX_FOLDERS} folders below {root}")
        folders[:] = sorted(f for f in folders if f not in SKIPPED_DIRECTORIES and not f.startswith("."))
        for folder in folders if declared else ():
            path = os.path.join(directory, folder)
            if os.path.islink(path) and not (os.path.realpath(path) + os.sep).startswith(inside):
                raise Unresolvable(f"{path} links to {os.path.realpath(path)}, outside the workspace {root}")
        yield directory, files


def workspace_root(cwd: str) -> str:
    """The outermost folder, from the working directory up, that declares a workspace, else the
    working directory. A workspace whose package patterns the gate cannot follow inside it (one
    reaching outside, or naming a dot-folder, or a brace, class or extglob) is refused."""
    root = os.path.abspath(cwd)
    for directory in ancestors(cwd):
        patterns = workspace_patterns(directory)
        if patterns is None:
            continue
        root = directory
        for where, pattern in patterns:
            parts = pattern.removeprefix("!").replace("\\", "/").removesuffix("/").split("/")
            if not all(PATTERN_PART.match(part) for part in parts):
                raise Unresolvable(
                    f"{where}: the workspace package pattern {pattern!r} is not one the gate follows inside "
                    f"{directory} (plain folder names, * and ** only); the gate reads every package of a "
                    "workspace before the client installs it"
                )
    return root


def workspace_patterns(directory: str) -> list[tuple[str, str]] | None:
    """(file, pattern) for each package pattern a folder's workspace declares; None when it
    declares no workspace."""
    found, declared = [], False
    if _is_file(directory, "package.json"):
        path = os.path.join(directory, "package.json")
        value = _manifest(path).get("workspaces")
        if value is not None:
            declared = True
            listed = value.get("packages") if isinstance(value, dict) else value
            if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
                raise Unresolvable(f"{path}: `workspaces` is not a list of package patterns")
            found += [(path, pattern) for pattern in listed]
    if _is_file(directory, WORKSPACE_FILE):
        path = os.path.join(directory, WORKSPACE_FILE)
        declared = True
        found += [(path, pattern) for pattern in _pnpm_packages(path)]
    return found if declared else None


def _pnpm_packages(path: str) -> list[str]:
    """The `packages:` of a pnpm-workspace.yaml: a block list (`- 'packages/*'`) or a flow one on
    its line (`packages: [a, b]`), its key quoted or not; another shape of it, or a document the
    gate cannot read line by line (a flow mapping), is refused."""
    try:
        lines = read_regular(path).decode("utf-8-sig").split("\n")
    except (OSError, ValueError) as error:
        raise Unresolvable(f"cannot read {path}: {error}") from None
    found, inside = [], False
    for number, line in enumerate(lines, 1):
        text = re.sub(r"(^|\s)#.*", "", line).rstrip()
        if not text:
            continue
        if text.startswith("%YAML"):
            continue  # the version directive says nothing of the packages
        if text[0] in "{[&*!|>%":
            raise Unresolvable(f"{path} line {number}: not a document the gate can read line by line")
        key = re.match(r"^(['\"]?)packages\1\s*:\s*(.*)$", text)
        if key is not None:
            rest, inside = key.group(2).strip(), True
            if rest.startswith("[") and rest.endswith("]") and "{" not in rest:
                found += [_unquoted(item) for item in rest[1:-1].split(",") if item.strip()]
                inside = False
            elif rest:
                raise Unresolvable(f"{path} line {number}: `packages` is not a list the gate can read")
        elif inside and text[0] in " \t-":
            item = re.match(r"^\s*-\s*(.+)$", text)
            if item is None:
                raise Unresolvable(f"{path} line {number}: `packages` is not a list the gate can read")
            found.append(_unquoted(item.group(1)))
        else:
            inside = False
    return found


def _unquoted(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"" else text


def _is_file(directory: str, name: str) -> bool:
    """Anything of that name but a folder: what is not a regular file is refused when read."""
    path = os.path.join(directory, name)
    return os.path.lexists(path) and not os.path.isdir(path)


def _manifest(path: str) -> dict:
    try:
        document = json.loads(read_regular(path).decode("utf-8-sig"))
    except (OSError, ValueError) as error:
        raise Unresolvable(f"cannot read {path}: {error}") from None
    if not isinstance(document, dict):
        raise Unresolvable(f"{path} is not a JSON object")
    return document


def _field(manifest: dict, path: tuple) -> object:
    for key in path:
        manifest = manifest.get(key) if isinstance(manifest, dict) else None
    return manifest


def _mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _judged(name: str, spec: object, kept: tuple) -> list[str]:
    if not isinstance(spec, str):
        raise Unresolvable(f"the dependency {name!r} has a spec that is not a string: {spec!r}")
    return [f"{name}@{spec}"] if needs_judging(spec, kept) else []


def needs_judging(spec: str, kept: tuple = LOCAL_PROTOCOLS) -> bool:
    """Whether the index alone cannot judge what `spec` installs: not a registry range or tag,
    a `kept` protocol, nor `$name` (npm overrides: the project's own spec for name, judged there)."""
    return not (is_registry_spec(spec) or spec.startswith(kept) or spec.startswith("$"))


def _override_specs(overrides: dict, kept: tuple) -> list[str]:
    specs: list[str] = []
    for key, value in overrides.items():
        name = override_target(key)
        if isinstance(value, dict):  # npm: {"alpha": {".": "1.0.0", "beta": "..."}}
            specs += _judged(name, value["."], kept) if "." in value else []
            specs += _override_specs({k: v for k, v in value.items() if k != "."}, kept)
        else:
            specs += _judged(name, value, kept)
    return specs


def override_target(key: str) -> str:
    """The package an override key replaces: `alpha>beta@1` and `**/alpha/beta` name beta."""
    last = key.rsplit(">", 1)[-1]
    parts = last.split("/")
    name = "/".join(parts[-2:]) if len(parts) > 1 and parts[-2].startswith("@") else parts[-1]
    at = name.find("@", 1)
    return name if at < 0 else name[:at]


def checked_flags(client: str, flags: list[str], allowed: frozenset) -> None:
    """A project install may carry only flags that change neither sources nor caches."""
    for flag in flags:
        if flag.partition("=")[0] not in allowed and flag not in allowed:
            raise Usage(
                f"`{client}` flag {flag!r} is not one the gate passes to a project install "
                f"(it passes: {', '.join(sorted(allowed))})"
            )


def check_lockfiles(cwd: str, lockfiles: tuple, registry: str, client: str, below: bool = False) -> None:
    """Refuse a lockfile, in the working directory or above it (a workspace root's), or, `below`,
    in any folder of the workspace (pnpm's per-project lockfiles), that would fetch anything from
    outside the run's registry."""
    folders = ancestors(cwd) + ([directory for directory, _ in project_folders(cwd)] if below else [])
    for directory in dict.fromkeys(folders):
        for lockfile in lockfiles:
            _check_lockfile(os.path.join(directory, lockfile), registry, client)


def _check_lockfile(path: str, registry: str, client: str) -> None:
    lockfile = path
    try:
        text = read_regular(path).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return
    except OSError as error:
        raise Unresolvable(f"cannot read {lockfile}: {error}") from None
    then = LOCKFILE_HELP.format(lockfile=lockfile, client=client)
    if "\\" in text:
        raise Unresolvable(f"{lockfile} holds an escape sequence that could hide a URL; {then}")
    lines = LINE_BREAK.split(text)
    for number, line in enumerate(lines, 1):
        if ("|" in line or ">" in line) and BLOCK_SCALAR.search(line):
            raise Unresolvable(
                f"{lockfile} line {number} starts a YAML block scalar (`|` or `>`: a value over several lines, "
                f"which no client writes), which could spell a URL over lines; {then}"
            )
        _check_value(f"{lockfile} line {number}", line, registry, then)
    for first, last, joined in continued_values(lines):
        _check_value(f"{lockfile} line {first}, continued over blank lines to line {last},", joined, registry, then)


def continued_values(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, last line, the value) for every value that runs on past blank lines: the
    value characters ending the line before them and those starting the line after, joined. A
    YAML value (quoted or not) continued past a blank line holds a line break there, which a URL
    parser drops, and nothing of the spaces around it."""
    found: list[tuple[int, int, str]] = []
    before, blank = None, False  # (where the value started, its characters so far)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            blank = before is not None
            continue
        if blank:
            first, start = before
            head = VALUE_START.match(line.lstrip()).group(0)
            found.append((first, number, start + head))
            whole = head == line.strip()  # the value may run on past the next blank lines too
            before = (first, start + head) if whole else (number, _value_at_end(line))
        else:
            before = (number, _value_at_end(line))
        blank = False
    return found


def _value_at_end(line: str) -> str:
    """The characters of the value that ends `line`."""
    line = line.rstrip()
    before = BEFORE_VALUE_END.match(line)
    return line if before is None else line[before.end() :]


def _check_value(where: str, line: str, registry: str, then: str) -> None:
    """Refuse a URL in `line` that does not fetch from under the registry, and any other source."""
    spellings = percent_decodings(line)  # yarn 4 writes `::__archiveUrl=http%3A%2F%2F...`
    if spellings is None:
        raise Unresolvable(f"{where} is percent-encoded over and over; {then}")
    # Every spelling, the one written first: a client parses the line as written (where
    # `INDEX%2F@evil/` names the host evil), yarn 4 an archive URL decoded.
    for seen in spellings:
        for written, url in urls.found(seen):
            if not urls.within(written, registry):
                how = _as_written(line, seen, written, url)
                raise Unresolvable(f"{where} fetches {url}{how}, which is not the package index; {then}")
    seen = spellings[-1]
    found = NON_REGISTRY_SOURCE.search(urls.dropped(seen))  # `fi\tle:` is a URL parser's `file:`
    if found is not None:
        raise Unresolvable(f"{where} installs from {found.group(0).strip()!r}, not from the package index; {then}")


def _as_written(line: str, seen: str, written: str, url: str) -> str:
    """How `line` spells `url`, when not as it is."""
    if url in line:
        return ""
    if seen != line:
        return " (percent-encoded there)"
    if written in line:
        return f" (written {written!r})"
    return " (written with tabs or line breaks in it)"


def percent_decodings(text: str) -> list[str] | None:
    """`text`, then each round of decoding its %-escapes until none is left, so that no encoding
    (even a double one) hides a URL or a source from the checks; None past MAX_DECODINGS rounds."""
    rounds = [text]
    for _ in range(MAX_DECODINGS):
        decoded = urllib.parse.unquote(rounds[-1])
        if decoded == rounds[-1]:
            return rounds
        rounds.append(decoded)
    return None


def project_plan(
    command: list[str], cwd: str, project_verbs, named_verbs, flags: frozenset, kept: tuple = LOCAL_PROTOCOLS
) -> Plan:
    """What to ask /evaluate before a Node client runs `command`.

    A verb of `named_verbs` with package names goes to the service whole (it parses npm and
    pnpm command lines itself, options included), with the project's own non-registry specs
    appended: the client installs package.json too. A verb of `project_verbs` naming no
    package is a project install: only `flags` may come with it, and the project's specs are
    asked about (None when there are none: the index alone judges what is fetched).
    """
    client, args = command[0], command[1:]
    verb = next((a for a in args if not a.startswith("-")), None)
    rest = [a for a in args if a != verb] if verb is not None else args
    names = [a for a in rest if not a.startswith("-")]
    if verb in named_verbs and names:
        return Plan(client, "node", {"command": [*command, *declared_specs(cwd, kept)]})
    if verb not in project_verbs and not (verb is None and "" in project_verbs):
        every = sorted(v for v in {*project_verbs, *named_verbs} if v)
        raise Usage(f"the gate runs `{client}` only as: {', '.join(f'{client} {v}' for v in every)}")
    if names:
        raise Usage(
            f"`{client} {verb}` names packages, which the gate judges only as `npm install NAME` or `pnpm add NAME`"
        )
    checked_flags(client, rest, flags)
    specs = declared_specs(cwd, kept)
    return Plan(client, "node", {"language": "node", "specs": specs} if specs else None)
