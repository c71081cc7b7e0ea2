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
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

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

    @property
    def basename(self) -> str:
        return self.name.rsplit("/", 1)[-1]


def build_tarball(release: Release) -> bytes:
    manifest = {
        "name": release.name,
        "version": release.version,
        "main": "index.js",
        "dependencies": release.dependencies,
        "scripts": release.scripts,
    }
    members = {
        "package/package.json": json.dumps(manifest, indent=2).encode(),
        "package/index.js": f"module.exports = {json.dumps(release.version)};\n".encode(),
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, data in members.items():
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode = len(data), 1767323045, 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


DEFAULT_RELEASES = (
    Release("alpha", "1.0.0", dependencies={"beta": "^1.0.0"}),
    Release("beta", "1.0.0"),
    Release("beta", "1.2.0", scripts={"install": "node -e 0"}),
    Release("@scope/gamma", "0.1.0"),
    Release("@scope/gamma", "0.2.0-rc.1"),
)


OTHER_HOST = "127.0.0.2"  # another loopback address: a second tarball host for `tarball_host` releases


class NpmUpstream:
    def __init__(self, releases=DEFAULT_RELEASES):
        self.releases: dict[str, dict[str, Release]] = {}
        self.tarballs: dict[str, bytes] = {}
        self.requests: list[tuple[str, str, dict]] = []
        self.outage = False
        self._servers = [ThreadingHTTPServer(("127.0.0.1", 0), self._handler())]
        if any(r.tarball_host for r in releases):
            self._servers.append(ThreadingHTTPServer((OTHER_HOST, 0), self._handler()))
        self.port, self.other_port = self._servers[0].server_port, self._servers[-1].server_port
        self.url = f"http://127.0.0.1:{self.port}"
        for release in releases:
            self.add(release)
        for server in self._servers:
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def add(self, release: Release) -> None:
        self.releases.setdefault(release.name, {})[release.version] = release
        self.tarballs[self.tarball_path(release)] = build_tarball(release)

    def close(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()

    def tarball_path(self, release: Release) -> str:
        return f"/{release.name}/-/{release.basename}-{release.version}.tgz"

    def tarball_url(self, release: Release) -> str:
        netloc = f"{release.tarball_host}:{self.other_port}" if release.tarball_host else f"127.0.0.1:{self.port}"
        return f"http://{netloc}{self.tarball_path(release)}"

    def hits(self, path_part: str) -> int:
        return sum(1 for _, path, _ in self.requests if path_part in path)

    def dist(self, release: Release) -> dict:
        data = self.tarballs[self.tarball_path(release)]
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
        return {
            "tarball": self.tarball_url(release),
            "shasum": hashlib.sha1(data).hexdigest(),
            "integrity": integrity,
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
                "dependencies": release.dependencies,
                "dist": self.dist(release),
            }
            if release.scripts.get("install") or release.scripts.get("preinstall"):
                manifest["hasInstallScript"] = True
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

    def _handler(self):
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.do_GET(head=True)

            def do_GET(self, head=False):
                upstream.requests.append((self.command, self.path, dict(self.headers)))
                if upstream.outage:
                    return self._send(503, "text/plain", b"down", head)
                self._send(*upstream.respond(self.path, self.headers.get("Accept", "")), head=head)

            def _send(self, status, media, body, head=False):
                self.send_response(status)
                self.send_header("Content-Type", media)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

        return Handler

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
            return 200, media, json.dumps(self.packument(name, abbreviated)).encode()
        return 404, "application/json", b'{"error":"Not found"}'


def _semver_key(version: str):
    core, _, pre = version.partition("-")
    numbers = tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.]", core.split("+")[0]))
    return numbers, pre == "", pre
