"""A small npm registry for tests, in Python, served on 127.0.0.1.

Real tarballs (tarfile, `package/package.json`) with real `integrity` (sha512) and `shasum`
(sha1); full packuments and abbreviated ones (`application/vnd.npm.install-v1+json`) by
`Accept`; `time`, `dist-tags`, `hasInstallScript`, registry `signatures` and `/-/npm/v1/keys`;
scoped names as `@scope%2fname` and `@scope/name`. Every request is logged.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote

from tests.support.fixture_server import FixtureServer

ABBREVIATED = "application/vnd.npm.install-v1+json"
KEYS = {
    "keys": [
        {
            "expires": None,
            "keyid": "SHA256:tests-key",
            "keytype": "ecdsa-sha2-nistp256",
            "scheme": "ecdsa-sha2-nistp256",
            "key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEtests",
        }
    ]
}


@dataclass
class Release:
    name: str
    version: str
    dependencies: dict = field(default_factory=dict)
    scripts: dict = field(default_factory=dict)
    published: str = "2026-01-02T03:04:05.000Z"
    tarball_host: str | None = None  # serve the tarball from another host name
    # npm 7+ installs peers (unless peerDependenciesMeta marks them optional) and optional ones
    peer_dependencies: dict = field(default_factory=dict)
    optional_dependencies: dict = field(default_factory=dict)
    peer_meta: dict = field(default_factory=dict)
    bundled: tuple = ()  # bundleDependencies: names its manifest says its tarball carries
    tarball_name: str | None = None  # a tarball not named `<name>-<version>.tgz` (registries allow it)
    digests: bool = True  # its manifest gives `integrity` and `shasum` (else the index cannot read its tarball)
    # scripts its tarball's package.json runs that the packument does not say ("manifest confusion":
    # the registry does not hold a publisher's tarball to the packument's word)
    unsaid_scripts: dict = field(default_factory=dict)
    # packages its tarball carries under node_modules that neither its manifest nor the packument
    # declares: every client installs them from the tarball
    carried: tuple = ()
    carried_scripts: dict = field(default_factory=dict)  # each carried package's manifest's scripts
    carried_files: dict = field(default_factory=dict)  # files each carried package holds besides those

    def declared(self) -> dict:
        """The dependency fields of its manifest, those it declares only."""
        fields = {
            "dependencies": self.dependencies,
            "peerDependencies": self.peer_dependencies,
            "optionalDependencies": self.optional_dependencies,
            "peerDependenciesMeta": self.peer_meta,
            "bundleDependencies": list(self.bundled),
        }
        return {k: v for k, v in fields.items() if v or k == "dependencies"}

    @property
    def basename(self) -> str:
        return self.name.rsplit("/", 1)[-1]


def build_tarball(release: Release) -> bytes:
    manifest = {
        "name": release.name,
        "version": release.version,
        "main": "index.js",
        **release.declared(),
        "scripts": {**release.scripts, **release.unsaid_scripts},
    }
    members = {
        "package/package.json": json.dumps(manifest, indent=2).encode(),
        "package/index.js": f"module.exports = {json.dumps(release.version)};\n".encode(),
    }
    for name in release.carried:
        carried = {"name": name, "version": "9.9.9", "scripts": release.carried_scripts}
        members[f"package/node_modules/{name}/package.json"] = json.dumps(carried).encode()
        members[f"package/node_modules/{name}/index.js"] = b"module.exports = 'carried';\n"
        for path, data in release.carried_files.items():
            members[f"package/node_modules/{name}/{path}"] = data
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, data in members.items():
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode = len(data), 1767323045, 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


# alpha 0.9.0, older and without beta, is what a resolver refused beta could fall back to.
DEFAULT_RELEASES = (
    Release("alpha", "0.9.0"),
    Release("alpha", "1.0.0", dependencies={"beta": "^1.0.0"}),
    Release("beta", "1.0.0"),
    Release("beta", "1.2.0", scripts={"install": "node -e 0"}),
    Release("@scope/gamma", "0.1.0"),
    Release("@scope/gamma", "0.2.0-rc.1"),
)


class NpmUpstream(FixtureServer):
    def __init__(self, releases=DEFAULT_RELEASES):
        self.releases: dict[str, dict[str, Release]] = {}
        self.tarballs: dict[str, bytes] = {}
        # name -> a change made to its packument, either shape, as it is sent (an upstream answering nonsense)
        self.edits: dict[str, Callable[[dict], None]] = {}
        super().__init__(other_host=any(r.tarball_host for r in releases))
        for release in releases:
            self.add(release)
        self.start()

    def add(self, release: Release) -> None:
        self.releases.setdefault(release.name, {})[release.version] = release
        self.tarballs[self.tarball_path(release)] = build_tarball(release)

    def tarball_path(self, release: Release) -> str:
        return f"/{release.name}/-/{release.tarball_name or f'{release.basename}-{release.version}.tgz'}"

    def tarball_url(self, release: Release) -> str:
        netloc = f"{release.tarball_host}:{self.other_port}" if release.tarball_host else f"127.0.0.1:{self.port}"
        return f"http://{netloc}{self.tarball_path(release)}"

    def dist(self, release: Release) -> dict:
        data = self.tarballs[self.tarball_path(release)]
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
        digests = {"shasum": hashlib.sha1(data).hexdigest(), "integrity": integrity} if release.digests else {}
        return {
            "tarball": self.tarball_url(release),
            **digests,
            "fileCount": 2,
            "unpackedSize": len(data),
            "signatures": [{"keyid": KEYS["keys"][0]["keyid"], "sig": "MEUCIQtests"}],
        }

    def packument(self, name: str, abbreviated: bool) -> dict:
        releases = self.releases[name]
        stable = [v for v in releases if "-" not in v]
        latest = max(stable or releases, key=_semver_key)
        versions = {}
        for version, release in releases.items():
            manifest = {
                "name": name,
                "version": version,
                **release.declared(),
                "dist": self.dist(release),
            }
            if any(release.scripts.get(s) for s in ("preinstall", "install", "postinstall")):
                manifest["hasInstallScript"] = True  # as the registry sets it: in both shapes
            if not abbreviated:
                manifest.update(
                    {"description": f"{name} for tests", "scripts": release.scripts, "_id": f"{name}@{version}"}
                )
            versions[version] = manifest
        document = {"name": name, "dist-tags": {"latest": latest}, "versions": versions}
        times = {v: r.published for v, r in releases.items()}
        if abbreviated:
            document["modified"] = max(times.values())
        else:
            document.update(
                {
                    "_id": name,
                    "description": f"{name} for tests",
                    "time": {"created": min(times.values()), "modified": max(times.values()), **times},
                }
            )
        return document

    def respond(self, raw_path: str, accept: str) -> tuple[int, str, bytes]:
        path = unquote(raw_path.split("?")[0])
        if path == "/-/npm/v1/keys":
            return 200, "application/json", json.dumps(KEYS).encode()
        if path in self.tarballs:
            return 200, "application/octet-stream", self.tarballs[path]
        name = path.lstrip("/")
        if name in self.releases:
            abbreviated = accept.startswith(ABBREVIATED)
            media = ABBREVIATED if abbreviated else "application/json"
            document = self.packument(name, abbreviated)
            self.edits.get(name, lambda _: None)(document)
            return 200, media, json.dumps(document).encode()
        return 404, "application/json", b'{"error":"Not found"}'


def _semver_key(version: str):
    core, _, pre = version.partition("-")
    numbers = tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.]", core.split("+")[0]))
    return numbers, pre == "", pre
