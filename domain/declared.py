"""What a version declares beyond the registry: its dependencies that are not registry packages,
each judged exactly as the same spec is judged on the command line.

A package manager fetches a URL, git, path or tarball dependency itself, never through the
index, so a deny-listed package could ride in on an allowed one's metadata. The index reads a
version's declared dependencies where it has them (an npm manifest; a wheel's core metadata; an
sdist's PKG-INFO and its build requirements), and a version that declares a refused one is
hidden. Hiding a version is not a denial of its project: a resolver may still pick another
version that declares nothing of the kind.

Registry dependencies (ranges, dist-tags, npm aliases of registry packages) are not judged
here: the client fetches them through the index, which judges them then.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from domain.decision import DecisionRecord, Verdict, judge
from domain.limits import MAX_TEXT
from domain.policy import LanguageRules
from domain.specs import Spec, make_spec, parse

# The manifest fields npm and pnpm install from (devDependencies are the root project's only).
NPM_FIELDS = ("dependencies", "optionalDependencies", "peerDependencies")
# Names a version carries inside its own tarball (npm reads either spelling; `true`: every one of
# its dependencies), and the names the index found under its tarball's `node_modules` (None: the
# tarball could not be read): installed without a fetch, so judged here by name, as `/evaluate`
# judges a name. Only a refused one is recorded: an allowed one is part of the allowed tarball.
IN_TARBALL = "its tarball's node_modules"
# The projects a wheel installs besides its own (another project's `.dist-info` where installed
# projects live): pip and uv install them from the wheel, so each is judged by name too.
IN_WHEEL = "its wheel's .dist-info"
BUNDLED_FIELDS = ("bundleDependencies", "bundledDependencies", IN_TARBALL, IN_WHEEL)
WHEEL_UNREAD = "puts on sys.path what the index cannot read (a folder, zip or egg that may hold any project)"
TARBALL_UNREAD = (
    "is in a tarball the index could not read: no digest, not a gzipped tar, past its bounds, or "
    "written so that npm's tar would read it otherwise"
)
PYTHON_FIELD = "Requires-Dist"
# What an sdist's build needs, which the installer fetches before it builds (pyproject.toml): judged
# as its Requires-Dist are, and an sdist, or its pyproject.toml, that cannot be read is refused
# (fail closed).
BUILD_FIELD = "build-system.requires"
BUILD_UNREAD = "is in an sdist or a pyproject.toml the index could not read, so what its build fetches is not known"
FETCHED_THROUGH_THE_INDEX = ("registry", "alias")


class Requires(NamedTuple):
    """What a Python version declares (its Requires-Dist strings), the other projects its wheel
    was found to carry (`IN_WHEEL`), and what its sdist's build requires (`BUILD_FIELD`)."""

    requires: list[str]
    carried: tuple[str, ...] | list[str] = ()
    unjudged: tuple[str, ...] | list[str] = ()  # what the wheel adds to sys.path, unread: refused
    build: tuple[str, ...] | list[str] = ()
    build_unread: tuple[str, ...] | list[str] = ()  # why the sdist or its pyproject.toml was not read: refused


@dataclass(frozen=True)
class Declared:
    """One declared dependency that is not a registry package, and its verdict."""

    field: str  # where the version declares it: an npm manifest field, or Requires-Dist
    spec: Spec
    verdict: Verdict


def declared_specs(language: str, metadata: Any) -> list[tuple[str, Spec]]:
    """Every dependency a version declares, as the spec a command line would carry: npm
    `name@<spec>` from the manifest's fields, python each Requires-Dist string. Environment
    markers are not evaluated: the index knows neither the installer's Python and platform nor
    the extras asked for, so a dependency is judged whatever its marker says."""
    return list(each_declared(language, metadata))


def each_declared(language: str, metadata: Any) -> Iterator[tuple[str, Spec]]:
    """`declared_specs` one at a time, each parsed when it is reached: a reader that has what it
    needs of a version (its first refusal) parses none of the rest."""
    if language == "python":
        said = metadata if isinstance(metadata, Requires) else Requires(metadata)
        yield from ((PYTHON_FIELD, _spec("python", text)) for text in said.requires)
        yield from ((BUILD_FIELD, _spec("python", text)) for text in said.build)
        yield from ((BUILD_FIELD, _unreadable("python", why, BUILD_UNREAD)) for why in said.build_unread)
        yield from ((IN_WHEEL, _spec("python", name)) for name in said.carried)
        yield from ((IN_WHEEL, _unreadable("python", why, WHEEL_UNREAD)) for why in said.unjudged)
        return
    for field in NPM_FIELDS:
        dependencies = metadata.get(field) if isinstance(metadata, dict) else None
        if dependencies is None:
            continue
        if not isinstance(dependencies, dict):
            yield field, _unreadable("node", f"{field}: {dependencies!r}", "not a map of names to specs")
            continue
        for name, value in dependencies.items():
            if isinstance(value, str):
                yield field, _spec("node", f"{name}@{value}")
            else:
                yield field, _unreadable("node", f"{name}@{value!r}", "its spec is not a string")
    if isinstance(metadata, dict):
        yield from _bundled(metadata)


def _bundled(manifest: dict[str, Any]) -> Iterator[tuple[str, Spec]]:
    for field in BUNDLED_FIELDS:
        value = manifest.get(field)
        if field == IN_TARBALL and field in manifest and value is None:
            yield field, _unreadable("node", "its tarball", TARBALL_UNREAD)
            continue
        if value is None or value is False:
            continue
        names = list(manifest.get("dependencies") or {}) if value is True else value
        if not isinstance(names, list):
            yield field, _unreadable("node", f"{field}: {value!r}", "not a list of names")
            continue
        yield from ((field, _spec("node", name)) for name in names)


def _spec(language: str, text: object) -> Spec:
    if not isinstance(text, str):
        return _unreadable(language, repr(text), "not a string")
    if len(text) > MAX_TEXT:
        return _unreadable(language, text[:MAX_TEXT], f"longer than {MAX_TEXT} characters")
    return parse(language, text)


def _unreadable(language: str, text: str, why: str) -> Spec:
    return make_spec(language, text[:MAX_TEXT], ("invalid", None, f"a declared dependency {why}"))


def judge_declared(rules: LanguageRules, declared: Iterable[tuple[str, Spec]], workspace: str) -> list[Declared]:
    """Each declared dependency the index does not fetch itself, with its command-line verdict."""
    return list(judging(rules, declared, workspace))


def judging(rules: LanguageRules, declared: Iterable[tuple[str, Spec]], workspace: str) -> Iterator[Declared]:
    """`judge_declared` one at a time, as `declared` yields them."""
    for field, spec in declared:
        if judged_here(field, spec):
            yield Declared(field, spec, judge(rules, spec, workspace))


def judged_here(field: str, spec: Spec) -> bool:
    """Whether a declared dependency is judged where it is declared: the client fetches it
    elsewhere, or it comes inside the version's own files (the client fetches a registry
    requirement through the index, which judges it then)."""
    return spec.kind not in FETCHED_THROUGH_THE_INDEX or field in BUNDLED_FIELDS


def what_may_hide(requires: Requires) -> Requires:
    """What of a Python version's declarations may hide it under some policy: its Requires-Dist
    and build requirements less the registry requirements, and all it carries or leaves unread."""

    def kept(field: str, texts: Iterable[str]) -> list[str]:
        return [text for text in texts if judged_here(field, _spec("python", text))]

    return Requires(
        kept(PYTHON_FIELD, requires.requires),
        tuple(requires.carried),
        tuple(requires.unjudged),
        tuple(kept(BUILD_FIELD, requires.build)),
        tuple(requires.build_unread),
    )


def merged(*found: Requires) -> Requires:
    """What several files of one version declare, together (each item once, in order)."""

    def joined(field: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(item for r in found for item in getattr(r, field)))

    return Requires(
        list(joined("requires")), joined("carried"), joined("unjudged"), joined("build"), joined("build_unread")
    )


def version_label(language: str, name: str, version: str) -> str:
    """A version as its language writes it: `alpha@1.1.0` (npm), `alpha==1.1` (python)."""
    return f"{name}=={version}" if language == "python" else f"{name}@{version}"


def declared_record(
    found: Declared,
    label: str,
    policy_version: int,
    context: dict[str, Any] | None,
    request: str,
    run: str | None,
    file: str | None,
    version: str,
    token: str | None = None,
) -> DecisionRecord:
    """The decision the index records for one declared dependency of one version: the spec,
    kind, reason and verdict are the dependency's; `declared_by` names the version, and
    `package_version` its number. A refused one hides that version, which is not a denial of
    the project."""
    made = DecisionRecord.for_spec(found.spec, found.verdict, policy_version, context)
    said = f": {found.spec.detail}" if found.spec.detail else ""
    detail = f"{label} declares {found.spec.text} in {found.field} ({found.spec.kind}){said}"
    params = None
    if not found.verdict.allowed:  # the dependency's own refusal is rendered in the version's message
        params = {**(found.verdict.params or {}), "field": found.field}
        if found.spec.detail:
            params["spec_detail"] = found.spec.detail
    made = replace(made, detail=detail, params=params, declared_by=label)
    return made.fetched(request, run, file, version, token)
