"""The Python dependency closure: which projects pip would install for some requirements.

Pure over two callables the interface provides: `page(name)` (the project's PEP 691 page as a
dict with absolute file URLs, each file with the `version` its name gives, or None when upstream
has no such project) and `requires(url)`
(the `Requires-Dist` values of a wheel's PEP 658 metadata file). Like pip through the index it
picks, among the files the index would not hide (`hide`), per project, the newest version every
requirement on it allows (PEP 440; prereleases only when a
specifier names one or nothing else matches; yanked files only for an `==` pin; files whose
`Requires-Python` excludes the target skipped) and follows `Requires-Dist` whose markers hold
for the target environment, with extras only where a requirement names them.

pip backtracks; this does not. It walks in passes, each starting from every constraint the
previous pass met, until the choices stop changing: for trees without conflicts this is pip's
answer, and a conflict it cannot settle is reported in `unresolved` rather than guessed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from application.closure.graph import Budget, Graph, Hide, memo, shows_all
from application.index.facts import python_file
from domain.errors import FieldError, InvalidInputError
from domain.specs import parse

MAX_PASSES = 8


class Target:
    """The environment markers and wheel tags judged: the service's own, unless configured."""

    def __init__(self, markers: dict[str, str], tags: frozenset[Tag]):
        self.markers, self.tags = markers, tags
        self.python = Version(markers["python_full_version"])

    def holds(self, marker: Marker | None, extras: frozenset[str]) -> bool:
        if marker is None:
            return True
        return any(marker.evaluate({**self.markers, "extra": extra}) for extra in ("", *sorted(extras)))


def roots(specs: list[str]) -> list[Requirement]:
    """The asked-for requirements: registry specs only (a URL or path has no closure to look up)."""
    found, errors = [], []
    for i, text in enumerate(specs):
        spec = parse("python", text)
        try:
            requirement = Requirement(text) if spec.kind == "registry" else None
        except InvalidRequirement:
            requirement = None
        if requirement is None:
            errors.append(FieldError(f"specs[{i}]", "must be a registry requirement such as pandas>=2"))
        else:
            found.append(requirement)
    if errors:
        raise InvalidInputError("every spec must name a registry package", errors)
    return found


def resolve(
    specs: list[str], page: Callable, requires: Callable, target: Target, budget: Budget, hide: Hide = shows_all
) -> dict:
    asked = [r for r in roots(specs) if target.holds(r.marker, frozenset())]
    page, requires = memo(page, budget), memo(requires, budget)
    constraints: dict[str, tuple[SpecifierSet, frozenset[str]]] = {}
    choices: dict | None = None
    for _ in range(MAX_PASSES):
        graph, met, chosen = _walk(asked, constraints, page, requires, target, budget, hide)
        if chosen == choices:
            break
        constraints, choices = met, chosen
    return graph.answer()


def _walk(asked, previous, page, requires, target, budget, hide):
    """One breadth-first pass; each project's version chosen from every constraint met so far."""
    graph, met, chosen = Graph(budget), {}, {}
    queue = deque((r, None) for r in asked)
    while queue:
        requirement, by = queue.popleft()
        name = canonicalize_name(requirement.name)
        graph.reach(name, by)
        specifier, extras = met.get(name, previous.get(name, (SpecifierSet(), frozenset())))
        met[name] = (specifier & requirement.specifier, extras | _extras(requirement))
        if name in chosen and met[name] == (specifier, extras):
            continue  # nothing new about this project
        version, needs = _choose(name, *met[name], page, requires, target, graph, hide)
        chosen[name] = version
        if version is not None:
            graph.nodes[name].versions = {version}
        queue.extend((need, name) for need in needs)
    return graph, met, chosen


def _extras(requirement: Requirement) -> frozenset[str]:
    return frozenset(canonicalize_name(e) for e in requirement.extras)


def _choose(name, specifier, extras, page, requires, target, graph, hide) -> tuple[str | None, list[Requirement]]:
    found = page(name)
    if found is None:
        graph.cannot_follow(name, str(specifier), "the upstream index has no such project")
        return None, []
    hidden = hide(name, lambda: {f["filename"]: python_file(f, f["version"]) for f in found["files"] if f["version"]})
    versions = _installable([f for f in found["files"] if f.get("filename") not in hidden], specifier, target)
    candidates = sorted(specifier.filter(versions), reverse=True)
    if not candidates:
        every = _installable(found["files"], specifier, target)
        if hidden and (refused := sorted(specifier.filter(every), reverse=True)):
            graph.refuse(name, str(specifier) or "any", hidden[every[refused[0]][0]["filename"]])
        else:
            graph.cannot_follow(name, str(specifier) or "any", "no release satisfies every requirement on it")
        return None, []
    version = candidates[0]
    wheel = _wheel_with_metadata(versions[version], target)
    if wheel is None:
        graph.cannot_follow(
            name,
            f"=={version}",
            "no wheel for the target whose metadata the upstream serves apart (PEP 658): "
            "its dependencies would be known only from the whole file or a build",
        )
        return str(version), []
    needs = []
    for line in requires(wheel["url"] + ".metadata"):
        try:
            needed = Requirement(line)
        except InvalidRequirement:
            graph.cannot_follow(name, line, "its metadata declares a requirement that is not PEP 508")
            continue
        if target.holds(needed.marker, extras):
            needs.append(needed)
    return str(version), needs


def _installable(files: list[dict], specifier: SpecifierSet, target: Target) -> dict[Version, list[dict]]:
    """Files by version, leaving out what pip would not install for the target."""
    pinned = any(s.operator in ("==", "===") for s in specifier)
    versions: dict[Version, list[dict]] = {}
    for entry in files:
        version = _file_version(entry.get("version"))
        if version is None or (entry.get("yanked") and not pinned):
            continue
        requires_python = entry.get("requires-python")
        if requires_python and not _python_ok(requires_python, target.python):
            continue
        versions.setdefault(version, []).append(entry)
    return versions


def _python_ok(text: str, python: Version) -> bool:
    try:
        return SpecifierSet(text).contains(python, prereleases=True)
    except ValueError:
        return True  # pip ignores a Requires-Python it cannot parse


def _file_version(text) -> Version | None:
    try:
        return Version(text) if isinstance(text, str) else None
    except InvalidVersion:
        return None


def _wheel_with_metadata(files: list[dict], target: Target) -> dict | None:
    """A wheel the target could install whose PEP 658 metadata upstream serves."""
    for entry in files:
        filename = entry.get("filename", "")
        if not filename.endswith(".whl") or not entry.get("core-metadata", entry.get("dist-info-metadata")):
            continue
        try:
            tags = parse_wheel_filename(filename)[3]
        except ValueError:
            continue
        if tags & target.tags:
            return entry
    return None
