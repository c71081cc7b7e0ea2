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
        ({"./package/package.json": manifest(install="x")}, None),  # not a clean path: readers differ, not read
        ({"package/package.json": manifest(), "package/binding.gyp": b"{}"}, True),  # node-gyp rebuild
        ({"package/package.json": manifest(), "package/lib/package.json": manifest(install="x")}, False),
        ({"package/package.json": manifest(), "package//package.json": manifest(postinstall="x")}, None),
        # a bundled package's scripts and binding.gyp run too (npm runs a declared bundled one's;
        # any package under node_modules counts, at any depth, scoped or not)
        ({"package/package.json": manifest(), "package/node_modules/h/package.json": manifest(install="x")}, True),
        (
            {"package/package.json": manifest(), "package/node_modules/@s/h/package.json": manifest(preinstall="x")},
            True,
        ),
        ({"package/package.json": manifest(), "package/node_modules/a/node_modules/h/binding.gyp": b"{}"}, True),
        ({"package/node_modules/h/package.json": manifest(postinstall="x"), "package/package.json": manifest()}, True),
        ({"package/package.json": manifest(), "package/node_modules/h/package.json": manifest(test="x")}, False),
        ({"package/package.json": manifest(), "package/node_modules/h/lib/package.json": manifest(install="x")}, False),
        ({"package/package.json": manifest(), "package/node_modules/h/package.json": b"not json"}, None),
        ({"package/node_modules/h/package.json": manifest()}, None),  # no root manifest: not known
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


def _raw(
    name: bytes,
    size: int = 0,
    kind: bytes = b"0",
    magic: bytes = b"ustar\x0000",
    prefix: bytes = b"",
    size_field: bytes | None = None,
    link: bytes = b"",
) -> bytes:
    """One tar header block, checksummed, written by hand (tarfile would not write what npm's tar reads)."""
    header = bytearray(512)
    header[0 : len(name)] = name
    header[124:136] = size_field if size_field is not None else b"%011o\0" % size
    header[157 : 157 + len(link)] = link
    header[156:157] = kind
    header[257:265] = magic
    header[345 : 345 + len(prefix)] = prefix
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header)


def _member(name: bytes, data: bytes = b"", **header) -> bytes:
    return _raw(name, len(data), **header) + data + bytes(-len(data) % 512)


def _gzipped(*members: bytes) -> io.BytesIO:
    return io.BytesIO(gzip.compress(b"".join(members) + bytes(1024)))


MANIFEST = _member(b"package/package.json", manifest())
BAD_SUM = _raw(b"package/x", 512)[:148] + b"0000000\0" + _raw(b"package/x", 512)[156:]


@pytest.mark.parametrize(
    "hiding",
    [
        # a header whose checksum is wrong: npm's tar skips it and reads its "body" as the next header
        _raw(b"package/x", 512)[:148]
        + b"0000000\0"
        + _raw(b"package/x", 512)[156:]
        + _raw(b"package/node_modules/evil/a"),
        # a pax record whose length is wrong: npm's tar ignores it, the right one before it names the member
        _member(b"pax", b"47 path=package/node_modules/evil/package.json\n5 path=package/safe.json\n", kind=b"x")
        + _member(b"package/safe.json"),
        # one zero block in the middle: npm's tar reads on past it
        bytes(512) + _member(b"package/node_modules/evil/index.js"),
        # a folder with a body: readers differ on skipping it
        _member(b"package/lib/", b"x" * 10, kind=b"5") + _member(b"package/node_modules/evil/index.js"),
        # a long name and a pax path that disagree on the next member's name
        _member(b"././@LongLink", b"package/a.js\0", kind=b"L")
        + _member(b"pax", b"47 path=package/node_modules/evil/package.json\n", kind=b"x")
        + _member(b"package/b.js"),
    ],
    ids=["bad checksum", "malformed pax record", "zero block inside", "folder with a body", "names that disagree"],
)
def test_what_npms_tar_would_read_otherwise_is_not_known(hiding):
    assert facts.tarball_contents(_gzipped(MANIFEST, hiding)) is None


def test_the_prefix_counts_only_in_a_posix_header_and_a_pax_size_is_the_members():
    gnu = _member(b"package/package.json", manifest(postinstall="x"), magic=b"ustar  \0", prefix=b"x")
    assert facts.tarball_contents(_gzipped(MANIFEST, gnu)).install_scripts is True  # GNU: no prefix, at the root
    posix = _member(b"package.json", manifest(postinstall="x"), prefix=b"package/lib")
    assert facts.tarball_contents(_gzipped(MANIFEST, posix)).install_scripts is False  # package/lib/package.json
    data = b"y" * 600  # the header says 0 bytes; the pax size, which npm's tar reads, says 600
    sized = _member(b"pax", b"12 size=600\n", kind=b"x") + _raw(b"package/data.bin") + data + bytes(-600 % 512)
    carried = _member(b"package/node_modules/evil/index.js")
    assert facts.tarball_contents(_gzipped(MANIFEST, sized, carried)).bundled == ("evil",)


def test_a_link_in_a_packages_place_under_node_modules_is_carried():
    link = _raw(b"package/node_modules/evil", kind=b"2")
    assert facts.tarball_contents(_gzipped(MANIFEST, link)).bundled == ("evil",)


def test_a_corrupt_gzip_stream_is_not_known():
    whole = bytearray(gzip.compress(MANIFEST + _member(b"package/index.js", b"x" * 5000) + bytes(1024)))
    whole[20:30] = b"\xff" * 10
    assert facts.tarball_contents(io.BytesIO(bytes(whole))) is None


def test_of_two_manifests_at_the_root_the_later_is_what_npm_reads():
    later = _member(b"package/package.json", manifest(postinstall="x"))
    assert facts.tarball_contents(_gzipped(MANIFEST, later)).install_scripts is True


@pytest.mark.parametrize(
    "hiding",
    [
        _member(b"./node_modules/evil/index.js"),  # npm strips `.`: node_modules/evil
        _member(b"//node_modules/evil/index.js"),
        _member(b"package/../node_modules/evil/index.js"),
        _member(b"package\\node_modules\\evil\\index.js"),
        _raw(b"package/x.js", size_field=b"0o4000\0\0\0\0\0\0"),  # int(..., 8) reads `0o`; npm's tar, 0
        _raw(b"package/x.js", link=b"elsewhere"),  # npm's tar skips a file with a link name
    ],
    ids=["dot root", "empty parts", "dot-dot", "backslashes", "0o size", "file with a link name"],
)
def test_a_member_npms_tar_places_otherwise_is_not_read(hiding):
    assert facts.tarball_contents(_gzipped(MANIFEST, hiding)) is None


@pytest.mark.parametrize(
    "hiding",
    [
        _member(b"old", b"47 path=package/node_modules/evil/package.json\n", kind=b"X"),  # old Solaris pax
        _member(b"package/n", b"package/node_modules/evil/package.json", kind=b"N"),  # old GNU long name
        _member(b"././@LongLink", b"x\0\n/node_modules/evil/package.json", kind=b"L"),  # npm's tar reads on past NUL
        _member(b"package/c:node_modules/evil/index.js"),  # npm's tar strips `c:` as a win32 drive
    ],
    ids=["X pax", "N long name", "NUL then newline", "drive letter"],
)
def test_a_header_npms_tar_reads_another_way_is_not_read(hiding):
    assert facts.tarball_contents(_gzipped(MANIFEST, hiding, _member(b"package/safe.txt"))) is None


def test_a_checksum_summed_signed_is_refused_as_npms_tar_refuses_it():
    header = bytearray(_raw("package/café.txt".encode()))
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(b - 256 if b > 127 else b for b in header)
    assert facts.tarball_contents(_gzipped(MANIFEST, bytes(header))) is None


def test_a_size_field_that_starts_with_a_nul_is_zero_as_npms_tar_reads_it():
    """Its "body" is then read as members, as npm's tar reads it: what it carries is seen."""
    carried = _member(b"package/node_modules/evil/index.js")
    empty = _raw(b"package/x.txt", size_field=b"\0\0\0\0" + b"%07o\0" % len(carried))
    assert facts.tarball_contents(_gzipped(MANIFEST, empty, carried)).bundled == ("evil",)


def test_a_prefix_of_130_bytes_with_times_after_it_reads_as_node_tar_writes_it():
    """node-tar's own writer (DefinitelyTyped's @types packages) keeps atime and ctime in the
    prefix field's last 24 bytes when its byte 475 is zero: the prefix is the first 130."""
    header = bytearray(_raw(b"package.json", len(manifest()), prefix=b"package"))
    header[476:500] = b"\x0015301700473\x0015301700473\x00"[:24]
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    data = manifest(postinstall="x")
    member = bytes(header[:124]) + b"%011o\0" % len(data) + bytes(header[136:])
    member = bytearray(member)
    member[148:156] = b" " * 8
    member[148:156] = b"%06o\0 " % sum(member)
    typed = bytes(member) + data + bytes(-len(data) % 512)
    assert facts.tarball_contents(_gzipped(MANIFEST, typed)).install_scripts is True  # package/package.json, later


def test_a_colon_deeper_in_a_path_and_a_binary_pax_value_are_read():
    deeper = _member(b"package/lib/c:foo.js")  # npm's tar strips a drive only at the path's root
    xattr = b"\xff\x00\x01"
    record = b" SCHILY.xattr.user.x=" + xattr + b"\n"
    length = len(record) + len(str(len(record) + 2))
    pax = _member(b"pax", str(length).encode() + record, kind=b"x") + _member(b"package/x.js")
    assert facts.tarball_contents(_gzipped(MANIFEST, deeper, pax)) == facts.Tarball(False, ())


def test_the_root_folders_own_entry_is_read_past():
    """`package/` as a member of its own (packers other than npm's write folder entries): it was
    read as a path of no parts, and the reader raised on it (a 500) instead of reading on."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        root = tarfile.TarInfo("package/")
        root.type = tarfile.DIRTYPE
        archive.addfile(root)
        data = manifest(install="x")
        info = tarfile.TarInfo("package/package.json")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    assert scripts(buffer) is True
