"""What a Python project declares, read with a TOML/JSON parser (never by pattern): the
requirements it will install (so URL requirements are judged before any client fetches them
directly) and the indexes or sources its files name besides the service's. The project clients
(uv, pdm, poetry, pipenv) work on the project they find from the working directory up, and uv and
pdm on its whole workspace: the gate finds them as each client does (`project_folder`,
`uv_workspace`, `pdm_workspace`) and reads those, never the working directory's files instead.

Standard library only, like the whole gate (TOML needs Python 3.11's tomllib; without it a project
file cannot be read, and the gate fails closed).
"""

from __future__ import annotations

import fnmatch
import glob
import itertools
import json
import os
import pathlib
import re
import urllib.parse

from ...files import ancestors, nearest, read_regular
from ...service import CannotVerify

try:
    import tomllib
except ImportError:  # Python before 3.11
    tomllib = None


# A workspace (uv's, pdm's) can name any number of members, each pyproject.toml any size: the gate
# reads at most this many paths matched by one workspace's `members` patterns, and at most this
# many bytes of any pyproject.toml (more is refused, exit 4).
MAX_MEMBERS = 1000
MAX_PYPROJECT_BYTES = 1 << 20
MAX_RECURSIVE = 8  # `**/` in one uv workspace pattern: each may match no folder too (2**n spellings)

# How each project client finds its project, from the working directory up (the gate clears the
# variables and refuses the options that would move it): (its file, how it tests a folder's,
# how many folders it looks at). uv and pipenv want a file (a link to one is followed); pdm and
# poetry take anything of that name (Path.exists: a folder too), and lexists covers that: a
# dangling link stops the gate too, which then cannot read it and refuses. pipenv looks at the
# working directory and 9 above (its default PIPENV_MAX_DEPTH, 10, plus one, tested with `<`).
PROJECT_FILES = {
    "uv": ("pyproject.toml", os.path.isfile, None),
    "pdm": ("pyproject.toml", os.path.lexists, None),
    "poetry": ("pyproject.toml", os.path.lexists, None),
    "pipenv": ("Pipfile", os.path.isfile, 10),
}


def toml(path: str, limit: int | None = None) -> dict:
    """The file's TOML document; {} when there is no such file."""
    if not os.path.lexists(path):
        return {}
    if tomllib is None:
        raise CannotVerify(f"reading {path} needs Python 3.11 or later (tomllib) for the gate")
    try:
        return tomllib.loads(read_regular(path, limit).decode("utf-8"))
    except (OSError, ValueError) as error:
        raise CannotVerify(f"cannot read {path}: {error}") from None


def pyproject(folder: str) -> dict:
    """The folder's pyproject.toml ({} when it has none), at most MAX_PYPROJECT_BYTES."""
    return toml(os.path.join(folder, "pyproject.toml"), MAX_PYPROJECT_BYTES)


def requirements(cwd: str, document: dict | None = None) -> list[str]:
    """Every requirement pyproject.toml (`document`, when already read) and a Pipfile declare:
    dependencies, optional dependencies, dependency groups, build requirements, uv's overrides and
    constraints, PDM's dev dependencies and overrides, Poetry's dependency tables and plugins, a
    Pipfile's packages. A dependency given as a table (`{url = ...}`, `{git = ...}`, `{path =
    ...}`) becomes `name @ ...`, which the service refuses as a direct reference; one given as a
    version is judged by its name."""
    document = pyproject(cwd) if document is None else document
    project, tool = document.get("project", {}), document.get("tool", {})
    _check_metadata_is_read(document, project, tool, os.path.join(cwd, "pyproject.toml"))
    found = list(project.get("dependencies", ()))
    for group in project.get("optional-dependencies", {}).values():
        found += group
    for group in document.get("dependency-groups", {}).values():
        found += [r for r in group if isinstance(r, str)]  # {include-group = ...} names another group
    found += document.get("build-system", {}).get("requires", ())
    uv = tool.get("uv", {})
    for key in UV_REQUIREMENT_KEYS:  # UV_NO_CONFIG leaves pyproject's [tool.uv] to uv
        found += uv.get(key, ())
    for group in tool.get("pdm", {}).get("dev-dependencies", {}).values():
        found += group
    found += _named(tool.get("pdm", {}).get("resolution", {}).get("overrides", {}))
    poetry = tool.get("poetry", {})
    for table in (poetry.get("dependencies", {}), poetry.get("dev-dependencies", {})):
        found += _named({k: v for k, v in table.items() if k != "python"})
    for group in poetry.get("group", {}).values():
        found += _named(group.get("dependencies", {}) if isinstance(group, dict) else {})
    found += _named(poetry.get("requires-plugins", {}))  # poetry installs them before it resolves
    pipfile = toml(os.path.join(cwd, "Pipfile"))
    found += _named(pipfile.get("packages", {})) + _named(pipfile.get("dev-packages", {}))
    if not all(isinstance(r, str) for r in found):
        raise CannotVerify(f"{os.path.join(cwd, 'pyproject.toml')} holds a requirement that is not a string")
    return found


# [tool.uv] keys whose requirements uv installs or resolves with (pyproject's, which
# UV_NO_CONFIG does not drop): overrides and constraints may name a URL.
UV_REQUIREMENT_KEYS = ("dev-dependencies", "override-dependencies", "constraint-dependencies")
UV_REQUIREMENT_KEYS += ("build-constraint-dependencies",)
# How Poetry, PDM and Pipenv name a dependency fetched from elsewhere than an index.
DIRECT_KEYS = {"url": "", "file": "", "git": "git+", "path": "file:", "hg": "hg+", "svn": "svn+", "bzr": "bzr+"}


def _named(table: object) -> list:
    """`{name: spec}` tables as requirement strings: a table naming a URL, file, path or VCS as
    `name @ ...`, a URL-like string too (PDM's overrides), anything else by its name."""
    if not isinstance(table, dict):
        raise CannotVerify(f"a dependency table is not a table: {table!r}")
    found = []
    for name, spec in table.items():
        direct = [DIRECT_KEYS[k] + str(spec[k]) for k in DIRECT_KEYS if isinstance(spec, dict) and k in spec]
        if isinstance(spec, str) and ("://" in spec or spec.startswith(("file:", "git+"))):
            direct.append(spec)
        found.append(f"{name} @ {direct[0]}" if direct else str(name))
    return found


def _check_metadata_is_read(document: dict, project: dict, tool: dict, path: str) -> None:
    """Refuse a project whose requirements its build backend decides: declared `dynamic`, or no
    [project] table where the backend is not Poetry's (whose table is read here). A backend that
    writes other requirements than [project] declares is not caught here: a URL it names is
    fetched by the installer, which in a locked-down sandbox reaches only the index and the
    egress proxy."""
    why = None
    if "dependencies" in project.get("dynamic", ()):
        why = "declares its dependencies as dynamic"
    elif document and not project and "poetry" not in tool:
        why = "has no [project] table, so its build backend decides what it requires"
    if why:
        raise CannotVerify(
            f"{path} {why}: the gate cannot read its requirements before the backend runs; "
            "list them in [project] dependencies"
        )


def project_folder(kind: str, cwd: str) -> str:
    """The folder whose project the client `kind` works on from `cwd` (PROJECT_FILES): the nearest
    holding its file, else `cwd` itself (pdm and pipenv then start a project there; uv and poetry
    fail)."""
    name, there, depth = PROJECT_FILES[kind]
    return nearest(ancestors(cwd)[:depth], name, there) or os.path.abspath(cwd)


def pipenv_import(cwd: str) -> str | None:
    """The requirements.txt pipenv imports into a new Pipfile, its index options becoming sources,
    when the Pipfile it finds from `cwd` is missing or empty: the nearest, from `cwd` up, within
    pipenv's depth. None when the Pipfile has content, or there is no such file."""
    pipfile = os.path.join(project_folder("pipenv", cwd), "Pipfile")
    if os.path.isfile(pipfile) and os.path.getsize(pipfile):
        return None
    _, _, depth = PROJECT_FILES["pipenv"]
    folder = nearest(ancestors(cwd)[:depth], "requirements.txt", os.path.isfile)
    return os.path.join(folder, "requirements.txt") if folder else None


def project_requirements(kind: str, cwd: str) -> list[str]:
    """Every requirement the project client `kind` installs from the project it finds from `cwd`:
    its whole workspace's for uv and pdm (`workspace_requirements`), the project's for the others."""
    if kind in WORKSPACES:
        return workspace_requirements(WORKSPACES[kind](cwd)[1])
    return requirements(project_folder(kind, cwd))


def workspace_requirements(found: dict[str, dict]) -> list[str]:
    """Every requirement of the projects of a workspace ({folder: its pyproject.toml}), as
    `requirements` reads one, less those naming one of them by name alone: uv and pdm install that
    one from its folder, never from the index (a URL one is still judged)."""
    own = {_normalized(str(d.get("project", {}).get("name", ""))) for d in found.values()}
    return [r for folder, d in found.items() for r in requirements(folder, d) if _named_project(r) not in own]


def uv_workspace(cwd: str) -> tuple[str, dict[str, dict]]:
    """(root, {folder: its pyproject.toml}) of the workspace `uv sync|lock|add` works on in `cwd`,
    found as uv finds it. The project is the nearest folder, from `cwd` up, holding a
    pyproject.toml (whatever it declares). The workspace root is the project when it declares
    [tool.uv.workspace]; else, for a project with a [project] table, the next folder above holding
    a pyproject.toml, when that one declares a workspace whose `members` include the project and
    whose `exclude` does not; else the project. The folders: the root, each member (a folder a
    `members` pattern matches, less those `exclude` matches, that holds a pyproject.toml) and the
    project. No folders when no folder up holds a pyproject.toml (uv finds no project, and fails)."""
    project = project_folder("uv", cwd)
    if not _has_pyproject(project):
        return project, {}
    found = {project: pyproject(project)}
    root, workspace = project, _uv_workspace_table(found[project], project)
    if workspace is None and "project" in found[project]:  # a member looks for its workspace above
        above = nearest(ancestors(project)[1:], "pyproject.toml", os.path.isfile)
        document = pyproject(above) if above else {}
        table = _uv_workspace_table(document, above) if above else None
        if table is not None and _uv_includes(table, above, project):
            root, workspace = above, table
            found[above] = document
    for member in _uv_members(root, workspace) if workspace else ():
        found.setdefault(member, pyproject(member))
    return root, {folder: found[folder] for folder in sorted(found, key=lambda f: f != root)}


def _has_pyproject(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "pyproject.toml"))  # as uv tests it: a link is followed


def _uv_workspace_table(document: dict, folder: str) -> dict | None:
    """The folder's [tool.uv.workspace] as {"members": [...], "exclude": [...]}; None without one."""
    table = document.get("tool", {}).get("uv", {}).get("workspace")
    if table is None:
        return None
    lists = {key: table.get(key, []) for key in ("members", "exclude")} if isinstance(table, dict) else {}
    if not lists or not all(isinstance(v, list) and all(isinstance(p, str) for p in v) for v in lists.values()):
        raise CannotVerify(f"{folder}/pyproject.toml: [tool.uv.workspace] members and exclude are not lists of paths")
    return lists


def _uv_pattern(root: str, pattern: str) -> str:
    """A workspace pattern as uv spells it: relative to the root (written literally), `.` and
    inner `..` resolved in the pattern's own words."""
    return os.path.normpath(os.path.join(glob.escape(root), os.path.normpath(pattern)))


def _uv_excludes(workspace: dict, root: str, path: str) -> bool:
    """Whether an `exclude` pattern matches `path` as uv's does (Rust's `glob::Pattern`, default
    options): `*` and `?` match a `/` too, as fnmatch's, and `**/` also matches no folder."""
    for pattern in workspace["exclude"]:
        parts = _uv_pattern(root, pattern).split("**/")
        if len(parts) > MAX_RECURSIVE + 1:
            raise CannotVerify(f"the uv workspace pattern {pattern!r} has more than {MAX_RECURSIVE} '**/'")
        for spelled in itertools.product(("**/", ""), repeat=len(parts) - 1):
            if fnmatch.fnmatchcase(path, "".join(p + s for p, s in zip(parts, (*spelled, ""), strict=True))):
                return True
    return False


def _uv_includes(workspace: dict, root: str, project: str) -> bool:
    """Whether the workspace has the project: a path its `members` patterns match (as a folder
    walk matches them, so `*` stays within a folder), which `exclude` does not."""
    return project in _uv_matched(root, workspace) and not _uv_excludes(workspace, root, project)


def _uv_members(root: str, workspace: dict) -> list[str]:
    """The folders the workspace's `members` patterns match, less those `exclude` matches, that
    hold a pyproject.toml."""
    return [p for p in _uv_matched(root, workspace) if _has_pyproject(p) and not _uv_excludes(workspace, root, p)]


def _uv_matched(root: str, workspace: dict) -> list[str]:
    """Every path the `members` patterns match (hidden ones too, as uv's glob), at most MAX_MEMBERS."""
    found = []
    for pattern in workspace["members"]:
        for path in glob.iglob(_uv_pattern(root, pattern), recursive=True, include_hidden=True):
            found.append(os.path.normpath(path))
            if len(found) > MAX_MEMBERS:
                raise CannotVerify(f"the uv workspace {root} matches more than {MAX_MEMBERS} member paths")
    return found


def pdm_workspace(cwd: str) -> tuple[str, dict[str, dict]]:
    """(root, {folder: its pyproject.toml}) of the project pdm works on in `cwd` and of its
    workspace (pdm 2.28 and later), found as pdm finds them. The project: `project_folder`. Its
    workspace root: the nearest folder above it holding a pyproject.toml whose [tool.pdm.workspace]
    has the project among its members (`_pdm_members`); else the project. The folders: the root,
    its members and the project. From the root, pdm installs every member (an implicit editable
    requirement); from a member, `pdm add` locks the member and every member into the root's lock."""
    project = project_folder("pdm", cwd)
    found = {project: pyproject(project)}
    root = project
    for folder in ancestors(project)[1:]:  # every folder above holding one, as pdm reads them
        if os.path.lexists(os.path.join(folder, "pyproject.toml")):
            document = pyproject(folder)
            if os.path.realpath(project) in _pdm_members(folder, document):
                root, found[folder] = folder, document
                break
    for member in _pdm_members(root, found[root]):
        found.setdefault(member, pyproject(member))
    return root, {folder: found[folder] for folder in sorted(found, key=lambda f: f != root)}


def _pdm_members(root: str, document: dict) -> list[str]:
    """The members of the workspace a pyproject.toml declares in [tool.pdm.workspace] ([] without
    one), as pdm lists them: each `members` entry is a path below the root, or a glob (pathlib's,
    hidden folders matched too) when it holds `*`, `?` or `[`; links are resolved, and each member
    is a folder holding a pyproject.toml file. At most MAX_MEMBERS paths are matched."""
    table = document.get("tool", {}).get("pdm", {}).get("workspace")
    if not table:
        return []
    members = table.get("members", []) if isinstance(table, dict) else None
    if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        raise CannotVerify(f"{root}/pyproject.toml: [tool.pdm.workspace] members is not a list of paths")
    found, matched = [], 0
    for pattern in members:
        try:
            glob_ = any(c in pattern for c in "*?[")
            for path in pathlib.Path(root).glob(pattern) if glob_ else [pathlib.Path(root, pattern)]:
                matched += 1
                if matched > MAX_MEMBERS:
                    raise CannotVerify(f"the pdm workspace {root} matches more than {MAX_MEMBERS} member paths")
                path = path.resolve()
                if path.is_dir() and (path / "pyproject.toml").is_file() and str(path) not in found:
                    found.append(str(path))
        except (NotImplementedError, ValueError, RuntimeError, OSError) as error:  # pdm fails on these too
            raise CannotVerify(f"{root}/pyproject.toml: the pdm workspace member {pattern!r}: {error}") from None
    return found


# The clients that work on a whole workspace: (root, {folder: its pyproject.toml}) from the working directory.
WORKSPACES = {"uv": uv_workspace, "pdm": pdm_workspace}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# A requirement by name alone: a PEP 508 name, extras, versions and markers, no direct reference.
NAMED = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)[^@]*\Z")


def _named_project(requirement: str) -> str | None:
    found = NAMED.match(requirement)
    return _normalized(found.group(1)) if found else None


# What an index URL may hold: RFC 3986's unreserved and sub-delimiter characters, ':', '/', '[',
# ']', '%' and one '@'. Beyond that, the gate's reading (urlsplit) and a client's may part: urllib3
# (pip, pipenv, poetry) ends the host at a backslash where urlsplit reads on to an '@' after it,
# and uv (Rust's url) reads one as '/'; urlsplit drops tabs and line breaks; with a second '@', a
# query or a fragment, where the host ends, or where a client adds a project's path, is each one's.
URL_CHARACTERS = r"-A-Za-z0-9._~!$&'()*+,;=:/\[\]%"  # '-' first: a character of its own, not a range
PLAIN_URL = re.compile(rf"[{URL_CHARACTERS}]*(@[{URL_CHARACTERS}]*)?")
ODD_CHARACTER = re.compile(rf"[^{URL_CHARACTERS}@]")


def unclear(url: str) -> str | None:
    """Why clients might read the index URL `url` otherwise than the gate, or None."""
    if PLAIN_URL.fullmatch(url):
        return None
    odd = ODD_CHARACTER.search(url)
    return (
        f"holds {repr(odd.group()) if odd else 'more than one @'}: URL parsers read such a URL in different ways; "
        "write it in plain ASCII (letters, digits, -._~!$&'()*+,;=:/[]% and one '@'), without a query or fragment"
    )


def same_index(url: str, index: str) -> bool:
    """Whether `url` is the service's index (credentials and a trailing slash aside), read so by
    every client (`unclear`)."""

    def bare(text: str) -> tuple:
        parts = urllib.parse.urlsplit(text)
        return (parts.scheme.lower(), parts.netloc.rpartition("@")[2].lower(), parts.path.rstrip("/"))

    return unclear(url) is None and bare(url) == bare(index)


def declared_sources(folder: str, kind: str) -> list[tuple[str, str]]:
    """(where, url) of each index the project files of `folder` name for `kind`: poetry's
    sources; pdm's, and a project pdm.toml's [pypi] entries; a Pipfile's [[source]]. `where` names
    the file by its path (the client may have found it above the working directory)."""
    if kind == "pipenv":
        path = os.path.join(folder, "Pipfile")
        return [(f"{path} [[source]]", str(s.get("url", ""))) for s in toml(path).get("source", ())]
    path = os.path.join(folder, "pyproject.toml")
    found = [
        (f"{path} [[tool.{kind}.source]]", s.get("url", ""))
        for s in pyproject(folder).get("tool", {}).get(kind, {}).get("source", ())
    ]
    if kind == "pdm":  # a project's own PDM settings
        path = os.path.join(folder, "pdm.toml")
        pdm = toml(path).get("pypi", {})
        found += [(f"{path} [pypi.{k}]", v.get("url", "")) for k, v in pdm.items() if isinstance(v, dict)]
        found += [(f"{path} pypi.url", pdm["url"])] if isinstance(pdm.get("url"), str) else []
    return [(where, str(url)) for where, url in found]


def pipfile_lock(path: str) -> dict:
    """The Pipfile.lock at `path` ({} when there is none)."""
    if not os.path.lexists(path):
        return {}
    try:
        document = json.loads(read_regular(path).decode("utf-8"))
    except (OSError, ValueError) as error:
        raise CannotVerify(f"cannot read {path}: {error}") from None
    if not isinstance(document, dict):
        raise CannotVerify(f"cannot read {path}: not a JSON object")
    return document


def pipfile_lock_sources(lock: dict) -> list[str]:
    """The indexes a Pipfile.lock (`pipfile_lock`) names in `_meta.sources`."""
    meta = lock.get("_meta", {})
    return [str(s.get("url", "")) for s in meta.get("sources", ()) if isinstance(s, dict)]
