"""What an npm tarball's own manifests say about install-time code, read as npm unpacks it."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from application.index import facts


def tarball(members: dict[str, bytes], mode: str = "w:gz") -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for path, data in members.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


def manifest(**scripts: str) -> bytes:
    return json.dumps({"name": "x", "version": "1.0.0", "scripts": scripts}).encode()


@pytest.mark.parametrize(
    ("members", "says"),
    [
        ({"package/package.json": manifest()}, False),
        ({"package/package.json": manifest(test="jest", prepare="tsc")}, False),  # not run by an install
        ({"package/package.json": manifest(postinstall="node evil.js")}, True),
        ({"package/package.json": manifest(preinstall="x")}, True),
        ({"anything/package.json": manifest(install="x")}, True),  # npm strips whatever the root is called
        ({"./package/package.json": manifest(install="x")}, True),
        ({"package/package.json": manifest(), "package/binding.gyp": b"{}"}, True),  # node-gyp rebuild
        ({"package/package.json": manifest(), "package/lib/package.json": manifest(install="x")}, False),
        # two manifests at the root: extracted in order, the later one is what npm reads
        ({"package/package.json": manifest(), "package//package.json": manifest(postinstall="x")}, True),
        ({"package/index.js": b"1"}, None),  # no manifest: not known
        ({"package/package.json": b"not json"}, None),
    ],
)
def test_the_tarballs_own_manifest_decides(members, says):
    assert facts.tarball_install_scripts(tarball(members)) is says


def test_what_is_not_a_gzipped_tar_or_unpacks_past_the_bound_is_not_known(monkeypatch):
    assert facts.tarball_install_scripts(io.BytesIO(b"not a tarball")) is None
    assert facts.tarball_install_scripts(tarball({"package/package.json": manifest()}, mode="w")) is None
    monkeypatch.setattr(facts, "MAX_UNPACKED_BYTES", 10)
    assert facts.tarball_install_scripts(tarball({"package/package.json": manifest()})) is None
