"""An upstream PyPI that makes up any `p<n>` project page (24 files, ~6 KiB of JSON): as many
distinct pages as a test or a benchmark asks for, to fill what the index keeps."""

from __future__ import annotations

import json

from tests.support.fixture_server import FixtureServer

FILES_PER_PAGE = 24


class ManyProjects(FixtureServer):
    def __init__(self):
        super().__init__()
        self.start()

    def respond(self, path: str, accept: str):
        name = path.strip("/").rsplit("/", 1)[-1]
        files = [
            {
                "filename": f"{name}-1.{n}-py3-none-any.whl",
                "url": f"../../files/{name}-1.{n}-py3-none-any.whl",
                "hashes": {"sha256": f"{n:064x}"},
                "requires-python": ">=3.8",
                "size": 1000 + n,
                "upload-time": "2026-01-02T03:04:05Z",
            }
            for n in range(FILES_PER_PAGE)
        ]
        body = {"meta": {"api-version": "1.1"}, "name": name, "files": files}
        return 200, "application/vnd.pypi.simple.v1+json", json.dumps(body).encode()
