"""What an npm tarball holds, read as npm unpacks it: install-time code by its own manifests, and
the packages it carries under node_modules."""

from __future__ import annotations

import gzip
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


def scripts(file) -> bool | None:
    """Whether the tarball runs install-time code (None: not known, as an unreadable one)."""
    contents = facts.tarball_contents(file)
    return contents.install_scripts if contents is not None else None


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
        ({"package/package.json": b"[" * 200_000 + b"]" * 200_000}, None),  # past the parser's depth
    ],
)
def test_the_tarballs_own_manifest_decides(members, says):
    assert scripts(tarball(members)) is says


def test_what_is_not_a_gzipped_tar_or_unpacks_past_the_bound_is_not_known(monkeypatch):
    assert scripts(io.BytesIO(b"not a tarball")) is None
    assert scripts(tarball({"package/package.json": manifest()}, mode="w")) is None
    monkeypatch.setattr(facts, "MAX_UNPACKED_BYTES", 10)
    assert scripts(tarball({"package/package.json": manifest()})) is None


def test_long_names_and_pax_paths_name_the_member_as_npm_reads_them():
    long = "package/" + "d/" * 60 + "x.js"  # past ustar's 100 bytes: a long-name or pax header
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz", format=fmt) as archive:
            for path, data in ((long, b"1"), ("package/package.json", manifest(install="x"))):
                info = tarfile.TarInfo(path)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        buffer.seek(0)
        assert scripts(buffer) is True, fmt
    pax = tarfile.TarInfo("package/other.txt")  # a pax path puts the manifest at the root
    pax.pax_headers = {"path": "package/package.json"}
    data = manifest(postinstall="x")
    pax.size = len(data)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(pax, io.BytesIO(data))
    buffer.seek(0)
    assert scripts(buffer) is True


def test_a_link_in_the_manifests_place_and_an_archive_without_end_blocks():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        link = tarfile.TarInfo("package/package.json")
        link.type, link.linkname = tarfile.SYMTYPE, "../../elsewhere.json"
        archive.addfile(link)
    buffer.seek(0)
    assert scripts(buffer) is None
    plain = io.BytesIO()
    with tarfile.open(fileobj=plain, mode="w") as archive:
        info = tarfile.TarInfo("package/package.json")
        body = manifest()
        info.size = len(body)
        archive.addfile(info, io.BytesIO(body))
    unended = plain.getvalue()[: 512 + 512 * (-(-len(body) // 512))]  # no end-of-archive blocks
    assert scripts(io.BytesIO(gzip.compress(unended))) is False


def test_what_a_hostile_tarball_claims_is_bounded_and_not_known(monkeypatch):
    """A 500 MB long name in a 500 KB tarball held a gigabyte; a million empty members took a
    minute; a deeply nested manifest raised past every handler."""
    huge = bytearray(512)
    huge[0:13] = b"././@LongLink"
    huge[124:136] = b"%011o\0" % (500 * 1024 * 1024)
    huge[156:157] = b"L"
    assert scripts(io.BytesIO(gzip.compress(bytes(huge) + bytes(4096)))) is None
    monkeypatch.setattr(facts, "MAX_MEMBERS", 1000)
    many = {f"package/f{i}": b"" for i in range(1000)} | {"package/package.json": manifest()}
    assert scripts(tarball(many)) is None


@pytest.mark.parametrize(
    ("paths", "carried"),
    [
        (["package/index.js"], ()),
        (["package/node_modules/beta/index.js"], ("beta",)),
        (
            ["package/node_modules/@scope/gamma/package.json", "package/node_modules/alpha/x.js"],
            ("@scope/gamma", "alpha"),
        ),
        (["package/node_modules/a/node_modules/b/package.json"], ("a", "b")),  # nested: both installed
        (["package/node_modules/.bin/x", "package/node_modules/.package-lock.json"], ()),
        (["package/node_modules/loose.js", "package/node_modules/@scope/loose.js"], ()),  # files, not folders
        (["package/lib/node_modules/deep/index.js"], ("deep",)),  # any depth
        (["node_modules/beta/index.js"], ()),  # the root folder itself is stripped, as npm unpacks
    ],
)
def test_the_packages_a_tarball_carries_under_node_modules(paths, carried):
    members = {"package/package.json": manifest(), **{path: b"1" for path in paths}}
    assert facts.tarball_contents(tarball(members)).bundled == carried


def test_a_folder_entry_under_node_modules_is_a_package_carried():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in ("package/node_modules/empty", "package/node_modules/@s/e"):
            folder = tarfile.TarInfo(path)
            folder.type = tarfile.DIRTYPE
            archive.addfile(folder)
    buffer.seek(0)
    assert facts.tarball_contents(buffer).bundled == ("@s/e", "empty")


def test_a_tarball_past_a_bound_or_not_a_gzipped_tar_is_not_known():
    assert facts.tarball_contents(io.BytesIO(b"not a tarball")) is None
    assert facts.tarball_contents(tarball({"package/node_modules/beta/x": b""}, mode="w")) is None
