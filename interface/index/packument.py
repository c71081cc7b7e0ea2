"""npm packuments as the proxy answers them: tarballs rewritten, or no installable version.

Everything else npm relies on passes through untouched: `time` and `dist-tags` (but for the
versions not offered: their times go, their tags move to a version offered), `hasInstallScript`,
`dist.integrity`, `dist.shasum` and `dist.signatures` (the bytes are not changed, so they stay
true). A denied project keeps its version numbers under `policyRestrictions`, with stub
manifests and no tarball: npm then fails with `E403 ... due to policy violations: <message>`
instead of "no matching version".

An upstream packument's shape is checked as it is read (`read`), once, so that every later use
may rely on it: a manifest that is not an object, or names no tarball, is only a version not
offered, but `versions`, `dist-tags` or `time` of another shape, or a tarball URL that does not
parse, makes it the upstream's nonsense (`PackumentError`, a 502).
"""

from __future__ import annotations

from collections.abc import Callable

from application.store.jsontext import loads
from domain.specs.node_ranges import repoint
from interface.index.url_parts import resolved
from interface.problems import status_line_text

ABBREVIATED = "application/vnd.npm.install-v1+json"
MAX_REASONS = 3  # reasons for hidden versions told in one packument's policyRestrictions


class PackumentError(ValueError):
    """Upstream sent something that is not a packument (the message says what, after "is")."""


def read(body: bytes) -> dict:
    """An upstream packument: an object naming its package, whose `versions` and `time` are objects, whose
    `dist-tags` name versions by strings, and whose tarball URLs the index can read."""
    try:
        document = loads(body)  # json.loads's answers, through orjson where it reads the same
    except (ValueError, RecursionError):
        raise PackumentError("is not JSON") from None
    if not isinstance(document, dict):
        raise PackumentError("is not a packument")
    for key in ("versions", "dist-tags", "time"):
        if not isinstance(document.get(key, {}), dict):
            raise PackumentError(f"is not a packument: its {key} is not an object")
    if not isinstance(document.get("name"), str) or "versions" not in document:
        raise PackumentError("is not a packument: it names no package or holds no versions")
    if not all(isinstance(m, dict) for m in document["versions"].values()):
        raise PackumentError("is not a packument: a version's manifest is not an object")
    if not all(isinstance(v, str) for v in document.get("dist-tags", {}).values()):
        raise PackumentError("is not a packument: a dist-tag names no version")
    for number, manifest in manifests(document).items():
        dist = manifest.get("dist")
        url = dist.get("tarball") if isinstance(dist, dict) else None
        if isinstance(url, str) and resolved(url) is None:
            raise PackumentError(f"is not a packument: the tarball URL of {number} is no URL")
    return document


def manifests(packument: dict) -> dict:
    """{version: manifest} of every version that has a manifest to read."""
    return {n: m for n, m in (packument.get("versions") or {}).items() if isinstance(m, dict)}


def rewrite(packument: dict, ours: Callable[[str], str | None], hidden: dict[str, str] | None = None) -> dict:
    """Point every version's tarball at the service; versions `ours` refuses are removed, and so
    are the `hidden` ones ({version: why}), which npm is told about in `policyRestrictions`: a
    client that asks for exactly such a version then fails with the reason (E403) instead of
    "no matching version"."""
    hidden = hidden or {}
    versions = {}
    for number, manifest in (packument.get("versions") or {}).items():
        if number in hidden:
            continue
        dist = manifest.get("dist") if isinstance(manifest, dict) else None
        url = ours(dist["tarball"]) if isinstance(dist, dict) and isinstance(dist.get("tarball"), str) else None
        if url is not None:
            versions[number] = {**manifest, "dist": {**dist, "tarball": url}}
    removed = set(packument.get("versions") or {}) - set(versions)
    answer = {**packument, "versions": versions}
    if removed:
        answer["dist-tags"] = repoint(packument.get("dist-tags") or {}, versions)
        if "time" in packument:  # no time for a version not offered
            answer["time"] = {k: v for k, v in packument["time"].items() if k not in removed}
    if hidden and "policyRestrictions" not in packument:
        reasons = list(dict.fromkeys(hidden.values()))
        more = f" (and {len(reasons) - MAX_REASONS} other reasons)" if len(reasons) > MAX_REASONS else ""
        answer["policyRestrictions"] = {
            "message": "\n".join(reasons[:MAX_REASONS]) + more,
            "versions": {n: {"name": packument.get("name"), "version": n} for n in hidden},
        }
    return answer


def restricted(packument: dict, name: str, message: str) -> dict:
    """No installable version: the numbers npm may pick, each restricted by the policy."""
    numbers = list((packument.get("versions") or {}).keys())
    stubs = {number: {"name": name, "version": number} for number in numbers}
    # dist-tags stay: `npm install x` picks `latest`, which must be a restricted version to get E403.
    answer = {
        "name": name,
        "dist-tags": packument.get("dist-tags") or {},
        "versions": {},
        "policyRestrictions": {"message": message, "versions": stubs},
    }
    if "time" in packument:
        answer["time"] = packument["time"]
    if "modified" in packument:
        answer["modified"] = packument["modified"]
    return answer


def notice(message: str) -> str:
    """The `npm-notice` header: HTTP headers are Latin-1, and npm prints this one verbatim."""
    return status_line_text(message)
