"""Requirement files and lockfiles, pasted whole, read into the package names they list.

A lockfile lists every package it would install (its whole tree); a `requirements.txt` or a
`package.json` lists the direct ones. Each format is read with its ecosystem's own means
(`packaging`/the project's pip line parser, `tomllib`, `json`, PyYAML) except yarn.lock v1,
whose format has no library here and is read by `_yarn_v1` below. Only registry packages are
listed: the project itself, workspace members and local, git or URL sources are left out (an
allow list vouches for registry names only). Bad content is refused with the line it is on,
and content of the wrong shape (a list where the format has an object, a number where it has a
name) is refused naming the part, at every level each reader walks (`_shaped`).
"""

from __future__ import annotations

import json
import re
import tomllib

from domain.errors import NAMED_IN_ERRORS, FieldError, InvalidInputError
from domain.limits import MAX_ERRORS, MAX_IMPORT_NAMES
from domain.specs import LANGUAGE_TITLES, check_language, parse
from domain.text import json_kind

FORMATS = {
    "python": ("requirements.txt", "pylock.toml", "uv.lock", "poetry.lock"),
    "node": ("package.json", "package-lock.json", "pnpm-lock.yaml", "yarn.lock"),
}
_LOCAL_SOURCES = ("editable", "virtual", "directory", "path", "git", "url")  # uv.lock `source` keys
_NPM_ALIAS = "npm:"


class ImportRefusedError(InvalidInputError):
    """The pasted content cannot be read as the format it claims."""


def expand_imports(commands: list[dict]) -> list[dict]:
    """Policy change commands with each `import` turned into the `add` of the names it lists."""
    return [
        {
            "action": "add",
            "language": c.get("language"),
            "list": c.get("list"),
            "entries": imported_names(c.get("language"), c.get("format"), c.get("content"), f"changes[{i}]."),
        }
        if c.get("action") == "import"
        else c
        for i, c in enumerate(commands)
    ]


def imported_names(language: str, fmt: str, content: str, where: str = "") -> list[str]:
    """The canonical names `content` (a file of format `fmt`) lists, de-duplicated, in order.
    `where` prefixes the fields errors name (`changes[2].`)."""
    check_language(language, field=f"{where}language")
    if fmt not in FORMATS.get(language, ()):
        raise InvalidInputError(
            f"{fmt!r} is not a {LANGUAGE_TITLES[language]} format",
            [FieldError(f"{where}format", f"must be one of {', '.join(FORMATS.get(language, ()))}")],
        )
    if not isinstance(content, str):
        raise InvalidInputError("content must be text", [FieldError(f"{where}content", "must be a string")])
    field = f"{where}content"
    try:
        raw = _READERS[fmt](content, field)
    except RecursionError:  # the JSON, TOML or YAML parser's (or a v1 lock's dependency tree's) depth
        raise _bad(field, None, "nested too deeply") from None
    names, wrong = [], []
    for name in dict.fromkeys(raw):
        spec = parse(language, name)
        if spec.kind != "registry" or spec.name is None:
            wrong.append((None, f"{name!r} is not a {LANGUAGE_TITLES[language]} package name"))
            if len(wrong) > MAX_ERRORS:  # a refusal names no more (domain.errors.named): judge no more
                break
        else:
            names.append(spec.name)
    if wrong:
        raise _refused(field, wrong)
    if len(names) > MAX_IMPORT_NAMES:
        raise _bad(field, None, f"it lists {len(names)} packages; an import may list at most {MAX_IMPORT_NAMES}")
    return list(dict.fromkeys(names))


def _bad(field: str, line: int | None, why: str) -> ImportRefusedError:
    return _refused(field, [(line, why)])


def _refused(field: str, problems: list[tuple[int | None, str]]) -> ImportRefusedError:
    """Every problem found (`(line, why)`), each a field error (a refusal names the first
    MAX_ERRORS, `domain.errors.named`, and the readers stop there); the detail says the first."""
    said = [f"line {line}: {why}" if line else why for line, why in problems]
    others = f"{len(said) - 1} more" if len(said) <= MAX_ERRORS else "more"  # reading stopped past them
    more = f" (and {others}, {NAMED_IN_ERRORS})" if len(said) > 1 else ""
    # The detail says what failed; the field errors name where, so each reader labels it its way.
    return ImportRefusedError(f"the file cannot be imported: {said[0]}{more}", [FieldError(field, s) for s in said])


_SHAPES = {dict: "an object (a mapping)", list: "a list", str: "a string"}


def _shaped(value, shape: type, field: str, what: str, optional: bool = True):
    """`value` if it has the shape the format gives `what` (None, when `optional`, reads as an
    empty one), else a refusal naming `what`: parsers hand back any JSON, TOML or YAML."""
    if value is None and optional:
        return shape()
    if not isinstance(value, shape):
        raise _bad(field, None, f"{what} must be {_SHAPES[shape]}, not {json_kind(value)}")
    return value


# -- python ---------------------------------------------------------------------------------
def _requirements(content: str, field: str) -> list[str]:
    """The names it requires; a line that requires no registry package is refused, each one."""
    names, wrong, joined, start = [], [], "", 0
    for number, line in enumerate(content.splitlines(), 1):
        joined, start = (joined + line, start or number) if joined else (line, number)
        if joined.endswith("\\"):  # pip joins a line ending in a backslash with the next
            joined = joined[:-1]
            continue
        text, joined = re.sub(r"(^|\s)#.*$", "", joined).strip(), ""
        if not text:
            continue
        spec = parse("python", text)
        kind, name, detail = spec.kind, spec.name, spec.detail
        nested = re.match(r"-(r|c|e)\b|--(requirement|constraint|editable)\b", text)
        if kind == "option" and text.startswith("-") and not nested:
            continue  # a line of index and build options names no package (after a requirement, one is refused)
        if kind != "registry" or name is None:
            wrong.append((start, f"{text!r} is not a registry requirement ({detail or kind})"))
            if len(wrong) > MAX_ERRORS:  # as above: read no further
                break
        else:
            names.append(name)
    if wrong:
        raise _refused(field, wrong)
    return names


def _toml(content: str, field: str) -> dict:
    try:
        return tomllib.loads(content)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"line (\d+)", str(error))
        raise _bad(field, int(found.group(1)) if found else None, f"not TOML: {error}") from None


def _packages(document: dict, key: str, field: str) -> list[dict]:
    packages = document.get(key)
    if not isinstance(packages, list) or not all(
        isinstance(p, dict) and isinstance(p.get("name"), str) for p in packages
    ):
        raise _bad(field, None, f"no [[{key}]] tables with a name")
    return packages


def _pylock(content: str, field: str) -> list[str]:
    packages = _packages(_toml(content, field), "packages", field)
    return [p["name"] for p in packages if not ({"directory", "vcs", "archive"} & set(p) and "wheels" not in p)]


def _uv_lock(content: str, field: str) -> list[str]:
    packages = _packages(_toml(content, field), "package", field)
    return [p["name"] for p in packages if not (set(_source(p, field)) & set(_LOCAL_SOURCES))]


def _poetry_lock(content: str, field: str) -> list[str]:
    packages = _packages(_toml(content, field), "package", field)
    return [p["name"] for p in packages if _source(p, field).get("type") in (None, "legacy")]


def _source(package: dict, field: str) -> dict:
    return _shaped(package.get("source"), dict, field, f"the source of {package['name']}")


# -- node -----------------------------------------------------------------------------------
def _json(content: str, field: str) -> dict:
    try:
        document = json.loads(content)
    except ValueError as error:
        raise _bad(field, getattr(error, "lineno", None), f"not JSON: {getattr(error, 'msg', error)}") from None
    if not isinstance(document, dict):
        raise _bad(field, 1, "not a JSON object")
    return document


def _registry_name(name: str, wanted, field: str, line: int | None = None) -> str | None:
    """The registry package a manifest's `name: range` installs (an alias: its target); None for
    a local, git or URL source. A name npm would refuse is refused, never dropped unsaid."""
    if parse("node", name).kind != "registry":
        raise _bad(field, line, f"{name!r} is not a {LANGUAGE_TITLES['node']} package name")
    if not isinstance(wanted, str):
        return None
    if wanted.startswith(_NPM_ALIAS):
        target = wanted[len(_NPM_ALIAS) :]
        return target[: target.rindex("@")] if target.rfind("@") > 0 else target
    return name if parse("node", f"{name}@{wanted}" if wanted else name).kind == "registry" else None


def _package_json(content: str, field: str) -> list[str]:
    document, names = _json(content, field), []
    for key in ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies"):
        declared = _shaped(document.get(key), dict, field, key)
        for name, wanted in declared.items():
            _shaped(wanted, str, field, f"{key}.{name}", optional=False)
            names += filter(None, [_registry_name(name, wanted, field)])
    return names


def _package_lock(content: str, field: str) -> list[str]:
    document = _json(content, field)
    if "packages" in document:  # lockfileVersion 2 and 3
        names = []
        for path, entry in _shaped(document["packages"], dict, field, "packages").items():
            entry = _shaped(entry, dict, field, f"packages[{path!r}]", optional=False)
            name = _shaped(entry.get("name"), str, field, f"packages[{path!r}].name")
            if "node_modules/" in path and not entry.get("link"):
                names.append(name or path.rpartition("node_modules/")[2])
        return names
    names = []
    _v1_dependencies(_shaped(document.get("dependencies"), dict, field, "dependencies"), names, field, "dependencies")
    return names


def _v1_dependencies(tree: dict, names: list, field: str, where: str) -> None:
    for name, entry in tree.items():
        entry = _shaped(entry, dict, field, f"{where}.{name}", optional=False)
        names += filter(
            None, [_registry_name(name, _shaped(entry.get("version"), str, field, f"{where}.{name}.version"), field)]
        )
        inner = f"{where}.{name}.dependencies"
        _v1_dependencies(_shaped(entry.get("dependencies"), dict, field, inner), names, field, inner)


def _yaml(content: str, field: str) -> dict:
    import yaml  # here: only pnpm lock files need PyYAML, and every worker's start would pay its import

    try:
        document = yaml.safe_load(content)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise _bad(field, mark.line + 1 if mark else None, f"not YAML: {getattr(error, 'problem', error)}") from None
    if not isinstance(document, dict):
        raise _bad(field, 1, "not a YAML mapping")
    return document


def _name_at(key: str) -> str:
    """`@scope/name@1.0.0(peer@2)` or `/name@1.0.0` (pnpm 6+) or `/name/1.0.0` (pnpm 5): the name."""
    key = key.split("(", 1)[0].lstrip("/")
    at = key.rfind("@")
    return key[:at] if at > 0 else key.rsplit("/", 1)[0]


def _pnpm_lock(content: str, field: str) -> list[str]:
    packages = _shaped(_yaml(content, field).get("packages"), dict, field, "packages")
    return [_name_at(str(key)) for key in packages]


def _yarn_lock(content: str, field: str) -> list[str]:
    if "__metadata:" in content:  # yarn 2+ (berry): YAML with a `resolution` per entry
        names = []
        for key, entry in _yaml(content, field).items():
            if key != "__metadata":
                entry = _shaped(entry, dict, field, f"the entry {key!r}", optional=False)
                resolution = _shaped(entry.get("resolution"), str, field, f"the resolution of {key!r}")
                names += [_name_at(resolution)] if "@npm:" in resolution else []
        return names
    return _yarn_v1(content, field)


def _yarn_v1(content: str, field: str) -> list[str]:
    """yarn 1's own format: an unindented header of comma-separated `name@range` keys ending
    in `:`, then its indented fields. Only headers are read (the fields hold versions)."""
    names = []
    for number, line in enumerate(content.splitlines(), 1):
        if not line.strip() or line.startswith((" ", "#")):
            continue
        if not line.endswith(":"):
            raise _bad(field, number, f"{line[:80]!r} is not a yarn.lock entry header")
        for key in line[:-1].split(","):
            key = key.strip().strip('"')
            name, _, wanted = key[1:].partition("@")
            name = key[0] + name if key else ""
            if not name:
                raise _bad(field, number, f"{key!r} names no package")
            names += filter(None, [_registry_name(name, wanted, field, number)])  # git, file:, URLs left out
    return names


_READERS = {
    "requirements.txt": _requirements,
    "pylock.toml": _pylock,
    "uv.lock": _uv_lock,
    "poetry.lock": _poetry_lock,
    "package.json": _package_json,
    "package-lock.json": _package_lock,
    "pnpm-lock.yaml": _pnpm_lock,
    "yarn.lock": _yarn_lock,
}
