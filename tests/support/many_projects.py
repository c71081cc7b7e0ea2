"""An upstream PyPI that makes up any `p<n>` project page (24 files, ~6 KiB of JSON, unless told
otherwise): as many distinct pages as a test or a benchmark asks for, to fill what the index
keeps, or as large as PyPI's largest (a version a file, each on its own host path as PyPI keeps
them: `absolute`)."""

from __future__ import annotations

import json

from tests.support.fixture_server import FixtureServer

FILES_PER_PAGE = 24


class ManyProjects(FixtureServer):
    def __init__(self, files: int = FILES_PER_PAGE, absolute: bool = False):
        super().__init__()
        self.files, self.absolute = files, absolute
        self.start()

    def _url(self, filename: str, n: int) -> str:
        if self.absolute:  # PyPI's shape: a directory of its own per file, named by digests
            return f"{self.url}/packages/{n % 256:02x}/{n * 7 % 256:02x}/{n * 977 + 12345:060x}/{filename}"
        return f"../../files/{filename}"

    def respond(self, path: str, accept: str):
        name = path.strip("/").rsplit("/", 1)[-1]
        files = [
            {
                "filename": f"{name}-1.{n}-py3-none-any.whl",
                "url": self._url(f"{name}-1.{n}-py3-none-any.whl", n),
                "hashes": {"sha256": f"{n:064x}"},
                "requires-python": ">=3.8",
                "size": 1000 + n,
                "upload-time": "2026-01-02T03:04:05Z",
            }
            for n in range(self.files)
        ]
        body = {"meta": {"api-version": "1.1"}, "name": name, "files": files}
        return 200, "application/vnd.pypi.simple.v1+json", json.dumps(body).encode()


class ManyPackages(FixtureServer):
    """An upstream npm registry that makes up any package's abbreviated packument of `versions`
    versions (one dependency each, the tarballs on the registry's own host)."""

    def __init__(self, versions: int):
        super().__init__()
        self.versions = versions
        self.start()

    def respond(self, path: str, accept: str):
        name = path.strip("/").rsplit("/", 1)[-1]
        versions = {
            f"1.{n}.0": {
                "name": name,
                "version": f"1.{n}.0",
                "dependencies": {"left-pad": "^1.0.0"},
                "dist": {
                    "tarball": f"{self.url}/{name}/-/{name}-1.{n}.0.tgz",
                    "shasum": f"{n:040x}",
                    "integrity": "sha512-" + "A" * 86 + "==",
                },
            }
            for n in range(self.versions)
        }
        tags = {"latest": f"1.{self.versions - 1}.0"}
        body = {"name": name, "dist-tags": tags, "modified": "2026-01-02T03:04:05.000Z", "versions": versions}
        return 200, "application/vnd.npm.install-v1+json", json.dumps(body).encode()
