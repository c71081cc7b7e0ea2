"""The npm dependency closure: which packages npm 7+ would install for some specs.

Pure over the callables the interface provides: `packument(name)` (the registry's document, or
None when it has no such package) and `times(name)` (the full packument's `time`, read only when
a version may be hidden: `hide`, then chosen among the versions the index would show, its
`latest` tag moved as the index moves it). npm installs a version per range (several versions of one
name may sit in one tree), so each (name, range) is resolved on its own, as npm-pick-manifest
does: the `latest` tag when it satisfies, else the highest satisfying version (node-semver,
prereleases only where the range names one). Followed: `dependencies`, `optionalDependencies`
and `peerDependencies` (npm 7+ installs peers) except peers marked optional in
`peerDependenciesMeta`. Aliases (`npm:other@range`) are followed to the package they name;
other sources (git, URLs, files) have no registry closure and are reported in `unresolved`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from application.closure.graph import Budget, Graph, Hide, memo, shows_all
from application.index.facts import npm_version
from domain.errors import FieldError, InvalidInputError
from domain.specs import parse
from domain.specs.node_ranges import pick, repoint
from domain.specs.node_semver import valid_range

DEPENDENCY_FIELDS = ("dependencies", "optionalDependencies", "peerDependencies")
_ALIAS = "npm:"


def roots(specs: list[str]) -> list[tuple[str, str]]:
    """(name, range) per registry spec; a bare name asks for the `latest` tag, as npm does."""
    found, errors = [], []
    for i, text in enumerate(specs):
        spec = parse("node", text)
        if spec.kind not in ("registry", "alias") or not spec.name:
            errors.append(FieldError(f"specs[{i}]", "must be a registry spec such as left-pad@^1.3"))
            continue
        wanted = text.rpartition(spec.name)[2].removeprefix("@")
        found.append((spec.name, wanted or "latest"))
    if errors:
        raise InvalidInputError("every spec must name a registry package", errors)
    return found


def resolve(
    specs: list[str], packument: Callable, budget: Budget, hide: Hide = shows_all, times: Callable = lambda name: None
) -> dict:
    graph = Graph(budget)
    packument, times = memo(packument, budget), memo(times, budget)
    queue = deque((name, wanted, None) for name, wanted in roots(specs))
    done: set[tuple[str, str]] = set()
    while queue:
        name, wanted, by = queue.popleft()
        graph.reach(name, by)
        if (name, wanted) in done:
            continue
        done.add((name, wanted))
        version, manifest = _choose(name, wanted, packument, times, hide, graph)
        if version is not None:
            graph.nodes[name].versions.add(version)
            queue.extend((*edge, name) for edge in _edges(name, manifest, graph))
    return graph.answer()


def _choose(name: str, wanted: str, packument, times, hide: Hide, graph: Graph) -> tuple[str | None, dict]:
    document = packument(name)
    if document is None:
        graph.cannot_follow(name, wanted, "the upstream registry has no such package")
        return None, {}
    versions = document.get("versions") if isinstance(document.get("versions"), dict) else {}
    tags = document.get("dist-tags") if isinstance(document.get("dist-tags"), dict) else {}
    manifests = {v: m for v, m in versions.items() if isinstance(m, dict)}
    hidden = hide(name, lambda: {v: npm_version(v, m, times(name)) for v, m in manifests.items()})
    shown = {v: m for v, m in versions.items() if v not in hidden}
    version = _pick(shown, repoint(tags, shown) if hidden else tags, wanted)
    if version is None:
        refused = _pick(versions, tags, wanted) if hidden else None
        if refused in hidden:
            graph.refuse(name, wanted, hidden[refused])
        else:
            graph.cannot_follow(name, wanted, "no version satisfies this range")
        return None, {}
    manifest = versions[version]
    return version, manifest if isinstance(manifest, dict) else {}


def _pick(versions: dict, tags: dict, wanted: str) -> str | None:
    """A dist-tag's version, or the one npm picks for a range."""
    if wanted in tags and not valid_range(wanted):
        return tags[wanted] if tags[wanted] in versions else None
    return pick(list(versions), wanted, tags.get("latest"))


def _edges(name: str, manifest: dict, graph: Graph) -> list[tuple[str, str]]:
    meta = manifest.get("peerDependenciesMeta")
    optional_peers = (
        {k for k, v in meta.items() if isinstance(v, dict) and v.get("optional")} if isinstance(meta, dict) else set()
    )
    edges = []
    for field in DEPENDENCY_FIELDS:
        declared = manifest.get(field)
        for dependency, wanted in declared.items() if isinstance(declared, dict) else ():
            if field == "peerDependencies" and dependency in optional_peers:
                continue
            edge = _edge(dependency, wanted if isinstance(wanted, str) else "", name, graph)
            if edge is not None:
                edges.append(edge)
    return edges


def _edge(dependency: str, wanted: str, by: str, graph: Graph) -> tuple[str, str] | None:
    """(registry name, range) for a declared dependency; None (reported) for other sources."""
    if wanted.startswith(_ALIAS):
        target, at, target_range = wanted[len(_ALIAS) :].rpartition("@")
        if not target:  # `npm:name` or `npm:@scope/name`, without a range
            return wanted[len(_ALIAS) :], "latest"
        return target, target_range or "latest"
    if wanted.strip() in ("", "*", "latest") or valid_range(wanted):
        return dependency, wanted.strip() or "*"
    spec = parse("node", f"{dependency}@{wanted}")
    if spec.kind == "registry":  # a dist-tag such as `next`
        return dependency, wanted
    graph.cannot_follow(dependency, wanted, f"{by} declares it from a {spec.kind} source, not the registry")
    return None
