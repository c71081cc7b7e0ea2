"""The facts the index reads of a version from upstream's metadata, and the packument it answers
when versions are hidden."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from application.index import facts
from interface.index import packument

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-01-02T03:04:05.000000Z", WHEN),
        ("2026-01-02T03:04:05Z", WHEN),
        ("2026-01-02T03:04:05.000Z", WHEN),
        ("2026-01-02T04:04:05+01:00", WHEN),
        ("2026-01-02T03:04:05", WHEN),  # no zone: UTC
        (None, None),
        ("", None),
        ("yesterday", None),
        (1767323045, None),
    ],
)
def test_an_upload_time_is_read_or_unknown(text, expected):
    assert facts.instant(text) == expected


def test_a_pypi_file_says_its_upload_time_and_whether_it_is_a_source_distribution():
    wheel = facts.python_file({"filename": "a-1.0-py3-none-any.whl", "upload-time": "2026-01-02T03:04:05Z"}, "1.0")
    assert (wheel.version, wheel.uploaded_at, wheel.sdist, wheel.install_scripts) == ("1.0", WHEN, False, None)
    sdist = facts.python_file({"filename": "a-1.0.tar.gz"}, "1.0")  # an HTML page: no upload time
    assert (sdist.uploaded_at, sdist.sdist) == (None, True)


@pytest.mark.parametrize(
    "manifest, scripts",
    [
        ({"scripts": {"postinstall": "node x.js"}}, True),
        ({"scripts": {"preinstall": "x"}}, True),
        ({"scripts": {"test": "jest", "install": ""}}, False),
        ({"hasInstallScript": True}, True),  # all the abbreviated packument says
        ({"scripts": "install"}, False),
        ({}, False),
    ],
)
def test_an_npm_version_declares_install_scripts_in_its_manifest_or_by_the_registrys_flag(manifest, scripts):
    found = facts.npm_version("1.0.0", manifest, {"1.0.0": "2026-01-02T03:04:05.000Z"})
    assert (found.install_scripts, found.uploaded_at, found.sdist) == (scripts, WHEN, False)
    assert facts.npm_version("1.0.0", manifest, None).uploaded_at is None  # no `time`: not known


def test_a_packument_without_its_hidden_versions_moves_latest_and_drops_their_times():
    def version(number: str) -> dict:
        return {"name": "x", "version": number, "dist": {"tarball": f"https://r/x/-/x-{number}.tgz"}}

    document = {
        "name": "x",
        "dist-tags": {"latest": "2.0.0", "next": "2.0.0"},
        "versions": {n: version(n) for n in ("1.0.0", "1.1.0", "2.0.0")},
        "time": {"created": "c", "modified": "m", "1.0.0": "a", "1.1.0": "b", "2.0.0": "d"},
    }
    answer = packument.rewrite(document, lambda url: url, {"2.0.0": "x@2.0.0 is too new"})
    assert list(answer["versions"]) == ["1.0.0", "1.1.0"] and answer["dist-tags"] == {"latest": "1.1.0"}
    assert answer["time"] == {"created": "c", "modified": "m", "1.0.0": "a", "1.1.0": "b"}
    assert answer["policyRestrictions"]["message"] == "x@2.0.0 is too new"
    assert packument.rewrite(document, lambda url: url)["time"] == document["time"]


def test_the_gate_says_hidden_for_every_version_refusal_of_the_index():
    # The gate is standard library only (copied alone into sandboxes): it spells the reasons itself.
    from application.index.gate import VERSION_REFUSALS
    from interface.gate import HIDDEN_VERSIONS

    assert set(HIDDEN_VERSIONS) == set(VERSION_REFUSALS)
